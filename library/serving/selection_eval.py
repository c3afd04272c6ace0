"""Measuring selection on labelled queries: P@1, MAP@10, full MAP, nDCG@10, recall@2 and latency,
for the configured ranker and the semantic-only and lexical-only baselines over the same index.
Pure Python (no Django); `manage.py eval_selection` is the command around it.

A labelled query is one JSON object per line:

    {"task": "I want to cancel my reservation", "intent": "cancel" (optional: a hard filter, as
     the agent API applies it), "relevant": {"airline.cancel_reservation": 2, "airline.refund": 1},
     "id": "q17" (optional, for the per-query report)}

Grades are positive integers; a procedure not listed is not relevant. P@1, MAP and recall count
every listed procedure as relevant; nDCG@10 uses the grades (gain 2^grade − 1, log2 discount).
Rankings are full: every candidate, no cap and no k limit.

`"relevant": {}` marks an unrelated query: a task for which no procedure of the library applies
(another domain's request, say). It has no ranking metrics; it counts for the injection measures.

Injection: what the agent would actually receive, the configured ranker's eligible candidates under
the cap (as the select endpoint injects them), judged per query: a relevant one injected, nothing
injected, the share of injected procedures that are relevant, and how many unrelated tasks were
given one. The ranking metrics say whether the right procedure is near the top; these say whether
it reaches the agent, and what else does.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from procmem_client.ranking import Index, SelectionConfig, Signals

from .. import safe_json

PROCEDURE_FORMAT = "procmem.procedure/1"
METHODS = ("configured", "semantic-only", "lexical-only")
METRICS = ("P@1", "MAP@10", "MAP", "nDCG@10", "recall@2")
# (key, what it counts): over the related queries, then over the unrelated ones
INJECTION_METRICS = (
    ("relevantInjected", "related tasks given a relevant procedure"),
    ("nothingInjected", "related tasks given nothing"),
    ("injectedRelevant", "injected procedures that are relevant"),
    ("unrelatedInjected", "unrelated tasks given a procedure"),
)


class LabelledSetError(ValueError):
    """Bad input: the message names the file, the line and the field."""


@dataclass(frozen=True)
class LabelledQuery:
    task: str
    relevant: dict[str, int]
    intent: str | None = None
    id: str = ""
    language: str = ""  # optional: the report then has a line per language
    split: str = ""  # optional: e.g. "tuning" / "heldout"; `--split` keeps one


@dataclass
class MethodResult:
    metrics: dict[str, float] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)
    per_query: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Injection:
    """What the configured ranker injects under `cap`, over the related and the unrelated queries.
    A measure whose queries are none (no unrelated query, say) is None."""

    cap: int
    related: int = 0
    unrelated: int = 0
    metrics: dict[str, float | None] = field(default_factory=dict)
    per_query: list[dict[str, Any]] = field(default_factory=list)

    def measure(self) -> None:
        related = [q for q in self.per_query if q["related"]]
        unrelated = [q for q in self.per_query if not q["related"]]
        injected = [hit for q in related for hit in q["injectedRelevant"]]
        self.related, self.unrelated = len(related), len(unrelated)
        self.metrics = {
            "relevantInjected": statistics.fmean(any(q["injectedRelevant"]) for q in related) if related else None,
            "nothingInjected": statistics.fmean(not q["injected"] for q in related) if related else None,
            "injectedRelevant": statistics.fmean(injected) if injected else None,
            "unrelatedInjected": statistics.fmean(bool(q["injected"]) for q in unrelated) if unrelated else None,
        }


# --------------------------------------------------------------------------------------------- input


def load_queries(path: Path) -> list[LabelledQuery]:
    """Reads a JSONL file of labelled queries; raises LabelledSetError naming line and field."""
    queries: list[LabelledQuery] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelledSetError(f"{path}: cannot read: {exc}") from None
    try:
        for number, where, item in safe_json.jsonl_objects(lines, source=str(path)):
            task = item.get("task")
            if not isinstance(task, str) or not task.strip():
                raise LabelledSetError(f"{where}: task: is required and must be a non-empty string")
            intent = item.get("intent")
            if intent is not None and (not isinstance(intent, str) or not intent.strip()):
                raise LabelledSetError(f"{where}: intent: must be a non-empty string when given")
            relevant = item.get("relevant")
            if not isinstance(relevant, dict):
                raise LabelledSetError(
                    f"{where}: relevant: must be an object {{procedure id: grade}} ({{}} for an unrelated task)"
                )
            for key, grade in relevant.items():
                if not isinstance(grade, int) or isinstance(grade, bool) or grade < 1:
                    raise LabelledSetError(
                        f"{where}: relevant.{key}: the grade must be a positive integer, got {grade!r}"
                    )
            labels = {}
            for name in ("language", "split"):
                value = item.get(name, "")
                if not isinstance(value, str):
                    raise LabelledSetError(f"{where}: {name}: must be a string when given")
                labels[name] = value
            queries.append(
                LabelledQuery(
                    task=task,
                    relevant=dict(relevant),
                    intent=intent,
                    id=str(item.get("id") or f"line {number}"),
                    **labels,
                )
            )
    except safe_json.JsonLineError as exc:
        raise LabelledSetError(str(exc)) from None
    if not any(query.relevant for query in queries):
        raise LabelledSetError(f"{path}: holds no query with a relevant procedure (the ranking metrics need one)")
    return queries


def load_export(path: Path) -> list[dict[str, Any]]:
    """The ACTIVE version of every procedure in an export (a directory as `export_procedures`
    writes it, an agent's directory, or one file), as agent-API records with their intent."""
    path = Path(path)
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(path.rglob("*.json"))
    else:
        raise LabelledSetError(f"{path}: does not exist")
    records: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], Path] = {}
    for file in files:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LabelledSetError(f"{file}: not a JSON procedure file: {exc}") from None
        if not isinstance(data, dict) or data.get("format", PROCEDURE_FORMAT) != PROCEDURE_FORMAT:
            raise LabelledSetError(f"{file}: format: expected {PROCEDURE_FORMAT!r}")
        for name in ("id", "intent"):
            if not isinstance(data.get(name), str):
                raise LabelledSetError(f"{file}: {name}: is required and must be a string")
        versions = data.get("versions")
        if not isinstance(versions, list):
            raise LabelledSetError(f"{file}: versions: must be a list")
        active = [v for v in versions if isinstance(v, dict) and v.get("status") == "ACTIVE"]
        if not active:
            continue
        version = active[-1]
        for name in ("appliesWhen", "steps"):
            if name not in version:
                raise LabelledSetError(f"{file}: versions[{versions.index(version)}].{name}: is required")
        key = (str(data.get("agent") or file.parent.name), data["id"])
        if key in seen:
            raise LabelledSetError(f"{file}: id: {data['id']} is also in {seen[key]}")
        seen[key] = file
        records.append({**version, "id": data["id"], "intent": data["intent"]})
    if not records:
        raise LabelledSetError(f"{path}: holds no ACTIVE procedure")
    return records


def check_labels(queries: Sequence[LabelledQuery], records: Sequence[Mapping[str, Any]]) -> None:
    known = {r["id"] for r in records}
    for query in queries:
        unknown = sorted(set(query.relevant) - known)
        if unknown:
            raise LabelledSetError(f"query {query.id}: relevant: {', '.join(unknown)} not in the library")


# --------------------------------------------------------------------------------------------- metrics


def average_precision(ranked: Sequence[str], relevant: Mapping[str, int], at: int | None = None) -> float:
    cut = ranked if at is None else ranked[:at]
    hits, total = 0, 0.0
    for position, pid in enumerate(cut, start=1):
        if pid in relevant:
            hits += 1
            total += hits / position
    denominator = len(relevant) if at is None else min(len(relevant), at)
    return total / denominator if denominator else 0.0


def ndcg(ranked: Sequence[str], relevant: Mapping[str, int], at: int = 10) -> float:
    def gain(grade: int) -> float:
        return (2.0**grade) - 1.0

    dcg = sum(
        gain(relevant[pid]) / math.log2(position + 1)
        for position, pid in enumerate(ranked[:at], start=1)
        if pid in relevant
    )
    ideal = sorted(relevant.values(), reverse=True)[:at]
    idcg = sum(gain(grade) / math.log2(position + 1) for position, grade in enumerate(ideal, start=1))
    return dcg / idcg if idcg else 0.0


def query_metrics(ranked: Sequence[str], relevant: Mapping[str, int]) -> dict[str, float]:
    return {
        "P@1": 1.0 if ranked and ranked[0] in relevant else 0.0,
        "MAP@10": average_precision(ranked, relevant, at=10),
        "MAP": average_precision(ranked, relevant),
        "nDCG@10": ndcg(ranked, relevant, at=10),
        "recall@2": sum(1 for pid in ranked[:2] if pid in relevant) / len(relevant),
    }


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else 0.0


# --------------------------------------------------------------------------------------------- ranking


def single_signal_order(index: Index, signals: Signals, scores: np.ndarray) -> list[int]:
    """A baseline's order: its own score only, ties by id and version (never by another signal)."""
    tie = index.tie_rank[signals.candidates]
    return np.lexsort((tie, -np.nan_to_num(scores, nan=0.0))).tolist()


@dataclass
class Evaluation:
    """The three rankers over the related queries, and what the configured one injects."""

    methods: dict[str, MethodResult]
    injection: Injection


def evaluate(
    index: Index,
    queries: Sequence[LabelledQuery],
    *,
    config: SelectionConfig | None = None,
    vectors: Sequence[np.ndarray] | None = None,
    cap: int = 2,
) -> Evaluation:
    """Full rankings of every related query by the three methods, their metrics and latencies, and
    the configured ranker's injection under `cap` for every query.

    Latency per query: embedding the task (timed once, counted for the two methods that need it)
    plus each method's own work with that vector. `vectors` (precomputed, e.g. by a tuning loop)
    skips embedding; latencies then leave it out."""
    config = config or index.config
    scoped = index if config == index.config else _with_config(index, config)
    results = {name: MethodResult() for name in METHODS}
    injection = Injection(cap=cap)
    timings: dict[str, list[float]] = {name: [] for name in METHODS}
    for number, query in enumerate(queries):
        if vectors is None:
            started = time.perf_counter()
            vector = index._cache.embed_query(query.task)
            embed_ms = (time.perf_counter() - started) * 1000
        else:
            vector, embed_ms = vectors[number], 0.0

        started = time.perf_counter()
        signals = scoped.signals(task=query.task, intent=query.intent, query_vector=vector)
        totals = scoped.totals(signals)
        configured = scoped.order(signals, totals)
        configured_ms = embed_ms + (time.perf_counter() - started) * 1000
        injection.per_query.append(_injected(scoped, signals, totals, query, cap))
        if not query.relevant:
            continue
        timings["configured"].append(configured_ms)

        started = time.perf_counter()
        candidates = signals.candidates
        semantic = scoped.semantic_scores(query.task, vector)[candidates]
        semantic_order = single_signal_order(scoped, signals, semantic)
        timings["semantic-only"].append(embed_ms + (time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        lexical = scoped.lexical_scores(query.task)[candidates]
        lexical_order = single_signal_order(scoped, signals, lexical)
        timings["lexical-only"].append((time.perf_counter() - started) * 1000)

        for name, order in (
            ("configured", configured),
            ("semantic-only", semantic_order),
            ("lexical-only", lexical_order),
        ):
            ranked = [scoped.records[candidates[j]]["id"] for j in order]
            values = query_metrics(ranked, query.relevant)
            first = next((position for position, pid in enumerate(ranked, start=1) if pid in query.relevant), None)
            results[name].per_query.append(
                {"id": query.id, "language": query.language, **values, "first_relevant_at": first, "top": ranked[:3]}
            )
    for name, result in results.items():
        result.metrics = {m: statistics.fmean(q[m] for q in result.per_query) for m in METRICS}
        result.latency_ms = {"p50": percentile(timings[name], 50), "p95": percentile(timings[name], 95)}
    injection.measure()
    return Evaluation(methods=results, injection=injection)


def _injected(index: Index, signals: Signals, totals: np.ndarray, query: LabelledQuery, cap: int) -> dict[str, Any]:
    """What the select endpoint would inject for the query (the ranker's injection rule)."""
    chosen, _ = index.inject(signals, totals, index.eligibility(signals), cap)
    injected = [index.records[signals.candidates[j]]["id"] for j in chosen]
    return {
        "id": query.id,
        "related": bool(query.relevant),
        "injected": injected,
        "injectedRelevant": [pid in query.relevant for pid in injected],
    }


def _with_config(index: Index, config: SelectionConfig) -> Index:
    """The same prepared index under other weights (no re-embedding: the arrays are shared)."""
    clone = object.__new__(Index)
    clone.__dict__.update(index.__dict__)
    clone.config = config
    if config.use_steps and not index.config.use_steps:
        raise ValueError("an index built without steps cannot be ranked with use_steps=True")
    return clone


def with_weights(config: SelectionConfig, **weights: float) -> SelectionConfig:
    return replace(config, **weights)


def per_language(evaluation: Evaluation) -> dict[str, dict[str, dict[str, float]]]:
    """Each method's metrics per query language (queries without one count as ""); empty when no
    query names a language."""
    per_query = evaluation.methods["configured"].per_query
    languages = sorted({q["language"] for q in per_query})
    if languages == [""]:
        return {}
    return {
        language: {
            name: {
                "queries": float(len(rows)),
                **{m: statistics.fmean(q[m] for q in rows) for m in METRICS},
            }
            for name, result in evaluation.methods.items()
            if (rows := [q for q in result.per_query if q["language"] == language])
        }
        for language in languages
    }


def below_baselines(results: Mapping[str, MethodResult], metric: str = "MAP@10") -> list[str]:
    """The baselines the configured ranker scores below on `metric` (empty when at or above both)."""
    mine = results["configured"].metrics[metric]
    return [name for name in METHODS[1:] if mine + 1e-12 < results[name].metrics[metric]]


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def as_table(evaluation: Evaluation, *, title: str = "") -> str:
    header = "| ranker | " + " | ".join(METRICS) + " | latency p50 | latency p95 |"
    lines = [title, ""] if title else []
    lines += [header, "| --- |" + " ---: |" * (len(METRICS) + 2)]
    for name in METHODS:
        result = evaluation.methods[name]
        cells = " | ".join(f"{result.metrics[m]:.3f}" for m in METRICS)
        lines.append(f"| {name} | {cells} | {result.latency_ms['p50']:.1f} ms | {result.latency_ms['p95']:.1f} ms |")
    languages = per_language(evaluation)
    if languages:
        lines += ["", "Per language (configured ranker):", "", "| language | queries | " + " | ".join(METRICS) + " |"]
        lines.append("| --- | ---: |" + " ---: |" * len(METRICS))
        for language, methods in languages.items():
            values = methods["configured"]
            cells = " | ".join(f"{values[m]:.3f}" for m in METRICS)
            lines.append(f"| {language or '–'} | {int(values['queries'])} | {cells} |")
    injection = evaluation.injection
    lines += [
        "",
        f"Injected by the configured ranker (cap {injection.cap}; {injection.related} related and "
        f"{injection.unrelated} unrelated queries):",
        "",
        "| " + " | ".join(label for _, label in INJECTION_METRICS) + " |",
        "|" + " ---: |" * len(INJECTION_METRICS),
        "| " + " | ".join(_share(injection.metrics[key]) for key, _ in INJECTION_METRICS) + " |",
    ]
    return "\n".join(lines)


def as_json(evaluation: Evaluation, *, procedures: int, config: SelectionConfig, per_query: bool) -> dict[str, Any]:
    injection = evaluation.injection
    data: dict[str, Any] = {
        "queries": injection.related,
        "unrelatedQueries": injection.unrelated,
        "procedures": procedures,
        "config": {k: getattr(config, k) for k in config.__dataclass_fields__},
        "methods": {},
        "injection": {
            "cap": injection.cap,
            **{k: None if v is None else round(v, 6) for k, v in injection.metrics.items()},
        },
    }
    for name, result in evaluation.methods.items():
        entry: dict[str, Any] = {
            "metrics": {m: round(v, 6) for m, v in result.metrics.items()},
            "latencyMs": {k: round(v, 3) for k, v in result.latency_ms.items()},
        }
        if per_query:
            entry["perQuery"] = result.per_query
        data["methods"][name] = entry
    if per_query:
        data["injection"]["perQuery"] = injection.per_query
    languages = per_language(evaluation)
    if languages:
        data["languages"] = {
            language: {
                name: {m: round(v, 6) if m != "queries" else int(v) for m, v in values.items()}
                for name, values in methods.items()
            }
            for language, methods in languages.items()
        }
    data["belowBaselinesOnMAP@10"] = below_baselines(evaluation.methods)
    return data


def records_from(iterable: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(r) for r in iterable]
