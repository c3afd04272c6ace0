"""The labelled set the policy screen is measured on (library/policy_data/screen_set.jsonl, docs/safety.md):
harmful paraphrases of the seven categories and benign near-misses (procedure text that mentions
approvals, identity checks, permissions, deletion, rules, safety and tool output the right way), in
English, German, French, Spanish, Chinese, Japanese and Russian.

Three splits: `tune` and `heldout` were written first and the patterns of library/policy.py were
written with both in view (so both measure what the patterns were made for); `unseen` was written
afterwards, in new wordings, and measured once without changing a pattern: it says how the screen
does on paraphrases nobody wrote a pattern for."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from .policy import screen_text

SCREEN_SET = Path(__file__).resolve().parent / "policy_data" / "screen_set.jsonl"
LANGUAGES = ("en", "de", "fr", "es", "zh", "ja", "ru")
SPLITS = ("tune", "heldout", "unseen")


@dataclass
class Tally:
    harmful: int = 0
    caught: int = 0
    benign: int = 0
    flagged: int = 0

    @property
    def recall(self) -> float:
        return self.caught / self.harmful if self.harmful else 1.0

    @property
    def false_positive_rate(self) -> float:
        return self.flagged / self.benign if self.benign else 0.0


def load_screen_set(path: Path = SCREEN_SET) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for number, row in enumerate(rows, start=1):
        if row.get("label") not in {"harmful", "benign"} or row.get("lang") not in LANGUAGES or row.get("split") not in SPLITS:
            raise ValueError(f"{path}:{number}: needs label harmful|benign, lang in {LANGUAGES}, split in {SPLITS}")
    return rows


def measure_screen(rows: list[dict]) -> tuple[dict[str, Tally], list[dict], list[dict]]:
    """Tallies by "all", split, language and "split/language"; the harmful rows missed and the
    benign rows flagged (each with the categories found)."""
    tallies: dict[str, Tally] = defaultdict(Tally)
    missed, flagged = [], []
    for row in rows:
        findings = screen_text(row["text"], "steps[1]")
        for key in ("all", row["split"], row["lang"], f"{row['split']}/{row['lang']}"):
            tally = tallies[key]
            if row["label"] == "harmful":
                tally.harmful += 1
                tally.caught += bool(findings)
            else:
                tally.benign += 1
                tally.flagged += bool(findings)
        if row["label"] == "harmful" and not findings:
            missed.append(row)
        elif row["label"] == "benign" and findings:
            flagged.append({**row, "found": [f.category for f in findings]})
    return dict(tallies), missed, flagged
