"""Chooses the ranking weights on one part of the tau2 labelled set and reports them on the other.

    python tests/library/data/tau2_selection/tune.py [--json]

Two splits, each tuned on its first part and checked on its second:
- by task id: even tau2 task ids (both domains) to tune, odd ids held out;
- by domain: airline to tune, retail held out.
Each domain's queries are ranked over that domain's library only (one agent per domain). The grid:
semantic weight 1 (only ratios matter), lexical and step weights from WEIGHT_GRID; the exact weight
stays 1 (no tau2 task names a tool, so this set cannot tune it). Objective: mean MAP@10 over the
tuning queries, then P@1, then the smaller sum of weights. Also measures the ranker before this
change (reciprocal rank fusion over floored retrievers, `--previous path/to/old/selection.py`).

Then what the defaults inject (eligibility floors and cap, not tuned here): on each half of the task-id
split, with cap 2 (the default injection cap) and cap 1, each domain's queries and the other domain's
requests as its unrelated tasks.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3]))
sys.path.insert(0, str(HERE.parents[3] / "clients" / "python"))

from library.serving.selection_eval import (  # noqa: E402 (after the sys.path lines above)
    INJECTION_METRICS,
    METRICS,
    Injection,
    evaluate,
    load_export,
    load_queries,
    query_metrics,
)  # noqa: E402
from procmem_client.ranking import EmbeddingCache, Ranker, SelectionConfig  # noqa: E402

WEIGHT_GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5)
DOMAINS = ("airline", "retail")


def task_number(query) -> int:
    return int(query.id.split("/")[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--previous",
        type=Path,
        help="the previous ranker module (e.g. `git show 2ffa492:library/selection.py`), to measure it on the same set",
    )
    args = parser.parse_args()

    cache = EmbeddingCache()
    base = SelectionConfig()
    data = {}
    for domain in DOMAINS:
        records = load_export(HERE / "library" / f"tau2_{domain}")
        queries = [q for q in load_queries(HERE / f"{domain}.jsonl") if q.relevant]  # the ranking metrics
        index = Ranker(cache=cache, config=base).index(records)
        vectors = [cache.embed_query(q.task) for q in queries]
        data[domain] = (records, queries, index, vectors)

    def score(config: SelectionConfig, keep) -> dict[str, dict[str, float]]:
        per_method: dict[str, list[dict[str, float]]] = {}
        for domain, (records, queries, index, vectors) in data.items():
            chosen = [(q, v) for q, v in zip(queries, vectors) if keep(domain, q)]
            if not chosen:
                continue
            results = evaluate(index, [q for q, _ in chosen], config=config, vectors=[v for _, v in chosen]).methods
            for method, result in results.items():
                per_method.setdefault(method, []).extend(result.per_query)
        return {
            method: {m: statistics.fmean(q[m] for q in rows) for m in METRICS} | {"queries": len(rows)}
            for method, rows in per_method.items()
        }

    splits = {
        "task id": (lambda d, q: task_number(q) % 2 == 0, lambda d, q: task_number(q) % 2 == 1, "even ids", "odd ids"),
        "domain": (lambda d, q: d == "airline", lambda d, q: d == "retail", "airline", "retail"),
    }
    report = {}
    for split, (tune_part, held_part, tune_name, held_name) in splits.items():
        best = None
        for lexical, step in itertools.product(WEIGHT_GRID, WEIGHT_GRID):
            config = replace(base, lexical_weight=lexical, step_weight=step)
            m = score(config, tune_part)["configured"]
            key = (round(m["MAP@10"], 9), round(m["P@1"], 9), -(lexical + step))
            if best is None or key > best[0]:
                best = (key, config)
        config = best[1]
        report[split] = {
            "weights": {
                "semantic": config.semantic_weight,
                "lexical": config.lexical_weight,
                "step": config.step_weight,
                "exact": config.exact_weight,
            },
            f"tuned on {tune_name}": score(config, tune_part),
            f"held out: {held_name}": score(config, held_part),
        }
    report["defaults"] = {
        "weights": {
            "semantic": base.semantic_weight,
            "lexical": base.lexical_weight,
            "step": base.step_weight,
            "exact": base.exact_weight,
        },
        "all queries": score(base, lambda d, q: True),
        "even ids": score(base, splits["task id"][0]),
        "odd ids": score(base, splits["task id"][1]),
        "airline": score(base, splits["domain"][0]),
        "retail": score(base, splits["domain"][1]),
    }
    if args.previous:
        report["previous ranker"] = previous_ranker(args.previous, data)
    report["injection"] = injection_report(cache, base)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    injection = report.pop("injection")
    for split, entry in report.items():
        print(f"\n## {split}: weights {entry.get('weights', '')}")
        for part, methods in entry.items():
            if part == "weights":
                continue
            print(
                f"\n{part}:\n| ranker | queries | "
                + " | ".join(METRICS)
                + " |\n| --- | ---: |"
                + " ---: |" * len(METRICS)
            )
            for method, metrics in methods.items():
                print(f"| {method} | {metrics['queries']} | " + " | ".join(f"{metrics[m]:.3f}" for m in METRICS) + " |")
    print(
        "\n## injection with the defaults\n\n| cap | part | related | unrelated | "
        + " | ".join(label for _, label in INJECTION_METRICS)
        + " |\n| ---: | --- | ---: | ---: |"
        + " ---: |" * len(INJECTION_METRICS)
    )
    for row in injection:
        print(
            f"| {row['cap']} | {row['part']} | {row['related']} | {row['unrelated']} | "
            + " | ".join(f"{row[key]:.3f}" for key, _ in INJECTION_METRICS)
            + " |"
        )


def injection_report(cache, config) -> list[dict]:
    """The defaults' injection on each half of the task-id split (related and unrelated queries of
    both domains together), for cap 2 and cap 1."""
    prepared = []
    for domain in DOMAINS:
        queries = load_queries(HERE / f"{domain}.jsonl")
        index = Ranker(cache=cache, config=config).index(load_export(HERE / "library" / f"tau2_{domain}"))
        prepared.append((queries, index, [cache.embed_query(q.task) for q in queries]))
    rows = []
    for cap in (2, 1):
        for part, parity in (("even ids", 0), ("odd ids", 1)):
            combined = Injection(cap=cap)
            for queries, index, vectors in prepared:
                chosen = [(q, v) for q, v in zip(queries, vectors) if task_number(q) % 2 == parity]
                result = evaluate(index, [q for q, _ in chosen], vectors=[v for _, v in chosen], cap=cap).injection
                combined.per_query += result.per_query
            combined.measure()
            rows.append(
                {
                    "cap": cap,
                    "part": part,
                    "related": combined.related,
                    "unrelated": combined.unrelated,
                    **combined.metrics,
                }
            )
    return rows


def previous_ranker(path: Path, data) -> dict[str, dict[str, dict[str, float]]]:
    """The old ranker's order: its diagnostic ranking (top 20 by fused score), then the rest by
    semantic score (retail has 23 procedures; P@1, MAP@10, nDCG@10 and recall@2 are exact)."""
    spec = importlib.util.spec_from_file_location("previous_selection", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    out: dict[str, dict[str, dict[str, float]]] = {}
    rows_by_part: dict[str, list[dict[str, float]]] = {
        "all queries": [],
        "even ids": [],
        "odd ids": [],
        "airline": [],
        "retail": [],
    }
    for domain, (records, queries, index, vectors) in data.items():
        old = module.Index(records, cache=module.EmbeddingCache(index._cache.embedder), config=module.SelectionConfig())
        for query in queries:
            top = [c["id"] for c in old.select(task=query.task, k=module.MAX_K)["ranked"]]
            semantic = old.semantic_scores(query.task)
            rest = sorted(
                (r["id"] for r in records if r["id"] not in top),
                key=lambda pid: -semantic[[r["id"] for r in records].index(pid)],
            )
            metrics = query_metrics(top + rest, query.relevant)
            rows_by_part["all queries"].append(metrics)
            rows_by_part["even ids" if task_number(query) % 2 == 0 else "odd ids"].append(metrics)
            rows_by_part[domain].append(metrics)
    for part, rows in rows_by_part.items():
        out[part] = {
            "previous (RRF)": {m: statistics.fmean(r[m] for r in rows) for m in METRICS} | {"queries": len(rows)}
        }
    return out


if __name__ == "__main__":
    main()
