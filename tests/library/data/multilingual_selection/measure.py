"""Measures selection per embedding backend and language on the multilingual set, the paraphrase
set and the tau2 set (docs/selection.md, "Selection in the customer's language"):

    python tests/library/data/multilingual_selection/measure.py [--backends minilm,e5-small,use-multilingual]
        [--set NAME=VALUE ...] [--body-text-weight W] [--cache DIR] [--json] [--blind]

Every text (tasks, appliesWhen, steps, bodies) is embedded once per backend and kept in --cache
(default /tmp/procmem-embedding-cache), so a second run only ranks. The ranking is the one ranker
(procmem_client.ranking) with the query vector passed in; `--body-text-weight` adds the cosine between
the task and the procedure's whole body embedded as one text (appliesWhen and steps) as a sixth
signal; the ranker's own body signal (the mean of the appliesWhen's and the steps' cosines) is
`--set body_weight=W` (0 turns it off).

Reports, per backend: per language and split (tuning / heldout / heldout2) top-1 and MAP@10 of the
multilingual set (airline, retail and demo tasks, each domain ranked over its own library); the
paraphrase set's top-1 and its uncovered tasks given a procedure (cap 2); tau2 MAP@10 and P@1 on
retail (the held-out domain of docs/selection.md) and on airline. `--blind` also reports the blind
paraphrase set (paraphrases_blind.jsonl, written without reading the procedures; README), the same
measures per language and nothing per task: read it once per configuration chosen on the rest,
never to choose one. `--tuning` prints only the tuning data (the multilingual set's tuning split,
the old paraphrase set and tau2 airline), for choosing without reading what is held out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "clients" / "python")]

from library.serving.selection_eval import load_export, query_metrics  # noqa: E402
from procmem_client import embeddings  # noqa: E402
from procmem_client.embedding_cache import EmbeddingCache  # noqa: E402
from procmem_client.ranking import Index, SelectionConfig  # noqa: E402

TAU2 = HERE.parent / "tau2_selection"
LIBRARIES = {
    "airline": TAU2 / "library" / "tau2_airline",
    "retail": TAU2 / "library" / "tau2_retail",
    "demo": HERE / "library" / "demo",
}
LANGUAGES = ("en", "de", "fr", "es", "zh", "ja", "ru")


class DiskCache:
    """Vectors per (backend, text), in one .npz per backend."""

    def __init__(self, directory: Path, backend: embeddings.Backend) -> None:
        self.backend = backend
        safe = hashlib.sha1(backend.model_id.encode()).hexdigest()[:12]
        self.path = directory / f"{backend.name.replace(':', '_').replace('/', '_')}-{safe}.npz"
        self.vectors: dict[str, np.ndarray] = {}
        if self.path.is_file():
            with np.load(self.path) as data:
                self.vectors = {key: data[key] for key in data.files}
        self.dirty = False

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()

    def ensure(self, texts: list[str]) -> None:
        parts = getattr(self.backend, "parts", None)
        if parts:  # a routed backend: its parts' cached vectors side by side
            caches = self.part_caches = [DiskCache(self.path.parent, part) for part in parts]
            for cache in caches:
                cache.ensure(texts)
                cache.save()
            for text in texts:
                key = self.key(text)
                if key not in self.vectors:
                    self.vectors[key] = self.backend.combine([c.get(text)[None, :] for c in caches])[0]
            return
        missing = sorted({t for t in texts if self.key(t) not in self.vectors})
        for start in range(0, len(missing), 64):
            chunk = missing[start : start + 64]
            for text, vector in zip(chunk, self.backend.embed(chunk)):
                self.vectors[self.key(text)] = np.asarray(vector, dtype=np.float32)
            self.dirty = True

    def get(self, text: str) -> np.ndarray:
        return self.vectors[self.key(text)]

    def query(self, text: str) -> np.ndarray:
        """A task's vector as the ranker embeds a query (a routed backend keeps its language's part)."""
        if getattr(self.backend, "parts", None):
            parts = {id(part): cache for part, cache in zip(self.backend.parts, self.part_caches)}
            return self.backend.route(text, lambda part: parts[id(part)].get(text))
        return self.get(text)

    def save(self) -> None:
        if self.dirty and not getattr(self.backend, "parts", None):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(self.path, **self.vectors)


def body(record: dict) -> str:
    return " ".join([record["appliesWhen"], *(record.get("steps") or [])])


def load_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def tau2_queries(domain: str) -> list[dict]:
    return [q for q in load_lines(TAU2 / f"{domain}.jsonl")]


def rank_all(index: Index, disk: DiskCache, queries: list[dict], body_weight: float, bodies: np.ndarray, cap: int = 2):
    """Per query: the ranked ids and the injected ids (cap)."""
    out = []
    for query in queries:
        vector = disk.query(query["task"])
        signals = index.signals(task=query["task"], query_vector=vector)
        totals = index.totals(signals)
        if body_weight:
            extra = np.clip(disk.backend.calibrate(bodies @ vector), 0.0, 1.0)[signals.candidates]
            totals = totals + body_weight * extra
        order = index.order(signals, totals)
        ranked = [index.records[signals.candidates[j]]["id"] for j in order]
        chosen, _ = index.inject(signals, totals, index.eligibility(signals), cap)
        injected = [index.records[signals.candidates[j]]["id"] for j in chosen]
        out.append((query, ranked, injected))
    return out


def paraphrase_report(ranked: list) -> dict[str, dict[str, int]]:
    """Per language: top-1 over the covered tasks, the covered ones given the right procedure and
    the uncovered ones given any (cap 2)."""
    report: dict[str, dict[str, int]] = {}
    for query, ranking, injected in ranked:
        entry = report.setdefault(
            query["language"], {"covered": 0, "top1": 0, "injectedRight": 0, "uncovered": 0, "wrong": 0}
        )
        if query["relevant"]:
            entry["covered"] += 1
            entry["top1"] += ranking[0] in query["relevant"]
            entry["injectedRight"] += any(pid in query["relevant"] for pid in injected)
        else:
            entry["uncovered"] += 1
            entry["wrong"] += bool(injected)
    return report


def measure(
    backend_name: str,
    config: SelectionConfig,
    body_weight: float,
    cache_dir: Path,
    offset: float | None = None,
    blind: bool = False,
) -> dict:
    backend = embeddings.backend(backend_name)
    if offset is not None:
        backend.offset = offset  # type: ignore[attr-defined]  # trying another calibration
    disk = DiskCache(cache_dir, backend)
    libraries = {name: load_export(path) for name, path in LIBRARIES.items()}
    sets = {
        "multilingual": {d: load_lines(HERE / f"{d}.jsonl") for d in ("airline", "retail", "demo")},
        "paraphrase": {"demo": load_lines(HERE / "paraphrases.jsonl")},
        "tau2": {d: [q for q in tau2_queries(d)] for d in ("airline", "retail")},
    }
    if blind:
        sets["blind"] = {"demo": load_lines(HERE / "paraphrases_blind.jsonl")}
    texts = [q["task"] for s in sets.values() for qs in s.values() for q in qs]
    for records in libraries.values():
        texts += [r["appliesWhen"] for r in records] + [s for r in records for s in r["steps"]]
        texts += [body(r) for r in records]
    disk.ensure(texts)
    disk.save()
    indexes, bodies = {}, {}
    for name, records in libraries.items():
        cache = EmbeddingCache(backend=backend)
        for r in records:
            cache.put(r["appliesWhen"], disk.get(r["appliesWhen"]))
            for step in r["steps"]:
                cache.put(step, disk.get(step))
        indexes[name] = Index(records, cache=cache, config=config)
        bodies[name] = np.stack([disk.get(body(r)) for r in indexes[name].records])

    report: dict = {"backend": backend_name, "modelId": backend.model_id, "bodyWeight": body_weight}
    # multilingual set: per language and split
    rows: dict[tuple[str, str], list[dict]] = {}
    for domain, queries in sets["multilingual"].items():
        for query, ranked, _ in rank_all(indexes[domain], disk, queries, body_weight, bodies[domain]):
            metrics = query_metrics(ranked, query["relevant"])
            for split in (query["split"], "all"):
                rows.setdefault((query["language"], split), []).append(metrics)
    report["multilingual"] = {
        f"{lang}/{split}": {
            "n": len(values),
            "P@1": round(statistics.fmean(m["P@1"] for m in values), 3),
            "MAP@10": round(statistics.fmean(m["MAP@10"] for m in values), 3),
        }
        for (lang, split), values in sorted(rows.items())
    }
    # paraphrases: top-1 over the covered tasks, injections over the uncovered ones (cap 2)
    for name in ("paraphrase", "blind"):
        if name in sets:
            report[name] = paraphrase_report(
                rank_all(indexes["demo"], disk, sets[name]["demo"], body_weight, bodies["demo"])
            )
    # tau2: each domain over its own library (related queries)
    for domain in ("airline", "retail"):
        related = [q for q in sets["tau2"][domain] if q["relevant"]]
        values = [
            query_metrics(ranked, q["relevant"])
            for q, ranked, _ in rank_all(indexes[domain], disk, related, body_weight, bodies[domain])
        ]
        report[f"tau2/{domain}"] = {
            "P@1": round(statistics.fmean(m["P@1"] for m in values), 3),
            "MAP@10": round(statistics.fmean(m["MAP@10"] for m in values), 3),
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="minilm,e5-small,use-multilingual")
    parser.add_argument("--set", action="append", default=[], help="a SelectionConfig field, NAME=VALUE")
    parser.add_argument("--body-text-weight", type=float, default=0.0)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/procmem-embedding-cache"))
    parser.add_argument("--offset", type=float, help="another calibration offset for the backends (default theirs)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--blind", action="store_true", help="also the blind paraphrase set (once per configuration)")
    parser.add_argument("--tuning", action="store_true", help="print only the tuning data (nothing held out)")
    args = parser.parse_args()
    overrides = {}
    for item in args.set:
        name, _, value = item.partition("=")
        overrides[name] = (
            type(getattr(SelectionConfig(), name))(value) if value not in ("True", "False") else value == "True"
        )
    config = replace(SelectionConfig(), **overrides)
    for name in args.backends.split(","):
        report = measure(name, config, args.body_text_weight, args.cache, args.offset, args.blind)
        if args.tuning:
            print_tuning(report, config)
            continue
        if args.json:
            print(json.dumps(report, ensure_ascii=False))
            continue
        print(f"\n## {report['backend']} ({report['modelId']}), body-text weight {report['bodyWeight']}, {config}")
        print(
            "| language | tuning P@1 | tuning MAP@10 | held-out P@1 | held-out MAP@10 | held-out P@1 / English "
            "| held-out 2 P@1 | held-out 2 MAP@10 | held-out 2 P@1 / English |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        multilingual = report["multilingual"]
        for lang in LANGUAGES:
            cells = [f"{multilingual[f'{lang}/tuning']['P@1']:.3f}", f"{multilingual[f'{lang}/tuning']['MAP@10']:.3f}"]
            for split in ("heldout", "heldout2"):
                english, mine = multilingual[f"en/{split}"]["P@1"], multilingual[f"{lang}/{split}"]
                ratio = mine["P@1"] / english if english else float("nan")
                cells += [f"{mine['P@1']:.3f}", f"{mine['MAP@10']:.3f}", f"{ratio:.2f}"]
            print(f"| {lang} | {' | '.join(cells)} |")
        for name, title in (("paraphrase", "paraphrases"), ("blind", "blind paraphrases")):
            if name in report:
                print_paraphrases(title, report[name])
        print(
            f"\ntau2 retail (held out in docs/selection.md): P@1 {report['tau2/retail']['P@1']:.3f} MAP@10 {report['tau2/retail']['MAP@10']:.3f}; airline: P@1 {report['tau2/airline']['P@1']:.3f} MAP@10 {report['tau2/airline']['MAP@10']:.3f}"
        )


def print_tuning(report: dict, config: SelectionConfig) -> None:
    """The tuning data alone: the multilingual set's tuning split, the old paraphrases, tau2 airline."""
    print(f"\n## {report['backend']} ({report['modelId']}), tuning data only, {config}")
    print("| language | tuning P@1 | tuning MAP@10 |")
    print("| --- | ---: | ---: |")
    for lang in LANGUAGES:
        tuning = report["multilingual"][f"{lang}/tuning"]
        print(f"| {lang} | {tuning['P@1']:.3f} | {tuning['MAP@10']:.3f} |")
    print_paraphrases("paraphrases", report["paraphrase"])
    airline = report["tau2/airline"]
    print(f"\ntau2 airline (tuning): P@1 {airline['P@1']:.3f} MAP@10 {airline['MAP@10']:.3f}")


def print_paraphrases(title: str, report: dict[str, dict[str, int]]) -> None:
    print(f"\n| {title} | covered | top-1 | given the right one (cap 2) | uncovered | uncovered given a procedure |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    total = {"covered": 0, "top1": 0, "injectedRight": 0, "uncovered": 0, "wrong": 0}
    for lang in LANGUAGES:
        e = report.get(lang)
        if not e:
            continue
        for k in total:
            total[k] += e[k]
        covered = max(e["covered"], 1)
        print(
            f"| {lang} | {e['covered']} | {e['top1'] / covered:.3f} | {e['injectedRight'] / covered:.3f} | {e['uncovered']} | {e['wrong']} |"
        )
    covered = max(total["covered"], 1)
    print(
        f"| all | {total['covered']} | {total['top1'] / covered:.3f} | {total['injectedRight'] / covered:.3f} | {total['uncovered']} | {total['wrong']} |"
    )


if __name__ == "__main__":
    main()
