"""The alternative to the policy screen's meaning layer that was measured and not shipped: a
character n-gram logistic regression trained on the labelled set (docs/safety.md).

Leave one split out: for each split of library/policy/data/screen_set.jsonl, a model trained on the
other splits judges it, so no text is judged by a model that saw it. Prints recall and false
positives per split and language at two thresholds, and how many of the project's real procedure
fields (library/policy/data/benign_procedures.jsonl) a model trained on the whole set flags.

    PYTHONPATH=clients/python:. .venv/bin/python bench/screen_ngram_cv.py

Needs scikit-learn (in the development venv; not a dependency of the app)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from library.policy.rules import normalise
from library.policy.screen_set import LANGUAGES, SCREEN_SET, SPLITS, load_screen_set

BENIGN = SCREEN_SET.parent / "benign_procedures.jsonl"


def fit(rows: list[dict]):
    vectoriser = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True)
    features = vectoriser.fit_transform([normalise(row["text"]) for row in rows])
    model = LogisticRegression(C=10, max_iter=2000, class_weight="balanced").fit(
        features, [row["label"] == "harmful" for row in rows]
    )
    return lambda texts: model.predict_proba(vectoriser.transform([normalise(text) for text in texts]))[:, 1]


def main() -> None:
    rows = load_screen_set()
    splits = [split for split in SPLITS if any(row["split"] == split for row in rows)]
    scores: dict[int, float] = {}
    for held in splits:
        train = [row for row in rows if row["split"] != held]
        test = [(index, row) for index, row in enumerate(rows) if row["split"] == held]
        for (index, _), score in zip(test, fit(train)([row["text"] for _, row in test])):
            scores[index] = score
    benign = [json.loads(line)["text"] for line in Path(BENIGN).read_text().splitlines() if line]
    whole = fit(rows)(benign)
    for threshold in (0.5, 0.7):
        tally: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        for index, row in enumerate(rows):
            flagged = scores[index] >= threshold
            for key in ("all", row["split"], row["lang"]):
                if row["label"] == "harmful":
                    tally[key][0] += 1
                    tally[key][1] += flagged
                else:
                    tally[key][2] += 1
                    tally[key][3] += flagged
        print(f"threshold {threshold}: real procedure fields flagged {(whole >= threshold).sum()}/{len(benign)}")
        for key in ("all", *splits, *LANGUAGES):
            harmful, caught, total, flagged = tally[key]
            print(
                f"  {key:8} recall {caught:>3}/{harmful:<3} {caught / harmful:.2f}   false positives {flagged:>3}/{total:<3} {flagged / total:.2f}"
            )


if __name__ == "__main__":
    main()
