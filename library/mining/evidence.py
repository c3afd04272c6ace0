"""The statistics behind a candidate's evidence (pure Python, no Django), besides the gate: the
distinct-task contrast of tools, pairs and forbidden features (failed tasks show a feature more often
than successful ones, each tested on its own, corrected for the features tested), the backtest on
the held-back sessions by the gate's own estimator and whether the two agree, the argument values
that separate successful from failed tasks, and the conditional-step tests of the one-step variants.

Forbidden actions: for steps A before B of the skeleton, "B called with no A before it"; each tool
outside the skeleton and outside every successful variant at threshold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..redaction.literals import is_safe_literal
from . import evidence_statistics as st
from .groups import GroupChoice, stats_contrast
from .skeletons import IntentStats, MiningParams, Skeleton, is_subsequence, pairs_of

# ---------------------------------------------------------------------------------------------- contrast


@dataclass
class ForbiddenFeature:
    kind: str  # "after_without_before" or "tool"
    tool: str
    before: str | None
    test: dict[str, Any]  # failed vs successful tasks

    @property
    def failed(self) -> int:
        return self.test["resolved"]  # stats_contrast's first group is the failed one here

    @property
    def resolved(self) -> int:
        return self.test["failed"]

    def describe(self) -> str:
        if self.kind == "tool":
            return f"calls {self.tool}"
        return f"calls {self.tool} with no {self.before} before it"


@dataclass
class Contrast:
    resolved_total: int
    failed_total: int
    support: int
    failed_with_skeleton: int
    tools: list[dict[str, Any]]
    pairs: list[dict[str, Any]]
    features: list[ForbiddenFeature]
    forbidden: list[ForbiddenFeature]


def contrast(stats: IntentStats, group: GroupChoice, params: MiningParams) -> Contrast:
    skeleton = group.skeleton
    success, failed = stats.success, stats.failed
    R, F = success.tasks, failed.tasks
    alpha = params.significance_level
    vocabulary = sorted(set(success.tool_tasks) | set(failed.tool_tasks))
    tools = []
    for tool in vocabulary:
        record = stats_contrast(success.tool_tasks[tool], R, failed.tool_tasks[tool], F, alpha=alpha)
        tools.append({"tool": tool, "inSkeleton": tool in skeleton, **record})
    skeleton_pairs = pairs_of(skeleton)
    pairs = []
    for pair in set(success.pair_tasks) | set(failed.pair_tasks):
        record = stats_contrast(success.pair_tasks[pair], R, failed.pair_tasks[pair], F, alpha=alpha)
        pairs.append({"before": pair[0], "after": pair[1], "inSkeleton": pair in skeleton_pairs, **record})
    # the skeleton's own pairs first, then the most telling others; bounded so evidence stays small
    pairs.sort(key=lambda p: (not p["inSkeleton"], p["pValue"], p["before"], p["after"]))
    pairs = pairs[: params.max_pairs]

    # tools that a successful variant at threshold uses are part of some right way to do it
    variant_tools = {tool for alternative, _ in group.alternatives for tool in alternative}
    candidates: list[tuple[str, str, str | None, int, int]] = []
    seen: set[tuple[str, str]] = set()
    for i, before in enumerate(skeleton):
        for after in skeleton[i + 1 :]:
            if before == after or (before, after) in seen:
                continue
            seen.add((before, after))
            candidates.append(
                (
                    "after_without_before",
                    after,
                    before,
                    failed.without_before(before, after),
                    success.without_before(before, after),
                )
            )
    for tool in vocabulary:
        if tool not in skeleton and tool not in variant_tools:
            candidates.append(("tool", tool, None, failed.tool_tasks[tool], success.tool_tasks[tool]))
    features = [
        ForbiddenFeature(kind, tool, before, stats_contrast(f, F, r, R, tests=len(candidates), alpha=alpha))
        for kind, tool, before, f, r in candidates
    ]
    chosen = [feat for feat in features if feat.test["credible"]]
    chosen.sort(key=lambda feat: (feat.test["pValue"], -feat.failed, feat.tool, feat.before or ""))
    # one lesson per offending tool: "reply before approval" and "reply before the window check"
    # usually describe the same failures; keep the stronger.
    unique: list[ForbiddenFeature] = []
    for feat in chosen:
        if all(u.tool != feat.tool for u in unique):
            unique.append(feat)
    return Contrast(
        resolved_total=R,
        failed_total=F,
        support=success.skeleton_tasks[skeleton],
        failed_with_skeleton=failed.skeleton_tasks[skeleton],
        tools=tools,
        pairs=pairs,
        features=features,
        forbidden=unique[: params.max_forbidden],
    )


# ---------------------------------------------------------------------------------------------- backtest


def backtest(
    stats: IntentStats,
    skeleton: Skeleton,
    params: MiningParams,
    held_tables: st.WithinTaskSums | Mapping[st.Table, int] | None = None,
) -> dict[str, Any]:
    """Success of the held-back sessions that follow the candidate (its steps in order, other calls
    in between allowed) vs those that do not, by the gate's own estimator (evidence_statistics.within_task:
    within tasks, single-session tasks pooled), from `held_tables` (within.TaskTables' "held"
    sums, or task tables). Without them (a caller that has only the first reading) the held-back sessions are one
    stratum. Supports: one-sided p below the significance level and the risk ratio's interval above
    1; contradicts: followers succeed less often (risk ratio below 1); else inconclusive."""
    if held_tables is None:
        follow, other = [0, 0], [0, 0]
        for held_skeleton, (ok, bad) in stats.held.items():
            target = follow if is_subsequence(skeleton, held_skeleton) else other
            target[0] += ok
            target[1] += bad
        held_tables = Counter({(follow[0], follow[1], other[0], other[1]): 1})
    record = st.within_task(held_tables, alpha=params.significance_level)
    followers, others = record["followers"], record["others"]
    result: dict[str, Any] = {
        "share": params.backtest_share,
        "heldBackSessions": stats.held_sessions,
        "heldBackTasks": stats.held_tasks,
        "heldBackTasksAlsoMined": stats.held_tasks_also_mined,
        "followers": followers,
        "others": others,
        "unit": "sessions, within tasks",
        "withinTask": record,
    }
    if not followers["of"] or not others["of"]:
        result.update(
            verdict="inconclusive",
            contradicted=False,
            pValue=None,
            note="no held-back session follows it" if not followers["of"] else "every held-back session follows it",
        )
        return result
    ratio = st.ratio_number(record)
    if ratio is None:
        result.update(
            verdict="inconclusive",
            contradicted=False,
            pValue=None,
            note="no task has both followers and other sessions to compare",
        )
        return result
    contradicted = ratio < 1
    supports = record["pValue"] < params.significance_level and st.holds(record)
    verdict = "contradicts" if contradicted else ("supports" if supports else "inconclusive")
    result.update(
        verdict=verdict,
        contradicted=contradicted,
        pValue=record["pValue"],
        riskRatio=record["riskRatio"],
        low=record["low"],
        high=record["high"],
    )
    return result


def agreement(gate: Mapping[str, Any], back: Mapping[str, Any]) -> dict[str, Any]:
    """Whether the gate and the backtest (the same estimator on other sessions) agree; the candidate
    page says so when they do not."""
    credible, verdict = bool(gate.get("credible")), back.get("verdict")
    agree = (credible and verdict == "supports") or (not credible and verdict != "supports")
    if agree:
        text = "The gate and the backtest agree."
    elif credible:
        text = (
            f"The gate and the backtest disagree: the mined sessions show the order credibly (risk ratio "
            f"{gate.get('riskRatio')}), the held-back sessions do not confirm it ({verdict})."
        )
    else:
        text = (
            "The gate and the backtest disagree: the held-back sessions support the order, the mined sessions "
            "did not show it credibly."
        )
    return {"agree": agree, "gate": "credible" if credible else "not credible", "backtest": verdict, "text": text}


def argument_contrast(
    skeleton: Skeleton,
    success_samples: Sequence[tuple[Any, Sequence[Mapping[str, Any]]]],
    failed_samples: Mapping[str, Sequence[tuple[Any, Mapping[str, Any]]]],
    *,
    alpha: float,
    limit: int = 12,
) -> list[dict[str, Any]]:
    """For each step, the safe literal argument values whose use separates successful from failed
    tasks (a status or a template that must be passed), counted over distinct tasks of the samples.
    Id-shaped values are never listed: they are a customer's, not the procedure's."""
    records: list[dict[str, Any]] = []
    for position, tool in enumerate(skeleton):
        success_tasks: dict[tuple[str, Any], set] = {}
        success_all: set = set()
        for task, steps in success_samples:
            if position >= len(steps):
                continue
            success_all.add(task)
            for key, value in steps[position].items():
                if is_safe_literal(value):
                    success_tasks.setdefault((key, value), set()).add(task)
        failed_tasks: dict[tuple[str, Any], set] = {}
        failed_all: set = set()
        for task, args in failed_samples.get(tool, []):
            failed_all.add(task)
            for key, value in args.items():
                if is_safe_literal(value):
                    failed_tasks.setdefault((key, value), set()).add(task)
        for key, value in sorted(set(success_tasks) | set(failed_tasks), key=lambda kv: (kv[0], str(kv[1]))):
            a, b = len(success_tasks.get((key, value), ())), len(failed_tasks.get((key, value), ()))
            if not success_all or not failed_all:
                continue
            p = st.fisher_two_sided(a, len(success_all), b, len(failed_all))
            records.append(
                {
                    "step": position + 1,
                    "tool": tool,
                    "key": key,
                    "value": value,
                    "resolved": a,
                    "resolvedOf": len(success_all),
                    "failed": b,
                    "failedOf": len(failed_all),
                    "resolvedRate": st.rate(a, len(success_all)),
                    "failedRate": st.rate(b, len(failed_all)),
                    "pValue": float(f"{p:.4g}"),
                    "separates": p < alpha,
                }
            )
    records.sort(key=lambda r: (r["pValue"], r["step"], r["key"], str(r["value"])))
    return records[:limit]


# ---------------------------------------------------------------------------------------------- conditional steps


@dataclass(frozen=True)
class Split:
    """Successful sessions of an intent that differ by one step: `with_skeleton` calls `tool` right
    after `after` (at index `position`), `without_skeleton` is the same without it."""

    tool: str
    after: str
    position: int  # index of `tool` in with_skeleton
    with_skeleton: Skeleton
    without_skeleton: Skeleton


def splits_of(
    stats: IntentStats, skeleton: Skeleton, *, min_tasks: int = 2, limit: int = 3
) -> list[tuple[Split, bool]]:
    """The successful variants of the intent that add one step to the candidate's skeleton (after
    a step of it) or leave one of its steps out (not the first), each with at least `min_tasks`
    distinct tasks, the largest first: (split, whether the candidate is the variant with the step)."""
    found: list[tuple[int, Split, bool]] = []
    for other, tasks in stats.success.skeleton_tasks.items():
        if tasks < min_tasks or abs(len(other) - len(skeleton)) != 1:
            continue
        longer, shorter, candidate_longer = (
            (other, skeleton, False) if len(other) > len(skeleton) else (skeleton, other, True)
        )
        for i in range(1, len(longer)):
            if longer[:i] + longer[i + 1 :] == shorter and longer[i] != longer[i - 1]:
                found.append((tasks, Split(longer[i], longer[i - 1], i, longer, shorter), candidate_longer))
                break
    found.sort(key=lambda f: (-f[0], f[1].with_skeleton))
    return [(split, candidate_longer) for _, split, candidate_longer in found[:limit]]


def _result_values(samples: Sequence[tuple[Any, Mapping[str, Any]]]) -> tuple[dict[tuple[str, Any], set], set]:
    """(key, value) → the tasks whose looked-up result showed it, and all tasks with a result."""
    by_value: dict[tuple[str, Any], set] = {}
    tasks: set = set()
    for task, summary in samples:
        if not summary:
            continue
        tasks.add(task)
        for key, value in summary.items():
            if isinstance(value, bool) or is_safe_literal(value):
                by_value.setdefault((key, value), set()).add(task)
    return by_value, tasks


def condition_tests(
    splits: Sequence[tuple[Split, Sequence[tuple[Any, Mapping[str, Any]]], Sequence[tuple[Any, Mapping[str, Any]]]]],
    *,
    alpha: float,
    min_tasks: int = 2,
) -> list[dict[str, Any]]:
    """For each split, (with samples, without samples): per task, the summary of the result of the
    step before the branch. Each value `key = v` seen with the step is tested: do tasks that took the
    step see it more often than tasks that did not (one-sided Fisher over distinct tasks,
    Bonferroni over every value tested for the candidate)? Returns the best value of each split,
    `proposed` when it passes."""
    tables = []
    for split, with_samples, without_samples in splits:
        with_values, with_tasks = _result_values(with_samples)
        without_values, without_tasks = _result_values(without_samples)
        for (key, value), tasks in with_values.items():
            a, b = len(tasks), len(without_values.get((key, value), ()))
            tables.append((split, key, value, a, len(with_tasks), b, len(without_tasks)))
    records: dict[Split, dict[str, Any]] = {}
    for split, key, value, a, n_a, b, n_b in tables:
        test = st.contrast(a, n_a, b, n_b, tests=len(tables), alpha=alpha)
        record = {
            "ifTool": split.after,
            "key": key,
            "value": value,
            "thenTool": split.tool,
            "withStep": st.rate(a, n_a),
            "withoutStep": st.rate(b, n_b),
            "pValue": test["pValue"],
            "pAdjusted": test["pAdjusted"],
            "tests": test["tests"],
            "proposed": bool(test["pAdjusted"] < alpha and a >= min_tasks and n_b > 0),
            "withSkeleton": list(split.with_skeleton),
            "withoutSkeleton": list(split.without_skeleton),
        }
        best = records.get(split)
        if best is None or (record["pValue"], -a, key, str(value)) < (
            best["pValue"],
            -best["withStep"]["count"],
            best["key"],
            str(best["value"]),
        ):
            records[split] = record
    return sorted(records.values(), key=lambda r: (r["pValue"], r["ifTool"], r["thenTool"]))


@dataclass
class Branch:
    """A split with what the sessions say about it: per task, the result summary of the step before
    the branch in sessions with the step (with_results) and without it (without_results), and the
    args of the step where it was taken (then_args)."""

    split: Split
    candidate_has_step: bool
    with_results: list[tuple[Any, Mapping[str, Any]]]
    without_results: list[tuple[Any, Mapping[str, Any]]]
    then_args: list[tuple[Any, Mapping[str, Any]]]
