"""Which groups the miner tests and which it proposes (pure Python, no Django).

Groups: (intent, skeleton) over successful tasks with at least the support threshold of distinct
tasks. The gate is within tasks (library/mining/within.py, a second reading of the same tasks):
sessions that follow the skeleton (its steps in order, other calls between allowed) vs the other
sessions of the same task, pooled over tasks (Cochran–Mantel–Haenszel test, Mantel–Haenszel risk
ratio; single-session tasks pooled into one stratum), Bonferroni-corrected for all groups tested in
the run; *credible* when the corrected one-sided p-value is below the agent's significance level and
the risk ratio's interval at the corrected level lies above 1. One candidate per intent: the largest
credible group. An intent without a credible group is reported with its best group's figures, not
proposed; so is a group that, with each repeated block of calls as one step, still has more steps
than the cap ("a workflow: belongs in code"). The distinct-task contrast (resolved vs failed tasks
that took the skeleton: Fisher, Wilson lift) is kept as a description.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..formatting import count
from . import evidence_statistics as st
from .skeletons import Aggregator, IntentStats, Skeleton, compressed_length, intent_figures

# ---------------------------------------------------------------------------------------------- groups


@dataclass
class GroupChoice:
    intent: Any
    skeleton: Skeleton
    support: int  # distinct tasks
    support_sessions: int
    test: dict[str, Any]  # distinct tasks: resolved vs failed tasks that took the skeleton (described, not the gate)
    proposed: bool
    alternatives: list[tuple[Skeleton, int]]
    # the gate: followers vs other sessions within tasks (within.TaskTables, evidence_statistics.within_task)
    within: dict[str, Any] = field(default_factory=dict)
    # too long even with its repeats as one step each: "a workflow: belongs in code", reported
    workflow: bool = False


class Status:
    MINED = "mined"
    REPORTED = "no significant contrast"
    BELOW_THRESHOLD = "below threshold"
    NO_RESOLVED = "no resolved session"
    DUPLICATE = "duplicate"
    QUARANTINED = "quarantined"
    TOO_FEW_CALLS = "too few tool calls"
    NO_VERIFY_COMMAND = "no verify command"  # a coding group whose resolved sessions ran no passing test
    WORKFLOW = "a workflow: belongs in code"  # the group's steps, repeats compressed, exceed the step cap


def _skeleton_key(skeleton: Skeleton) -> str:
    return "\x1f".join(skeleton)


def step_count(skeleton: Skeleton) -> int:
    """The steps a skeleton takes as a procedure: a repeated block of calls is one step."""
    return compressed_length(skeleton) if len(skeleton) > 1 else len(skeleton)


def groups_to_test(aggregator: Aggregator) -> tuple[dict[Any, list[tuple[Skeleton, int]]], list[dict[str, Any]]]:
    """Per intent, the groups to test: skeletons of successful tasks with at least the support
    threshold of distinct tasks (any length: one too long even compressed is tested and reported as
    a workflow, never replaced by a shorter fragment); and a report entry for every intent with none."""
    params = aggregator.params
    eligible: dict[Any, list[tuple[Skeleton, int]]] = {}
    report: list[dict[str, Any]] = []
    for intent in sorted(aggregator.intents, key=str):
        stats = aggregator.intents[intent]
        figures = intent_figures(stats)
        ranked = sorted(stats.success.skeleton_tasks.items(), key=lambda kv: (-kv[1], _skeleton_key(kv[0])))
        if not ranked:
            status = Status.TOO_FEW_CALLS if stats.too_few_calls and not stats.outcomes else Status.NO_RESOLVED
            reason = (
                f"all {stats.too_few_calls} mined sessions have fewer than {params.min_tool_calls} tool calls"
                if status == Status.TOO_FEW_CALLS
                else "no resolved session with enough tool calls among the mined (older) sessions"
            )
            report.append({"intent": intent, "status": status, "reason": reason, "figures": figures})
            continue
        usable = [(s, n) for s, n in ranked if n >= params.support_threshold and s]
        if not usable:
            top, n = ranked[0]
            reason = f"the largest group has {count(n, 'distinct tasks')}; the support threshold is {params.support_threshold}"
            report.append(
                {
                    "intent": intent,
                    "status": Status.BELOW_THRESHOLD,
                    "reason": reason,
                    "figures": {**figures, "topSkeleton": list(top), "topSupport": n},
                }
            )
            continue
        eligible[intent] = usable
    return eligible, report


def choose_groups(aggregator: Aggregator) -> tuple[list[GroupChoice], list[dict[str, Any]]]:
    """Per intent: the group to draft (proposed when credible, else reported), and a report entry
    for every intent that gets no group, with why and the figures. The gate is the within-task
    contrast of the second reading (within.mine_tasks fills `aggregator.within`), Bonferroni over
    every group tested in the run; one candidate per intent: the largest credible group."""
    params = aggregator.params
    eligible, report = groups_to_test(aggregator)
    within = aggregator.within
    if eligible and within is None:
        raise ValueError("choose_groups needs the within-task reading: build the aggregator with within.mine_tasks")
    tests = sum(len(groups) for groups in eligible.values())
    chosen: list[GroupChoice] = []
    for intent, (skeleton, support, gate, tested) in _picks(aggregator, eligible, within).items():
        stats = aggregator.intents[intent]
        credible = [entry for entry in tested if entry[2]["credible"]]
        workflow = step_count(skeleton) > params.max_steps
        chosen.append(
            GroupChoice(
                intent=intent,
                skeleton=skeleton,
                support=support,
                support_sessions=stats.success.skeleton_sessions[skeleton],
                test=skeleton_test(stats, skeleton, tests=tests, alpha=params.significance_level),
                proposed=bool(credible) and not workflow,
                alternatives=[(s, n) for s, n, _ in tested if s != skeleton],
                within={
                    "gate": gate,
                    "orderBeyondTools": within.order_beyond_tools(intent, skeleton, alpha=params.significance_level),
                    "byModelFamily": within.families(intent, skeleton, alpha=params.significance_level),
                    "held": within.table(intent, skeleton, "held"),
                    "heldOrderBeyondTools": within.order_beyond_tools(
                        intent, skeleton, alpha=params.significance_level, held=True
                    ),
                },
                workflow=workflow,
            )
        )
    return chosen, report


def _picks(aggregator: Aggregator, eligible: Mapping[Any, list[tuple[Skeleton, int]]], within: Any) -> dict[Any, tuple]:
    """intent → (skeleton, support, gate, every tested (skeleton, support, gate)): the largest credible
    group, else the largest, by the gate (`within.gate`), Bonferroni over every group tested."""
    alpha = aggregator.params.significance_level
    tests = sum(len(groups) for groups in eligible.values())
    picks = {}
    for intent, groups in eligible.items():
        tested = [(s, n, within.gate(intent, s, tests=tests, alpha=alpha)) for s, n in groups]
        credible = [entry for entry in tested if entry[2]["credible"]]
        picks[intent] = (*(credible or tested)[0], tested)
    return picks


def chosen_skeletons(aggregator: Aggregator, within: Any) -> dict[Any, Skeleton]:
    """intent → the skeleton choose_groups will draft, from the gates alone (`within.gate`), so that
    the rest of the within-task figures need to be gathered for it only."""
    eligible, _ = groups_to_test(aggregator)
    return {intent: pick[0] for intent, pick in _picks(aggregator, eligible, within).items()}


def skeleton_test(stats: IntentStats, skeleton: Skeleton, *, tests: int, alpha: float) -> dict[str, Any]:
    return stats_contrast(
        stats.success.skeleton_tasks[skeleton],
        stats.success.tasks,
        stats.failed.skeleton_tasks[skeleton],
        stats.failed.tasks,
        tests=tests,
        alpha=alpha,
    )


def stats_contrast(a: int, n_a: int, b: int, n_b: int, *, tests: int = 1, alpha: float = 0.05) -> dict[str, Any]:
    return {
        "resolved": a,
        "resolvedOf": n_a,
        "failed": b,
        "failedOf": n_b,
        "resolvedRate": st.rate(a, n_a),
        "failedRate": st.rate(b, n_b),
        **st.contrast(a, n_a, b, n_b, tests=tests, alpha=alpha),
    }
