"""The labelled set the policy screen is measured on (library/policy/data/screen_set.jsonl, docs/safety.md):
harmful paraphrases and benign near-misses (procedure text that mentions approvals, identity checks,
permissions, deletion, rules, safety, tool output, sending data and secrets the right way), in
English, German, French, Spanish, Chinese, Japanese and Russian.

The splits, in the order they were written (docs/safety.md says what each measures):

- `tune`, `heldout`: written first; the patterns of library/policy/rules.py were written with both in view;
- `unseen`: new wordings, measured once on the patterns alone (2/49), then development data of the
  meaning layer (library/policy/concepts);
- `dev2`: written before the meaning layer's lexicons and measured once on their first version,
  then development data;
- `dev3`: written while the lexicons were tuned (development data from the start);
- `unseen2`: written blind by another engineer and first measured on the frozen gate;
- `dev4`: attack shapes by category, written per language while the lexicons were widened
  (development data from the start);
- `unseen3`: written blind by two more engineers (customer-service and coding procedures), measured
  on the gate frozen before and after `dev4`, and never tuned on: the held-out split (HELD_OUT), whose
  numbers measure the screen on other people's wording and are kept apart from the development
  splits' floors.

Splits after `unseen2` are files of their own in library/policy/data/splits/ (one per split and
language group), read after screen_set.jsonl.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from .rules import CATEGORIES, screen_text

SCREEN_SET = Path(__file__).resolve().parent / "data" / "screen_set.jsonl"
SPLIT_FILES = SCREEN_SET.parent / "splits"
LANGUAGES = ("en", "de", "fr", "es", "zh", "ja", "ru")
SPLITS = ("tune", "heldout", "unseen", "dev2", "dev3", "unseen2", "dev4", "unseen3")
# Splits kept for measuring: nobody tunes the screen on them (docs/safety.md).
HELD_OUT = ("unseen3",)
# The blind set's category names, mapped onto the screen's (only harmful/benign is scored; the
# category is kept so that coverage by category can be counted).
CATEGORY_ALIASES = {
    "override": "ignore_rules",
    "exfiltration": "exfiltrate_data",
    "secrets": "reveal_secrets",
    "privilege": "widen_permissions",
    "approval-bypass": "skip_approval",
    "safety-off": "override_safety",
    "destructive": "destructive_automation",
}


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


def load_screen_set(path: Path | None = None, *, split: str | None = None) -> list[dict]:
    """The rows of a JSON Lines file of {id, lang, label, category, split, text}; without a path, the
    whole set (screen_set.jsonl and the files of splits/). `split` names the split of a file whose
    rows have none (a set measured on its own); a blind set's category names are mapped onto the
    screen's."""
    if path is None:
        return [row for part in (SCREEN_SET, *sorted(SPLIT_FILES.glob("*.jsonl"))) for row in load_screen_set(part)]
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for number, row in enumerate(rows, start=1):
        if split and not row.get("split"):
            row["split"] = split
        row.setdefault("id", f"{row.get('split')}-{row.get('lang')}-{number:03d}")
        category = row.get("category") or ""
        row["category"] = CATEGORY_ALIASES.get(category, category) if row.get("label") == "harmful" else ""
        if (
            row.get("label") not in {"harmful", "benign"}
            or row.get("lang") not in LANGUAGES
            or row.get("split") not in SPLITS
        ):
            raise ValueError(f"{path}:{number}: needs label harmful|benign, lang in {LANGUAGES}, split in {SPLITS}")
        if row["label"] == "harmful" and row["category"] not in CATEGORIES:
            raise ValueError(f"{path}:{number}: category {category!r} is none of {CATEGORIES}")
    return rows


def measure_screen(rows: list[dict]) -> tuple[dict[str, Tally], list[dict], list[dict]]:
    """Tallies by "all", split, language and "split/language", and of the development splits (all but
    HELD_OUT) as "development" and "development/language"; the harmful rows missed and the benign
    rows flagged (each with the categories found)."""
    tallies: dict[str, Tally] = defaultdict(Tally)
    missed, flagged = [], []
    for row in rows:
        findings = screen_text(row["text"], "steps[1]")
        keys = ["all", row["split"], row["lang"], f"{row['split']}/{row['lang']}"]
        if row["split"] not in HELD_OUT:
            keys += ["development", f"development/{row['lang']}"]
        for key in keys:
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
