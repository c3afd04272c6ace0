"""Measures mixtures of the packaged models per route on the multilingual set (docs/selection.md,
"Selection in the customer's language", "What else was tried"): the semantic and step signals as
the weighted mean of several backends' calibrated cosines, one mixture for English tasks and one for
the others (terms.is_english), the ranker otherwise as configured. Uses the vectors that measure.py
cached (run it first for minilm, use-multilingual and e5-small):

    python tests/library/data/multilingual_selection/mixtures.py \
        --other use-multilingual=0.5,e5-small=0.5 [--english minilm=1] [--heldout]

Prints the tuning split's top-1 per language and their non-English mean, tau2 airline P@1 / MAP@10,
the paraphrases' top-1, covered given the right one, uncovered given one; with --heldout also the
held-out split and tau2 retail (look at them only for a mixture chosen on the tuning split).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[3]), str(HERE.parents[3] / "clients" / "python")]

import measure  # noqa: E402

from library.serving.selection_eval import load_export, query_metrics  # noqa: E402
from procmem_client import embeddings  # noqa: E402
from procmem_client.embedding_cache import EmbeddingCache  # noqa: E402
from procmem_client.ranking import Index, SelectionConfig  # noqa: E402
from procmem_client.terms import is_english  # noqa: E402

NAMES = ("minilm", "use-multilingual", "e5-small")


class Identity:
    """The mixture's vectors carry their calibration (a constant last dimension for an offset)."""

    name = model_id = "mixture"

    def calibrate(self, scores: np.ndarray) -> np.ndarray:
        return scores


def parse(text: str) -> dict[str, float]:
    weights = {name: float(value) for name, _, value in (item.partition("=") for item in text.split(","))}
    unknown = set(weights) - set(NAMES)
    if unknown:
        raise SystemExit(f"unknown backends {sorted(unknown)}: use {', '.join(NAMES)}")
    total = sum(weights.values())
    return {name: weight / total for name, weight in weights.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--english", default="minilm=1")
    parser.add_argument("--other", default="use-multilingual=1")
    parser.add_argument("--heldout", action="store_true")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/procmem-embedding-cache"))
    args = parser.parse_args()
    routes = {"en": parse(args.english), "other": parse(args.other)}
    backends = {name: embeddings.backend(name) for name in NAMES}
    disks = {name: measure.DiskCache(args.cache, backend) for name, backend in backends.items()}
    libraries = {name: load_export(path) for name, path in measure.LIBRARIES.items()}
    sets = {d: measure.load_lines(HERE / f"{d}.jsonl") for d in ("airline", "retail", "demo")}
    paraphrases = measure.load_lines(HERE / "paraphrases.jsonl")
    tau2 = {d: [q for q in measure.tau2_queries(d) if q["relevant"]] for d in ("airline", "retail")}
    texts = [q["task"] for qs in [*sets.values(), paraphrases, *tau2.values()] for q in qs]
    for records in libraries.values():
        texts += [r["appliesWhen"] for r in records] + [s for r in records for s in r["steps"]]
    for disk in disks.values():
        disk.ensure(texts)
        disk.save()

    def procedure_vector(text: str) -> np.ndarray:
        return np.concatenate([disks[n].get(text) for n in NAMES] + [np.ones(1, np.float32)]).astype(np.float32)

    def task_vector(text: str) -> np.ndarray:
        weights = routes["en" if is_english(text) else "other"]
        pieces, constant = [], 0.0
        for name in NAMES:
            backend, weight = backends[name], weights.get(name, 0.0)
            offset, scale = getattr(backend, "offset", 0.0), getattr(backend, "scale", 1.0)
            pieces.append(disks[name].get(text) * weight * scale / (1 - offset))
            constant -= weight * scale * offset / (1 - offset)
        return np.concatenate(pieces + [np.array([constant], np.float32)]).astype(np.float32)

    indexes = {}
    for name, records in libraries.items():
        cache = EmbeddingCache(backend=Identity())  # type: ignore[arg-type]
        for text in {t for r in records for t in [r["appliesWhen"], *r["steps"]]}:
            cache.put(text, procedure_vector(text))
        indexes[name] = Index(records, cache=cache, config=SelectionConfig())

    def ranked(domain: str, query: dict) -> tuple[list[str], list[str]]:
        index = indexes[domain]
        signals = index.signals(task=query["task"], query_vector=task_vector(query["task"]))
        totals = index.totals(signals)
        order = [index.records[signals.candidates[j]]["id"] for j in index.order(signals, totals)]
        chosen, _ = index.inject(signals, totals, index.eligibility(signals), 2)
        return order, [index.records[signals.candidates[j]]["id"] for j in chosen]

    top1: dict[tuple[str, str], list[float]] = {}
    for domain, queries in sets.items():
        for query in queries:
            metrics = query_metrics(ranked(domain, query)[0], query["relevant"])
            top1.setdefault((query["language"], query["split"]), []).append(metrics["P@1"])
    covered = right = injected_right = wrong = 0
    for query in paraphrases:
        order, injected = ranked("demo", query)
        if query["relevant"]:
            covered += 1
            right += order[0] in query["relevant"]
            injected_right += any(pid in query["relevant"] for pid in injected)
        else:
            wrong += bool(injected)
    splits = ("tuning", "heldout") if args.heldout else ("tuning",)
    for split in splits:
        values = {lang: statistics.fmean(top1[(lang, split)]) for lang in measure.LANGUAGES}
        mean = statistics.fmean(v for lang, v in values.items() if lang != "en")
        print(
            f"{split}: " + " ".join(f"{lang} {v:.3f}" for lang, v in values.items()) + f" | non-English mean {mean:.3f}"
        )
    for domain in ("airline", "retail") if args.heldout else ("airline",):
        values = [query_metrics(ranked(domain, q)[0], q["relevant"]) for q in tau2[domain]]
        print(
            f"tau2 {domain}: P@1 {statistics.fmean(m['P@1'] for m in values):.3f} "
            f"MAP@10 {statistics.fmean(m['MAP@10'] for m in values):.3f}"
        )
    print(
        f"paraphrases: top-1 {right / covered:.3f}, covered given the right one {injected_right / covered:.3f}, "
        f"uncovered given one {wrong} of {len(paraphrases) - covered}"
    )


if __name__ == "__main__":
    main()
