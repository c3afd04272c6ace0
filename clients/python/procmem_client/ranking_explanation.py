"""How a ranking is explained to people, apart from how it is computed (ranking.py): each
retriever's rank of a candidate, the reasons it is or is not eligible, the whole ranking with raw
and normalised scores (`Index.rank`), the select endpoint's `k` diagnostics, and a score as people
read it (`score_text`, which the server's pages use too). Nothing here changes the order or what is
injected: every figure comes from the index's signals, totals, eligibility and order."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from .selection import RETRIEVERS, Explained, RankedCandidate, SelectionConfig, Signals


class Index(Protocol):
    """What an explanation reads of a ranking.Index (the index itself is not imported here: it
    uses this module, not the other way round)."""

    records: Sequence[Mapping[str, Any]]
    config: SelectionConfig
    tie_rank: np.ndarray
    exact: Mapping[str, Any] | None

    def signals(self, *args: Any, **kwargs: Any) -> Signals: ...
    def totals(self, *args: Any, **kwargs: Any) -> np.ndarray: ...
    def eligibility(self, *args: Any, **kwargs: Any) -> np.ndarray: ...
    def order(self, *args: Any, **kwargs: Any) -> Any: ...
    def inject(self, *args: Any, **kwargs: Any) -> Any: ...
    def normalise(self, *args: Any, **kwargs: Any) -> Any: ...
    def task_terms(self, *args: Any, **kwargs: Any) -> Any: ...


def score_text(value: float | None) -> str:
    """A retriever's score for people: three decimals, rounded once from the raw value ("0.442"),
    a true minus for a negative cosine and never "−0.000"; "not computed" without one. The reasons
    below and the server's pages (library/formatting.score) write a score this way."""
    if value is None or math.isnan(value):
        return "not computed"
    text = f"{value:.3f}"
    if float(text) == 0:
        return "0.000"
    return text.replace("-", "\N{MINUS SIGN}")


def retriever_ranks(index: Index, signals: Signals) -> dict[str, list[int | None]]:
    """Each retriever's rank of every candidate among those at or above its floor (None below)."""
    config = index.config
    floors = {
        "semantic": config.semantic_floor,
        "lexical": config.lexical_floor,
        "exact": config.exact_floor,
        "step": 0.0,
    }
    values = {
        "semantic": signals.semantic,
        "lexical": signals.lexical,
        "exact": signals.exact.astype(np.float64),
        "step": signals.step,
    }
    tie = index.tie_rank[signals.candidates]
    ranks: dict[str, list[int | None]] = {}
    for name, scores in values.items():
        rank_of: list[int | None] = [None] * signals.candidates.size
        passing = np.flatnonzero(np.nan_to_num(scores, nan=-1.0) >= floors[name])
        passing = passing[scores[passing] > 0]
        for number, j in enumerate(passing[np.lexsort((tie[passing], -scores[passing]))].tolist(), start=1):
            rank_of[j] = number
        ranks[name] = rank_of
    return ranks


def ranked_diagnostics(
    index: Index, signals: Signals, totals: np.ndarray, eligible: np.ndarray, injected: list[int], k: int
) -> list[RankedCandidate]:
    """The select endpoint's diagnostics: the first `k` candidates in ranking order in the agent API's
    shape (API v1 fields); `injected` holds the injected positions into signals.candidates."""
    ranked: list[RankedCandidate] = []
    ranks = retriever_ranks(index, signals)
    injected_set = set(injected)
    for j in index.order(signals, totals, None, k):
        record = index.records[signals.candidates[j]]
        ranked.append(
            {
                "id": record["id"],
                "version": record["version"],
                "intent": record.get("intent"),
                "scores": {
                    "semantic": round(float(signals.semantic[j]), 4),
                    "lexical": round(float(signals.lexical[j]), 4),
                    "exact": int(signals.exact[j]),
                },
                "ranks": {name: ranks[name][j] for name in ("semantic", "lexical", "exact")},  # type: ignore[typeddict-item]
                "fused": round(float(totals[j]), 6),
                "eligible": bool(eligible[j]),
                "injected": j in injected_set,
            }
        )
    return ranked


def eligibility_reasons(config: SelectionConfig, signals: Signals, j: int) -> list[str]:
    """Why candidate j is (or is not) eligible, one line per rule it meets or misses."""
    # scores written from the raw values (score_text), as the explained ranking hands them on
    semantic, lexical, exact = float(signals.semantic[j]), float(signals.lexical[j]), int(signals.exact[j])
    met = []
    if semantic >= config.semantic_floor:
        met.append(f"semantic {score_text(semantic)} ≥ floor {config.semantic_floor:.2f}")
    if exact >= max(config.exact_floor, 1):
        met.append(f"{exact} identifier{'s' if exact != 1 else ''} of it in the task")
    area = 0.0 if signals.area is None else float(signals.area[j])
    if area >= config.area_floor and area > 0:
        met.append(f"the task names its area (area {score_text(area)} ≥ floor {config.area_floor:.2f})")
    if lexical >= config.lexical_floor and lexical > 0:
        if semantic >= config.lexical_needs_semantic:
            met.append(
                f"lexical {score_text(lexical)} ≥ floor {config.lexical_floor:.2f} with semantic {score_text(semantic)} ≥ {config.lexical_needs_semantic:.2f}"
            )
        elif not met:
            return [
                f"lexical {score_text(lexical)} ≥ floor {config.lexical_floor:.2f} but semantic {score_text(semantic)} < {config.lexical_needs_semantic:.2f} (word overlap alone is not enough)"
            ]
    if met:
        return met
    missed = [
        f"semantic {score_text(semantic)} < floor {config.semantic_floor:.2f}",
        "no identifier of it in the task",
    ]
    if lexical < config.lexical_floor:
        missed.append(f"lexical {score_text(lexical)} < floor {config.lexical_floor:.2f}")
    return missed


def explain(
    index: Index, *, task: str, intent: str | None = None, cap: int = 2, query_vector: np.ndarray | None = None
) -> list[Explained]:
    """The whole ranking (no k limit), each candidate with its raw and normalised scores, ranks,
    total, eligibility with reasons, and whether it would be injected under `cap`. Same order
    and same injected records as `select`."""
    if cap < 0:
        raise ValueError("cap must be 0 or more")
    signals = index.signals(task=task, intent=intent, query_vector=query_vector)
    if signals.candidates.size == 0:
        return []
    totals = index.totals(signals)
    eligible = index.eligibility(signals)
    chosen, pulled = index.inject(signals, totals, eligible, cap)
    pulled_reason = {
        (p["id"], p["version"]): f"pulled in: produces {', '.join(p['artefacts'])} that {p['forId']} needs"
        for p in pulled
    }
    injected = set(chosen)
    normalised = index.normalise(signals.semantic, signals.lexical, signals.exact, signals.step, signals.body)
    if signals.third is not None:  # a routed backend's third model (order only), 0 where not computed
        normalised["third"] = np.clip(np.nan_to_num(signals.third, nan=0.0), 0.0, 1.0)
    ranks = retriever_ranks(index, signals)
    matched_by_position: dict[int, list[str]] = defaultdict(list)
    for token in sorted(index.task_terms(task)):
        for i in index.exact.get(token, ()):  # type: ignore[union-attr]
            matched_by_position[int(i)].append(token)
    explained: list[Explained] = []
    for position, j in enumerate(index.order(signals, totals), start=1):
        record = index.records[signals.candidates[j]]
        step = float(signals.step[j])
        body = float(signals.body[j])
        explained.append(
            {
                "position": position,
                "id": record["id"],
                "version": record["version"],
                "intent": record.get("intent"),
                "record": dict(record),
                # raw, not rounded: a page writes each figure once (score_text), so that a
                # column and the reasons beside it agree ("0.442", not "0.4425" then "0.443")
                "scores": {
                    "semantic": float(signals.semantic[j]),
                    "lexical": float(signals.lexical[j]),
                    "exact": int(signals.exact[j]),
                    "step": None if math.isnan(step) else step,  # type: ignore[dict-item]
                    "body": None if math.isnan(body) else body,  # type: ignore[typeddict-unknown-key]
                    **({} if signals.area is None else {"area": float(signals.area[j])}),
                    **({} if signals.third is None else {"third": _computed(float(signals.third[j]))}),
                },
                "normalised": {name: float(values[j]) for name, values in normalised.items()},
                "ranks": {name: ranks[name][j] for name in RETRIEVERS},
                "total": float(totals[j]),
                "eligible": bool(eligible[j]),
                "reasons": eligibility_reasons(index.config, signals, j)
                + [r for r in [pulled_reason.get((record["id"], record["version"]))] if r],
                "injected": j in injected,
                "matched_identifiers": matched_by_position.get(int(signals.candidates[j]), []),
            }
        )
    return explained


def _computed(value: float) -> float | None:
    """A score computed for a shortlist only (NaN elsewhere): None where it was not computed."""
    return None if math.isnan(value) else value
