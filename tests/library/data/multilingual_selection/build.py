"""Builds the multilingual selection set (README.md beside this file) from the English tasks and the
translations: `python tests/library/data/multilingual_selection/build.py`.

- airline.jsonl, retail.jsonl: the tau2 tasks chosen (translations/*.json name them) in English and
  the six languages, labelled as tests/library/data/tau2_selection/ labels the English task;
- demo.jsonl: the demo's tasks (source_demo.json), labelled with the demo's procedure;
- every line has `language`, `source` (the English task's id) and `split`: "heldout" for every third
  task of each domain in id order (the same tasks in every language), "tuning" for the others;
- then the second held-out set (translations/heldout2/*.json, README), appended after those lines
  with `"split": "heldout2"`, so that no earlier line changes.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
TAU2 = HERE.parent / "tau2_selection"
LANGUAGES = ("de", "fr", "es", "zh", "ja", "ru")


def _key(source_id: str) -> tuple[str, int]:
    domain, number = source_id.split("/")
    return domain, int(number)


def _translations(folder: Path) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Every language's translations in `folder` and the tasks they translate, in id order."""
    translations = {lang: json.loads((folder / f"{lang}.json").read_text()) for lang in LANGUAGES}
    chosen = sorted(translations["de"], key=_key)
    for lang, texts in translations.items():
        if sorted(texts, key=_key) != chosen:
            raise ValueError(f"{folder / lang}.json does not translate the same tasks as de.json")
    return translations, chosen


def build() -> dict[str, list[dict]]:
    translations, chosen = _translations(HERE / "translations")
    translations2, chosen2 = _translations(HERE / "translations" / "heldout2")
    if set(chosen) & set(chosen2):
        raise ValueError(f"translations/heldout2 repeats tasks of the set: {sorted(set(chosen) & set(chosen2))}")
    english: dict[str, dict] = {}
    for domain in ("airline", "retail"):
        for line in (TAU2 / f"{domain}.jsonl").read_text().splitlines():
            item = json.loads(line)
            if item["relevant"]:
                english[item["id"]] = {"task": item["task"], "relevant": item["relevant"]}
    english.update(json.loads((HERE / "source_demo.json").read_text()))
    files: dict[str, list[dict]] = {"airline": [], "retail": [], "demo": []}
    positions: dict[str, int] = {}
    sources = [(source, translations, None) for source in chosen]
    sources += [(source, translations2, "heldout2") for source in chosen2]
    for source, texts, fixed_split in sources:
        domain = source.split("/")[0]
        if fixed_split:
            split = fixed_split
        else:
            position = positions[domain] = positions.get(domain, -1) + 1
            split = "heldout" if position % 3 == 2 else "tuning"
        for lang in ("en", *LANGUAGES):
            task = english[source]["task"] if lang == "en" else texts[lang][source]
            files[domain].append(
                {
                    "id": f"{source}@{lang}",
                    "language": lang,
                    "split": split,
                    "source": source,
                    "task": task,
                    "relevant": english[source]["relevant"],
                }
            )
    return files


def write(files: dict[str, list[dict]], target: Path = HERE) -> None:
    for domain, lines in files.items():
        (target / f"{domain}.jsonl").write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))


if __name__ == "__main__":
    write(build())
