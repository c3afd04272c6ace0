"""The skeleton miner's core (pure Python, no Django): skeletons, per-task aggregation, the statistics
of every group and feature, the backtest, and the deterministic draft of a candidate.
library/mining/runs.py feeds it from the database and stores what it proposes through
procedure_propose. docs (mining) explain the evidence to reviewers.

Definitions:
- Skeleton: the ordered tool names a session called, with the tools in `ignored_tools` removed
  (default ``think``), consecutive repeats collapsed, and nothing after the first terminal call (a
  transfer to a human, ``FINISH``): a procedure ends where the session ended it. Non-consecutive
  repeats stay: A→B→A is a different procedure from A→B.
- Outcomes as they are: *resolved*; *resolved by escalation* (a transfer that was the right end: the
  session is resolved and called an escalation tool); *failed*; *unknown* (no outcome). Successful =
  resolved or resolved by escalation; the transfer is a step like any other.
- Unit: a distinct task (the session's task key). Repeated trials of one task are one observation:
  a task counts once for a feature when any of its successful (or failed) sessions shows it.
  Sessions with fewer than `min_tool_calls` tool calls (ignored tools not counted) are not mined.
- Held back: the newest `backtest_share` of each intent's sessions (by end time) are not mined; the
  backtest measures every candidate on them.
- Groups: (intent, skeleton) over successful tasks with at least the support threshold of distinct
  tasks. The gate is within tasks (library/mining/within.py, a second reading of the same tasks):
  sessions that follow the skeleton (its steps in order, other calls between allowed) vs the other
  sessions of the same task, pooled over tasks (Cochran–Mantel–Haenszel test, Mantel–Haenszel risk
  ratio; single-session tasks pooled into one stratum), Bonferroni-corrected for all groups tested
  in the run; *credible* when the corrected one-sided p-value is below the agent's significance
  level and the risk ratio's interval at the corrected level lies above 1. One candidate per
  intent: the largest credible group. An intent without a credible group is reported with its best
  group's figures, not proposed; so is a group that, with each repeated block of calls as one step,
  still has more steps than the cap ("a workflow: belongs in code"). The distinct-task contrast
  (resolved vs failed tasks that took the skeleton: Fisher, Wilson lift) is kept as a description.
- Forbidden actions: for steps A before B of the skeleton, "B called with no A before it"; each tool
  outside the skeleton and outside every successful variant at threshold. Each is tested on its own
  (failed tasks show it more often than successful ones), corrected for the features tested.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..coding.procedures import coding_skeleton
from . import statistics as st

Skeleton = tuple[str, ...]
PLACEHOLDER_RE = re.compile(r"^\{\{[a-z_]+\}\}$")
# A literal a step may keep: words of letters (any case but not ALL CAPS), "_", "-" and spaces; no
# digits. Everything else (codes, ids, amounts, dates, names from redaction) becomes a placeholder.
SAFE_LITERAL_RE = re.compile(r"^[A-Za-z][A-Za-z_\- ]{1,39}$")
ALL_CAPS_RE = re.compile(r"^[A-Z0-9_\-]+$")

SUCCESS, FAILED = "success", "failed"
COMBINATIONS_KEPT = 20_000
DEFAULT_TERMINAL_TOOLS = ("transfer_to_human_agents", "transfer_to_human", "escalate_to_human", "FINISH", "finish", "end_session")


@dataclass(frozen=True)
class MiningParams:
    support_threshold: int = 20  # distinct tasks
    ignored_tools: tuple[str, ...] = ("think",)
    terminal_tools: tuple[str, ...] = DEFAULT_TERMINAL_TOOLS
    min_tool_calls: int = 3
    significance_level: float = 0.05
    backtest_share: float = 0.25
    max_forbidden: int = 3
    max_steps: int = 8
    max_pairs: int = 30
    evidence_session_ids: int = 20
    evidence_excerpts: int = 3
    literal_share: float = 0.8
    min_literal_tasks: int = 2
    # which skeleton function reads a session (SKELETONS): tool names, or a coding agent's phases
    agent_kind: str = "tools"

    def to_dict(self) -> dict[str, Any]:
        return {
            "agentKind": self.agent_kind,
            "supportThreshold": self.support_threshold,
            "supportUnit": "distinct tasks",
            "ignoredTools": list(self.ignored_tools),
            "terminalTools": list(self.terminal_tools),
            "minToolCalls": self.min_tool_calls,
            "significanceLevel": self.significance_level,
            "backtestShare": self.backtest_share,
            "maxForbidden": self.max_forbidden,
            "maxSteps": self.max_steps,
        }


def reduce_skeleton(tools: Iterable[str], ignored: Iterable[str] = ("think",), terminal: Iterable[str] = DEFAULT_TERMINAL_TOOLS) -> Skeleton:
    ignored_set, terminal_set = set(ignored), set(terminal)
    reduced: list[str] = []
    for name in tools:
        if name in ignored_set:
            continue
        if reduced and reduced[-1] == name:
            continue
        reduced.append(name)
        if name in terminal_set:
            break
    return tuple(reduced)


# One skeleton function per agent kind: (raw skeleton as stored, ignored steps, terminal tools) → the
# mining skeleton. A coding agent's phases take no terminal tools (coding_skeleton ignores the argument).
SkeletonFunction = Callable[[Iterable[str], Iterable[str], Iterable[str]], Skeleton]
SKELETONS: dict[str, SkeletonFunction] = {
    "tools": reduce_skeleton,
    "coding": coding_skeleton,
}


def skeleton_function(params: "MiningParams") -> SkeletonFunction:
    return SKELETONS.get(params.agent_kind, reduce_skeleton)


def tool_call_count(tools: Iterable[str], ignored: Iterable[str] = ("think",)) -> int:
    ignored_set = set(ignored)
    return sum(1 for name in tools if name not in ignored_set)


def is_subsequence(needle: Sequence[str], haystack: Sequence[str]) -> bool:
    iterator = iter(haystack)
    return all(any(tool == item for item in iterator) for tool in needle)


def outcome_of(resolved: bool | None, escalated: bool | None) -> str:
    if resolved is None:
        return "unknown"
    if resolved:
        return "resolved_by_escalation" if escalated else "resolved"
    return "failed"


# ---------------------------------------------------------------------------------------------- repeats


@dataclass(frozen=True)
class Span:
    """A stretch of a skeleton as one step: `length` calls from `start`, repeated `times` times
    (times 1: one plain call)."""

    start: int
    length: int
    times: int


def compress_skeleton(skeleton: Sequence[str]) -> list[Span]:
    """The skeleton's steps with every repeated sub-sequence as one repeat step: a block of two or
    more calls that follows itself directly (goto → open → goto → open) becomes one step "repeat
    goto → open, 2 times". The longest saving first, one level deep (a repeat holds plain calls)."""
    spans = [Span(i, 1, 1) for i in range(len(skeleton))]
    while True:
        best: tuple[int, int, int, int] | None = None  # (saving, index in spans, block length, times)
        for length in range(2, len(spans) // 2 + 1):
            for i in range(len(spans) - 2 * length + 1):
                block = spans[i:i + length]
                if any(s.times > 1 for s in block):
                    continue
                names = [skeleton[s.start] for s in block]
                times = 1
                while [skeleton[s.start] for s in spans[i + times * length:i + (times + 1) * length]] == names and all(
                    s.times == 1 for s in spans[i + times * length:i + (times + 1) * length]
                ):
                    times += 1
                if times > 1 and (best is None or (times - 1) * length > best[0]):
                    best = ((times - 1) * length, i, length, times)
        if best is None:
            return spans
        _, i, length, times = best
        spans[i:i + length * times] = [Span(spans[i].start, length, times)]


def compressed_length(skeleton: Sequence[str]) -> int:
    return len(compress_skeleton(skeleton))


# ---------------------------------------------------------------------------------------------- aggregation


def _pairs(skeleton: Skeleton) -> set[tuple[str, str]]:
    return {(skeleton[i], skeleton[j]) for i in range(len(skeleton)) for j in range(i + 1, len(skeleton)) if skeleton[i] != skeleton[j]}


def _before_first(skeleton: Skeleton) -> dict[str, frozenset[str]]:
    """tool → the tools called before its first call."""
    seen: list[str] = []
    result: dict[str, frozenset[str]] = {}
    for tool in skeleton:
        if tool not in result:
            result[tool] = frozenset(seen)
        seen.append(tool)
    return result


@dataclass(frozen=True)
class SkeletonFeatures:
    """What one reduced skeleton shows, computed once per distinct skeleton."""

    tools: frozenset[str]
    pairs: frozenset[tuple[str, str]]
    before_first: dict[str, frozenset[str]]
    always_before: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, skeleton: Skeleton) -> "SkeletonFeatures":
        before = _before_first(skeleton)
        return cls(
            tools=frozenset(skeleton), pairs=frozenset(_pairs(skeleton)), before_first=before,
            always_before=frozenset((a, b) for b, prefix in before.items() for a in prefix),
        )


@dataclass
class LabelStats:
    """Distinct-task counts of one label (successful or failed) of one intent.

    While streaming, a task is only counted by its skeleton (single_tasks) or by its set of
    skeletons (combination_tasks); finish() expands each into skeleton, tool, pair and order counts
    once, a feature counting once per task."""

    tasks: int = 0
    sessions: int = 0
    skeleton_tasks: Counter = field(default_factory=Counter)
    skeleton_sessions: Counter = field(default_factory=Counter)
    tool_tasks: Counter = field(default_factory=Counter)
    pair_tasks: Counter = field(default_factory=Counter)  # (A, B): A somewhere before B
    # (A, B): every session of the task that calls B calls A before its first B
    always_before_tasks: Counter = field(default_factory=Counter)
    single_tasks: Counter = field(default_factory=Counter)
    # tasks whose sessions took several skeletons, by the set of skeletons (bounded: beyond
    # COMBINATIONS_KEPT distinct sets in the whole aggregation, a task is counted one by one)
    combination_tasks: Counter = field(default_factory=Counter)

    def add_task(
        self, skeletons: Mapping[Skeleton, int], features: Callable[[Skeleton], SkeletonFeatures], budget: list[int] | None = None,
        tasks: int = 1,
    ) -> None:
        """`tasks` tasks whose sessions of this label took `skeletons` (reduced skeleton → sessions of
        one task). `budget`: how many more distinct skeleton sets the whole aggregation may keep
        (shared by every intent and label, so memory stays bounded whatever the number of tasks)."""
        self.tasks += tasks
        for skeleton, n in skeletons.items():
            self.sessions += n * tasks
            self.skeleton_sessions[skeleton] += n * tasks
        if len(skeletons) == 1:
            for skeleton in skeletons:
                self.single_tasks[skeleton] += tasks
            return
        combination = frozenset(skeletons)
        if combination in self.combination_tasks:
            self.combination_tasks[combination] += tasks
        elif budget is not None and budget[0] > 0:
            budget[0] -= 1
            self.combination_tasks[combination] = tasks
        else:
            self._add_combination(combination, tasks, features)

    def _add_combination(self, skeletons: Iterable[Skeleton], count: int, features: Callable[[Skeleton], SkeletonFeatures]) -> None:
        """A task (or `count` tasks) whose sessions of this label took several skeletons: each
        feature counts once per task."""
        tools: set[str] = set()
        pairs: set[tuple[str, str]] = set()
        before: dict[str, frozenset[str]] = {}
        for skeleton in skeletons:
            self.skeleton_tasks[skeleton] += count
            feats = features(skeleton)
            tools |= feats.tools
            pairs |= feats.pairs
            for tool, prefix in feats.before_first.items():
                before[tool] = before[tool] & prefix if tool in before else prefix
        for tool in tools:
            self.tool_tasks[tool] += count
        for pair in pairs:
            self.pair_tasks[pair] += count
        for b, prefix in before.items():
            for a in prefix:
                self.always_before_tasks[(a, b)] += count

    def finish(self, features: Callable[[Skeleton], SkeletonFeatures]) -> None:
        for skeleton, count in self.single_tasks.items():
            feats = features(skeleton)
            self.skeleton_tasks[skeleton] += count
            for tool in feats.tools:
                self.tool_tasks[tool] += count
            for pair in feats.pairs:
                self.pair_tasks[pair] += count
            for pair in feats.always_before:
                self.always_before_tasks[pair] += count
        for combination, count in self.combination_tasks.items():
            self._add_combination(combination, count, features)
        self.single_tasks.clear()
        self.combination_tasks.clear()

    def without_before(self, before: str, after: str) -> int:
        """Tasks where some session calls `after` with no `before` ahead of its first call."""
        return self.tool_tasks[after] - self.always_before_tasks[(before, after)]


@dataclass
class IntentStats:
    success: LabelStats = field(default_factory=LabelStats)
    failed: LabelStats = field(default_factory=LabelStats)
    outcomes: Counter = field(default_factory=Counter)  # sessions mined, by outcome
    held_outcomes: Counter = field(default_factory=Counter)  # sessions held back, by outcome
    too_few_calls: int = 0
    sessions: int = 0
    held_sessions: int = 0
    held_tasks: int = 0
    held_tasks_also_mined: int = 0
    # held-back sessions: reduced skeleton → [successful, failed]
    held: dict[Skeleton, list[int]] = field(default_factory=dict)
    # (label, reduced) → raw skeletons that reduce to it (for looking the sessions up again)
    raw_variants: dict[tuple[str, Skeleton], Counter] = field(default_factory=dict)

    @property
    def resolved_total(self) -> int:
        return self.success.tasks

    @property
    def failed_total(self) -> int:
        return self.failed.tasks

    def label(self, name: str) -> LabelStats:
        return self.success if name == SUCCESS else self.failed

    def count_held(self, reduced: Skeleton, resolved: bool | None, outcome: str, n: int) -> None:
        """`n` sessions of one task held back for the backtest."""
        self.held_sessions += n
        self.held_outcomes[outcome] += n
        if resolved is not None:
            counts = self.held.get(reduced)
            if counts is None:
                counts = self.held[reduced] = [0, 0]
            counts[0 if resolved else 1] += n

    def count_variant(self, label: str, reduced: Skeleton, raw: Skeleton, n: int) -> None:
        """`n` mined sessions whose raw skeleton `raw` reduces to `reduced`."""
        variants = self.raw_variants.get((label, reduced))
        if variants is None:
            variants = self.raw_variants[(label, reduced)] = Counter()
        variants[raw] += n


# What one stored session of a task is to the aggregator: (resolved, escalated, held back, raw skeleton, model).
SessionKey = tuple[bool | None, bool | None, bool, tuple[str, ...], str]
# The database's code of a session's outcome and held-back flag (library/mining/runs.py computes it in
# SQL): outcome 0 unknown, 1 resolved, 2 resolved by escalation, 3 failed; + 4 when held back.
LABELS: dict[int, tuple[bool | None, bool | None, bool]] = {
    code + (4 if held else 0): (resolved, escalated, held)
    for code, (resolved, escalated) in enumerate([(None, None), (True, False), (True, True), (False, False)])
    for held in (False, True)
}


class TaskStream:
    """What reads an agent's tasks: fed one task at a time (add_tasks), or many tasks of the same
    make-up at once (consume: the database groups tasks by the multiset of their sessions' (outcome,
    held back, skeleton, model), so a reader sees one row per distinct make-up instead of one per
    session). add() is the same for rows of single sessions ordered by (intent, task). Subclasses
    say what a task adds (add_tasks); call finish() after the last row."""

    def __init__(self, params: MiningParams):
        self.params = params
        self._current: tuple[Any, Any] | None = None
        self._buffer: Counter = Counter()
        self._reduced: dict[tuple[str, ...], tuple[Skeleton, bool]] = {}

    def _reduce(self, raw: tuple[str, ...]) -> tuple[Skeleton, bool]:
        """The mining skeleton of a raw one, and whether it has enough tool calls to be mined."""
        found = self._reduced.get(raw)
        if found is None:
            params = self.params
            found = self._reduced[raw] = (
                skeleton_function(params)(raw, params.ignored_tools, params.terminal_tools),
                tool_call_count(raw, params.ignored_tools) >= params.min_tool_calls,
            )
        return found

    def add(
        self, *, intent: Any, task: Any, resolved: bool | None, escalated: bool | None, raw_skeleton: Sequence[str],
        count: int = 1, held: bool = False, model: str = "",
    ) -> None:
        """`count` sessions of one task; rows of one task must be consecutive."""
        key = (intent, task)
        if key != self._current:
            self._flush()
            self._current = key
        raw = raw_skeleton if isinstance(raw_skeleton, tuple) else tuple(raw_skeleton)
        self._buffer[(resolved, bool(escalated) if resolved else None if resolved is None else False, held, raw, model or "")] += count

    def _flush(self) -> None:
        if self._buffer:
            self.add_tasks(self._current[0], self._buffer)
        self._buffer = Counter()

    def consume(self, rows: Iterable[Sequence[Any]], decode: Callable[[Any], tuple[str, ...]]):
        """add_tasks() for every (intent, session labels, session skeleton keys[, session models],
        tasks) row: `tasks` tasks of the intent whose sessions are, one each, the pairs of (LABELS
        code, skeleton key[, model]); `decode` turns a key into the raw skeleton (called once per
        distinct key)."""
        self._flush()
        raws: dict[Any, tuple[str, ...]] = {}
        for row in rows:
            intent, labels, keys, tasks = row[0], row[1], row[2], row[-1]
            models = row[3] if len(row) > 4 else None
            sessions: Counter = Counter()
            for i, (code, key) in enumerate(zip(labels, keys)):
                raw = raws.get(key)
                if raw is None:
                    raw = raws[key] = decode(key)
                sessions[(*LABELS[code], raw, (models[i] or "") if models is not None else "")] += 1
            self.add_tasks(intent, sessions, tasks)
        return self

    def add_tasks(self, intent: Any, sessions: Mapping[SessionKey, int], tasks: int = 1) -> None:
        raise NotImplementedError

    def finish(self):
        self._flush()
        self._current = None
        return self


class Aggregator(TaskStream):
    """Counts distinct tasks by (intent, label, skeleton) and by tool, pair and order feature.
    Memory grows with distinct skeletons and tools, not with sessions or tasks."""

    def __init__(self, params: MiningParams):
        super().__init__(params)
        self.intents: dict[Any, IntentStats] = {}
        self.sessions = 0
        self.without_intent = 0
        self.without_outcome = 0
        self.too_few_calls = 0
        self.held_back = 0
        self.outcomes: Counter = Counter()
        self._features: dict[Skeleton, SkeletonFeatures] = {}
        self._combinations = [COMBINATIONS_KEPT]
        # the within-task tables of the groups tested (within.TaskTables, a second reading)
        self.within: Any = None

    def features(self, skeleton: Skeleton) -> SkeletonFeatures:
        found = self._features.get(skeleton)
        if found is None:
            found = self._features[skeleton] = SkeletonFeatures.of(skeleton)
        return found

    def add_tasks(self, intent: Any, sessions: Mapping[SessionKey, int], tasks: int = 1) -> None:
        """`tasks` tasks of `intent`, each with `sessions`: (resolved, escalated, held back, raw
        skeleton) → how many of its sessions."""
        total = sum(sessions.values()) * tasks
        self.sessions += total
        self.without_outcome += sum(n for (resolved, *_), n in sessions.items() if resolved is None) * tasks
        if intent is None:
            self.without_intent += total
            return
        stats = self.intents.get(intent)
        if stats is None:
            stats = self.intents[intent] = IntentStats()
        success: dict[Skeleton, int] = {}
        failed: dict[Skeleton, int] = {}
        held_any = mined_any = False
        for (resolved, escalated, held, raw, *_), per_task in sessions.items():
            n = per_task * tasks
            reduced, enough = self._reduce(raw)
            outcome = outcome_of(resolved, escalated)
            if held:
                stats.count_held(reduced, resolved, outcome, n)
                self.held_back += n
                held_any = True
                continue
            stats.sessions += n
            if not enough:
                stats.too_few_calls += n
                self.too_few_calls += n
                continue
            stats.outcomes[outcome] += n
            self.outcomes[outcome] += n
            if resolved is None:
                continue
            mined_any = True
            label, target = (SUCCESS, success) if resolved else (FAILED, failed)
            target[reduced] = target.get(reduced, 0) + per_task
            stats.count_variant(label, reduced, raw, n)
        if success:
            stats.success.add_task(success, self.features, self._combinations, tasks)
        if failed:
            stats.failed.add_task(failed, self.features, self._combinations, tasks)
        if held_any:
            stats.held_tasks += tasks
            stats.held_tasks_also_mined += tasks if mined_any else 0

    def finish(self) -> "Aggregator":
        super().finish()
        for stats in self.intents.values():
            stats.success.finish(self.features)
            stats.failed.finish(self.features)
        return self

    def counts(self) -> dict[str, int]:
        return {
            "sessions": self.sessions,
            "withoutIntent": self.without_intent,
            "withoutOutcome": self.without_outcome,
            "tooFewToolCalls": self.too_few_calls,
            "heldBack": self.held_back,
            **outcome_counts(self.outcomes),
            "intents": len(self.intents),
            "groups": sum(len(s.success.skeleton_tasks) for s in self.intents.values()),
        }


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
    # the gate: followers vs other sessions within tasks (within.TaskTables, statistics.within_task)
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
            reason = f"the largest group has {n} distinct task(s); the support threshold is {params.support_threshold}"
            report.append({"intent": intent, "status": Status.BELOW_THRESHOLD, "reason": reason,
                           "figures": {**figures, "topSkeleton": list(top), "topSupport": n}})
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
    for intent, groups in eligible.items():
        stats = aggregator.intents[intent]
        tested = [(s, n, within.gate(intent, s, tests=tests, alpha=params.significance_level)) for s, n in groups]
        credible = [entry for entry in tested if entry[2]["credible"]]
        skeleton, support, gate = (credible or tested)[0]
        workflow = step_count(skeleton) > params.max_steps
        chosen.append(GroupChoice(
            intent=intent, skeleton=skeleton, support=support, support_sessions=stats.success.skeleton_sessions[skeleton],
            test=skeleton_test(stats, skeleton, tests=tests, alpha=params.significance_level),
            proposed=bool(credible) and not workflow, alternatives=[(s, n) for s, n, _ in tested if s != skeleton],
            within={
                "gate": gate,
                "orderBeyondTools": within.order_beyond_tools(intent, skeleton, alpha=params.significance_level),
                "byModelFamily": within.families(intent, skeleton, alpha=params.significance_level),
                "held": within.table(intent, skeleton, "held"),
                "heldOrderBeyondTools": within.order_beyond_tools(intent, skeleton, alpha=params.significance_level, held=True),
            },
            workflow=workflow,
        ))
    return chosen, report


def skeleton_test(stats: IntentStats, skeleton: Skeleton, *, tests: int, alpha: float) -> dict[str, Any]:
    return stats_contrast(
        stats.success.skeleton_tasks[skeleton], stats.success.tasks, stats.failed.skeleton_tasks[skeleton], stats.failed.tasks,
        tests=tests, alpha=alpha,
    )


def stats_contrast(a: int, n_a: int, b: int, n_b: int, *, tests: int = 1, alpha: float = 0.05) -> dict[str, Any]:
    return {
        "resolved": a, "resolvedOf": n_a, "failed": b, "failedOf": n_b,
        "resolvedRate": st.rate(a, n_a), "failedRate": st.rate(b, n_b),
        **st.contrast(a, n_a, b, n_b, tests=tests, alpha=alpha),
    }


def outcome_counts(outcomes: Mapping[str, int]) -> dict[str, int]:
    """The labelled outcomes of a count of sessions, as the run's counts and figures name them."""
    return {
        "resolved": outcomes["resolved"],
        "resolvedByEscalation": outcomes["resolved_by_escalation"],
        "failed": outcomes["failed"],
    }


def intent_figures(stats: IntentStats) -> dict[str, Any]:
    return {
        "sessions": stats.sessions + stats.held_sessions,
        "mined": stats.sessions,
        "heldBack": stats.held_sessions,
        "tooFewToolCalls": stats.too_few_calls,
        **outcome_counts(stats.outcomes),
        "unknown": stats.outcomes["unknown"],
        "resolvedTasks": stats.success.tasks,
        "failedTasks": stats.failed.tasks,
    }


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
    skeleton_pairs = _pairs(skeleton)
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
        for after in skeleton[i + 1:]:
            if before == after or (before, after) in seen:
                continue
            seen.add((before, after))
            candidates.append(("after_without_before", after, before, failed.without_before(before, after), success.without_before(before, after)))
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


def backtest(stats: IntentStats, skeleton: Skeleton, params: MiningParams, held_tables: Mapping[st.Table, int] | None = None) -> dict[str, Any]:
    """Success of the held-back sessions that follow the candidate (its steps in order, other calls
    in between allowed) vs those that do not, by the gate's own estimator (statistics.within_task:
    within tasks, single-session tasks pooled), from `held_tables` (within.TaskTables' "held"
    kind). Without them (a caller that has only the first reading) the held-back sessions are one
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
        result.update(verdict="inconclusive", contradicted=False, pValue=None,
                      note="no held-back session follows it" if not followers["of"] else "every held-back session follows it")
        return result
    ratio = st.ratio_number(record)
    if ratio is None:
        result.update(verdict="inconclusive", contradicted=False, pValue=None,
                      note="no task has both followers and other sessions to compare")
        return result
    contradicted = ratio < 1
    supports = record["pValue"] < params.significance_level and st.holds(record)
    verdict = "contradicts" if contradicted else ("supports" if supports else "inconclusive")
    result.update(verdict=verdict, contradicted=contradicted, pValue=record["pValue"], riskRatio=record["riskRatio"], low=record["low"], high=record["high"])
    return result


def agreement(gate: Mapping[str, Any], back: Mapping[str, Any]) -> dict[str, Any]:
    """Whether the gate and the backtest (the same estimator on other sessions) agree; the candidate
    page says so when they do not."""
    credible, verdict = bool(gate.get("credible")), back.get("verdict")
    agree = (credible and verdict == "supports") or (not credible and verdict != "supports")
    if agree:
        text = "The gate and the backtest agree."
    elif credible:
        text = (f"The gate and the backtest disagree: the mined sessions show the order credibly (risk ratio "
                f"{gate.get('riskRatio')}), the held-back sessions do not confirm it ({verdict}).")
    else:
        text = ("The gate and the backtest disagree: the held-back sessions support the order, the mined sessions "
                "did not show it credibly.")
    return {"agree": agree, "gate": "credible" if credible else "not credible", "backtest": verdict, "text": text}


# ---------------------------------------------------------------------------------------------- drafting


def _snake(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_") or "value"


def reduced_calls(excerpt: Sequence[Mapping[str, Any]], ignored: Iterable[str], terminal: Iterable[str] = DEFAULT_TERMINAL_TOOLS) -> tuple[Skeleton, list[Mapping[str, Any]]]:
    """A session excerpt's reduced skeleton and, per step, the excerpt entry of its first call (args,
    and the summary of its result where the store kept one)."""
    ignored_set, terminal_set = set(ignored), set(terminal)
    entries: list[Mapping[str, Any]] = []
    names: list[str] = []
    for entry in excerpt:
        if entry.get("role") != "tool_call":
            continue
        name = entry.get("tool")
        if name in ignored_set:
            continue
        if names and names[-1] == name:
            continue
        names.append(name)
        entries.append(entry)
        if name in terminal_set:
            break
    return tuple(names), entries


def calls_by_step(excerpt: Sequence[Mapping[str, Any]], skeleton: Skeleton, ignored: Iterable[str], terminal: Iterable[str] = DEFAULT_TERMINAL_TOOLS) -> list[dict[str, Any]] | None:
    """The args of the first call of each skeleton step in one session's excerpt, or None when the
    excerpt does not reduce to `skeleton` (e.g. it was cut short)."""
    names, entries = reduced_calls(excerpt, ignored, terminal)
    if names != skeleton:
        return None
    return [entry.get("args") if isinstance(entry.get("args"), Mapping) else {} for entry in entries]


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


def splits_of(stats: IntentStats, skeleton: Skeleton, *, min_tasks: int = 2, limit: int = 3) -> list[tuple[Split, bool]]:
    """The successful variants of the intent that add one step to the candidate's skeleton (after
    a step of it) or leave one of its steps out (not the first), each with at least `min_tasks`
    distinct tasks, the largest first: (split, whether the candidate is the variant with the step)."""
    found: list[tuple[int, Split, bool]] = []
    for other, tasks in stats.success.skeleton_tasks.items():
        if tasks < min_tasks or abs(len(other) - len(skeleton)) != 1:
            continue
        longer, shorter, candidate_longer = (other, skeleton, False) if len(other) > len(skeleton) else (skeleton, other, True)
        for i in range(1, len(longer)):
            if longer[:i] + longer[i + 1:] == shorter and longer[i] != longer[i - 1]:
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
    *, alpha: float, min_tasks: int = 2,
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
            "ifTool": split.after, "key": key, "value": value, "thenTool": split.tool,
            "withStep": st.rate(a, n_a), "withoutStep": st.rate(b, n_b),
            "pValue": test["pValue"], "pAdjusted": test["pAdjusted"], "tests": test["tests"],
            "proposed": bool(test["pAdjusted"] < alpha and a >= min_tasks and n_b > 0),
            "withSkeleton": list(split.with_skeleton), "withoutSkeleton": list(split.without_skeleton),
        }
        best = records.get(split)
        if best is None or (record["pValue"], -a, key, str(value)) < (best["pValue"], -best["withStep"]["count"], best["key"], str(best["value"])):
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


def condition_text(record: Mapping[str, Any], call: str) -> str:
    value = record["value"]
    shown = ("true" if value else "false") if isinstance(value, bool) else f"'{value}'"
    return f"If {record['ifTool']} returns {record['key']} = {shown}, call {call}."


def first_call_args(excerpt: Sequence[Mapping[str, Any]], tool: str) -> Mapping[str, Any] | None:
    for entry in excerpt:
        if entry.get("role") == "tool_call" and entry.get("tool") == tool:
            args = entry.get("args")
            return args if isinstance(args, Mapping) else {}
    return None


def _arg_order(key: str) -> tuple[bool, str]:
    snake = _snake(key)
    return (not (snake == "id" or snake.endswith("_id")), snake)


GENERIC_KEYS = {"value", "values", "arg", "args", "input", "text", "query", "q", "id", "data", "param", "params"}
VALUE_TYPES = [
    (re.compile(r"^\{\{([a-z_]+)\}\}$"), None),  # a redaction placeholder keeps its own type
    (re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.I), "email_address"),
    (re.compile(r"^\d{4}-\d{2}-\d{2}"), "date"),
    (re.compile(r"^[A-Z]{3}$"), "code"),
    (re.compile(r"^-?\d+(\.\d+)?$"), "number"),
]


def is_safe_literal(value: Any) -> bool:
    """A value a step may name literally: a word or short phrase, not id-shaped (no digits, not an
    all-caps code, not a redaction placeholder)."""
    return (
        isinstance(value, str)
        and bool(SAFE_LITERAL_RE.match(value))
        and not ALL_CAPS_RE.match(value)
        and not PLACEHOLDER_RE.match(value)
    )


def placeholder_for(key: str, values: Sequence[Any]) -> str:
    """The typed placeholder of an argument: by key when the key says what it is (reservation_id,
    contract_ref, first_name), else by the pattern of its values (a redaction placeholder's own type,
    an e-mail address, a date, a code, a number, else "value")."""
    snake = _snake(key)
    if snake not in GENERIC_KEYS:
        return "{{" + snake + "}}"
    for value in values:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            continue
        text = str(value)
        for pattern, label in VALUE_TYPES:
            match = pattern.match(text)
            if match:
                return "{{" + (label or match.group(1)) + "}}"
    return "{{" + ("id" if snake == "id" else "value") + "}}"


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else repr(value)


def generalise_args(samples: Sequence[tuple[Any, Mapping[str, Any]]], literal_share: float = 0.8, min_tasks: int = 2) -> list[tuple[str, str]]:
    """(key, rendered value) for the most common argument keys of one step across sessions, from
    (task, args) samples. A value stays literal only when it is a safe literal (is_safe_literal) and
    shared by at least `literal_share` of the distinct tasks and by at least `min_tasks` of them;
    everything else becomes a typed placeholder (placeholder_for)."""
    if not samples:
        return []
    # Argument order: ids first, then alphabetical. Not the call's own order, because PostgreSQL's
    # jsonb does not keep key order and the same sessions must give the same draft on every database.
    key_sets = Counter(tuple(sorted(args.keys(), key=_arg_order)) for _, args in samples)
    keys = sorted(key_sets.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    rendered: list[tuple[str, str]] = []
    for key in keys:
        tasks_by_value: dict[Any, set] = {}
        tasks: set = set()
        values: list[Any] = []
        for task, args in samples:
            if key in args:
                value = _hashable(args[key])
                values.append(value)
                tasks.add(task)
                tasks_by_value.setdefault(value, set()).add(task)
        common, common_tasks = max(tasks_by_value.items(), key=lambda kv: (len(kv[1]), str(kv[0])), default=(None, set()))
        shared = len(common_tasks) / max(1, len(tasks)) >= literal_share
        if isinstance(common, str) and PLACEHOLDER_RE.match(common) and shared:
            rendered.append((key, common))  # redaction already typed it ({{email_address}})
        elif is_safe_literal(common) and len(common_tasks) >= min_tasks and shared:
            rendered.append((key, f"'{common}'"))
        else:
            rendered.append((key, placeholder_for(key, values)))
    return rendered


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
            records.append({
                "step": position + 1, "tool": tool, "key": key, "value": value,
                "resolved": a, "resolvedOf": len(success_all), "failed": b, "failedOf": len(failed_all),
                "resolvedRate": st.rate(a, len(success_all)), "failedRate": st.rate(b, len(failed_all)),
                "pValue": float(f"{p:.4g}"), "separates": p < alpha,
            })
    records.sort(key=lambda r: (r["pValue"], r["step"], r["key"], str(r["value"])))
    return records[:limit]


_VERBS = {"lookup": "look up", "fetch": "fetch", "get": "get", "find": "find"}
_REPLY_VERBS = {"reply", "respond", "answer", "tell", "notify", "message"}
_PREPOSITIONS = {"to", "for", "from", "on", "in", "with", "by", "at", "of", "about"}


def tool_words(tool: str) -> list[str]:
    """lookupOrder → [lookup, order]; get_user_details → [get, user, details]."""
    spaced = re.sub(r"(?<=[a-z0-9])([A-Z])", r" \1", tool).replace("_", " ").replace("-", " ").replace(".", " ")
    return [word.lower() for word in spaced.split()]


def step_text(tool: str, call: str) -> str:
    """An imperative step that names the tool: "Look up the order with lookupOrder({{order_id}})."."""
    words = tool_words(tool)
    if len(words) < 2:
        return f"Call {call}."
    verb, rest = words[0], words[1:]
    if verb in _REPLY_VERBS:
        return f"Reply to the customer with {call}."
    phrase = " ".join(rest)
    if rest[0] not in _PREPOSITIONS:
        phrase = "the " + phrase
    verb_text = _VERBS.get(verb, verb)
    return f"{verb_text[0].upper() + verb_text[1:]} {phrase} with {call}."


def render_call(tool: str, args: list[tuple[str, str]], *, literals_only: bool = False) -> str:
    shown = [value for _, value in args if not literals_only or value.startswith("'")]
    if literals_only and not shown:
        return tool
    return f"{tool}({', '.join(shown)})"


def procedure_key_for(intent_name: str) -> str:
    """refund_over_limit → refund.over_limit; cancel_reservation-update_reservation_flights →
    cancel.reservation_update_reservation_flights; a one-word intent gets `.main`."""
    name = re.sub(r"[^a-z0-9_]+", "_", intent_name.lower()).strip("_") or "intent"
    if not name[0].isalpha():
        name = "i" + name
    head, _, tail = name.partition("_")
    return f"{head}.{tail}" if tail else f"{head}.main"


def applies_when_for(intent_name: str, description: str = "") -> str:
    description = " ".join((description or "").split()).rstrip(".")
    if description:
        return f"The customer asks for {description[0].lower() + description[1:]}."
    if intent_name.startswith("no_"):  # a label for what the task does not need (tau-bench's no_write_action)
        return f"The customer's request needs {intent_name.replace('_', ' ')} (intent {intent_name})."
    phrase = " and ".join(part.replace("_", " ") for part in intent_name.split("-"))
    return f"The customer asks to {phrase} (intent {intent_name})."


def _interval(record: Mapping[str, Any]) -> str:
    low, high = record.get("liftLow"), record.get("liftHigh")
    lift = record.get("lift")
    lift_text = "∞" if lift == "inf" else (f"{lift:.2f}" if isinstance(lift, (int, float)) else "n/a")
    low_text = f"{low:.2f}" if isinstance(low, (int, float)) else "0"
    high_text = f"{high:.2f}" if isinstance(high, (int, float)) else "∞"
    return f"lift {lift_text} (95 % {low_text}–{high_text}), p = {record.get('pValue', 1):.3g}"


def _ratio_text(record: Mapping[str, Any]) -> str:
    ratio, low, high = st.ratio_number(record), record.get("low"), record.get("high")
    if ratio is None:
        return "risk ratio not defined"
    return ("risk ratio ∞" if ratio == float("inf") else f"risk ratio {ratio:.2f}") + f" (95 % {low if low is not None else 0:.2f}–" + (f"{high:.2f})" if isinstance(high, (int, float)) else "∞)")


def _summary(result: Contrast, group: GroupChoice, back: Mapping[str, Any], params: MiningParams) -> str:
    """One paragraph for reviewers: the skeleton's support in distinct tasks, the gate (followers vs
    the other sessions within tasks), what the order adds beyond the tools, and the backtest."""
    skeleton = group.skeleton
    gate = group.within.get("gate") or {}
    text = (
        f"{result.support} of {result.resolved_total} resolved tasks followed {' → '.join(skeleton)}; "
        f"{result.failed_with_skeleton} of {result.failed_total} failed tasks did."
    )
    if gate:
        f, o = gate["followers"], gate["others"]
        text += (
            f" Within tasks, {f['count']} of {f['of']} sessions that follow it succeeded vs {o['count']} of {o['of']} that do not "
            f"({_ratio_text(gate)}, {gate['tests']} skeleton(s) tested, adjusted p = {gate['pAdjusted']:.3g})."
        )
    if group.workflow:
        text += (f" With its repeats as one step each it still has {step_count(skeleton)} steps, more than {params.max_steps}: "
                 "a workflow, it belongs in code: reported, not proposed.")
    elif not group.proposed:
        text += " The tool order does not credibly explain the outcome: reported, not proposed."
    steps = [t for t in result.tools if t["inSkeleton"]]
    if steps and result.failed_total:
        key = sorted(steps, key=lambda t: (t["pValue"], t["tool"]))[0]
        if st.lift_number(key) > 1.0:
            text += (
                f" {key['tool']} was called in {key['resolved']} of {result.resolved_total} resolved and "
                f"{key['failed']} of {result.failed_total} failed tasks ({_interval(key)})."
            )
    beyond = group.within.get("orderBeyondTools") or {}
    if beyond.get("order"):
        order = beyond["order"]
        text += (
            f" Among sessions that call all its tools, {order['followers']['count']} of {order['followers']['of']} in this order succeeded vs "
            f"{order['others']['count']} of {order['others']['of']} in another ({_ratio_text(order)})"
            + (": a tool list, not an order." if beyond.get("toolList") else ".")
        )
    followers, others = back["followers"], back["others"]
    if followers["of"] and others["of"]:
        text += (
            f" Backtest on the {back['heldBackSessions']} held-back sessions: {followers['count']} of {followers['of']} "
            f"sessions that follow it succeeded vs {others['count']} of {others['of']} that do not ({back['verdict']})."
        )
    else:
        text += f" Backtest: {back.get('note', 'no held-back sessions')}."
    return text


def compressed_steps(skeleton: Skeleton, steps: Sequence[str]) -> list[str]:
    """The step texts with each repeated block (within.compress_skeleton) as one step: "Repeat 2
    times: goto(…), then open(…)." (the calls of the first pass, in order)."""
    out: list[str] = []
    for span in compress_skeleton(skeleton):
        if span.times == 1:
            out.append(steps[span.start])
            continue
        calls = [steps[i].rstrip(".") for i in range(span.start, span.start + span.length)]
        calls = [c[0].lower() + c[1:] if c else c for c in calls]
        out.append(f"Repeat {span.times} times: " + ", then ".join(calls) + ".")
    return out


@dataclass
class Draft:
    key: str
    applies_when: str
    steps: list[str]
    required_tools: list[str]
    forbidden_actions: list[str]
    evidence: dict[str, Any]
    skeleton: list[str]
    proposed: bool = True
    # a coding procedure's contract (library/coding/procedures.py); empty for tool agents
    preconditions: list[str] = field(default_factory=list)
    postconditions: list[str] = field(default_factory=list)
    verify_command: str = ""

    def content(self) -> dict[str, Any]:
        """The procedure content it proposes, as `procedure_propose` takes it."""
        return {
            "applies_when": self.applies_when, "steps": self.steps, "required_tools": self.required_tools,
            "forbidden_actions": self.forbidden_actions, "skeleton": self.skeleton, "preconditions": self.preconditions,
            "postconditions": self.postconditions, "verify_command": self.verify_command,
        }


def _variants(stats: IntentStats, group: GroupChoice) -> list[dict[str, Any]]:
    """The other successful ways of the intent at threshold, side by side with the candidate: their
    support and outcomes, and how they differ (an extra step taken only sometimes, or another order)."""
    result = []
    for skeleton, support in group.alternatives:
        extra = [t for t in skeleton if t not in group.skeleton]
        missing = [t for t in group.skeleton if t not in skeleton]
        if is_subsequence(group.skeleton, skeleton):
            differs = "adds " + ", ".join(extra)
        elif is_subsequence(skeleton, group.skeleton):
            differs = "leaves out " + ", ".join(missing)
        else:
            differs = "another order" if not extra and not missing else (
                "; ".join(filter(None, ["adds " + ", ".join(extra) if extra else "", "leaves out " + ", ".join(missing) if missing else ""]))
            )
        result.append({
            "skeleton": list(skeleton), "support": support, "supportSessions": stats.success.skeleton_sessions[skeleton],
            "failedTasks": stats.failed.skeleton_tasks[skeleton], "differs": differs,
        })
    return result


def draft_candidate(
    *,
    intent_name: str,
    intent_description: str,
    group: GroupChoice,
    stats: IntentStats,
    params: MiningParams,
    step_samples: Sequence[tuple[Any, Sequence[Mapping[str, Any]]]],
    failed_samples: Mapping[str, Sequence[tuple[Any, Mapping[str, Any]]]],
    session_ids: Sequence[str],
    excerpts: Sequence[tuple[str, Any]],
    counts: Mapping[str, Any],
    branches: Sequence[Branch] = (),
) -> Draft:
    """The candidate record, by rules only: the same inputs always give the same draft. Steps are
    the skeleton's calls in order and nothing else (no filler; the skeleton already ends at a
    terminal call).

    step_samples: per successful session of the group, (task, the args of each skeleton step);
    failed_samples: tool → (task, args of that tool's first call) in failed sessions of the intent;
    branches: the successful variants that add or leave out one step (splits_of), with the result
    summaries of the step before it: where a looked-up value separates them, the step becomes
    conditional ("If lookupOrder returns shipping = 'express', call refundShipping(…).")."""
    skeleton = group.skeleton
    result = contrast(stats, group, params)
    steps: list[str] = []
    for position, tool in enumerate(skeleton):
        samples = [(task, sample[position]) for task, sample in step_samples if position < len(sample)]
        steps.append(step_text(tool, render_call(tool, generalise_args(samples, params.literal_share, params.min_literal_tasks))))
    required_tools = list(dict.fromkeys(skeleton))
    compressed = len(skeleton) > params.max_steps
    if compressed:
        # past the step cap, a repeated block of calls is one step (the skeleton itself stays whole)
        steps = compressed_steps(skeleton, steps)
        branches = ()  # a conditional step names a position of the uncompressed steps
    conditions = condition_tests([(b.split, b.with_results, b.without_results) for b in branches], alpha=params.significance_level)
    branch_of = {repr(list(b.split.with_skeleton)): b for b in branches}
    # (index in the candidate's steps, whether the candidate takes the step, record, text)
    changes: list[tuple[int, bool, dict[str, Any], str]] = []
    for record in conditions:
        branch = branch_of[repr(record["withSkeleton"])]
        record["step"] = None
        if not record["proposed"] or any(r["thenTool"] == record["thenTool"] for _, _, r, _ in changes):
            continue
        args = branch.then_args
        if branch.candidate_has_step:
            args = [(task, sample[branch.split.position]) for task, sample in step_samples if branch.split.position < len(sample)]
        call = render_call(branch.split.tool, generalise_args(args, params.literal_share, params.min_literal_tasks))
        changes.append((branch.split.position, branch.candidate_has_step, record, condition_text(record, call)))
    # the candidate takes the step: that step becomes conditional; it does not: the conditional
    # step is added after the step it follows. From the last index, so that earlier ones stay right.
    for index, replace_step, record, text in sorted(changes, key=lambda c: (-c[0], not c[1])):
        if replace_step:
            steps[index] = text
        else:
            steps.insert(index, text)
            if record["thenTool"] not in required_tools:
                required_tools.append(record["thenTool"])
    for _, _, record, text in changes:
        record["step"] = steps.index(text) + 1
    forbidden_actions: list[str] = []
    forbidden_evidence: list[dict[str, Any]] = []
    proposed_features = {id(f) for f in result.forbidden}
    for feature in sorted(result.features, key=lambda f: (f.test["pValue"], f.tool, f.before or "")):
        proposed = id(feature) in proposed_features
        text = None
        if proposed:
            call = render_call(feature.tool, generalise_args(failed_samples.get(feature.tool, []), params.literal_share, params.min_literal_tasks), literals_only=True)
            text = f"Do not call {call} for this task." if feature.kind == "tool" else f"Do not call {call} before {feature.before}."
            forbidden_actions.append(text)
        if proposed or len(forbidden_evidence) < 8:
            t = feature.test
            forbidden_evidence.append({
                "action": text, "feature": feature.describe(), "proposed": proposed,
                "resolved": feature.resolved, "failed": feature.failed,
                "resolvedRate": t["failedRate"], "failedRate": t["resolvedRate"],
                "failLift": t["lift"], "failLiftLow": t["liftLow"], "failLiftHigh": t["liftHigh"],
                "pValue": t["pValue"], "pAdjusted": t["pAdjusted"], "tests": t["tests"],
            })
    back = backtest(stats, skeleton, params, group.within.get("held"))
    test = group.test
    gate = group.within.get("gate") or {}
    evidence: dict[str, Any] = {
        "intent": intent_name,
        "skeleton": list(skeleton),
        "unit": "distinct tasks",
        "proposed": group.proposed,
        "support": result.support,
        "supportSessions": group.support_sessions,
        "resolved": result.resolved_total,
        "resolvedSessions": stats.success.sessions,
        "failed": result.failed_total,
        "failedSessions": stats.failed.sessions,
        "failedWithSkeleton": result.failed_with_skeleton,
        "supportRate": test["resolvedRate"],
        "failedWithSkeletonRate": test["failedRate"],
        "skeletonLift": test["lift"],
        "skeletonLiftLow": test["liftLow"],
        "skeletonLiftHigh": test["liftHigh"],
        "skeletonTest": test,
        "outcomes": intent_figures(stats),
        "tools": result.tools,
        "pairs": result.pairs,
        "forbidden": forbidden_evidence,
        "arguments": argument_contrast(skeleton, step_samples, failed_samples, alpha=params.significance_level),
        "variants": _variants(stats, group),
        "conditions": conditions,
        "alternatives": [{"skeleton": list(s), "support": n} for s, n in group.alternatives],
        "backtest": back,
        "withinTask": gate,
        "orderBeyondTools": group.within.get("orderBeyondTools") or {},
        "heldOrderBeyondTools": group.within.get("heldOrderBeyondTools") or {},
        "byModelFamily": group.within.get("byModelFamily") or [],
        "agreement": agreement(gate, back),
        "stepsCompressed": compressed,
        "workflow": group.workflow,
        "sessionIds": list(session_ids),
        "excerpts": [{"sessionId": sid, "excerpt": excerpt} for sid, excerpt in excerpts],
        "summary": _summary(result, group, back, params),
        **{f"run{k[0].upper()}{k[1:]}": v for k, v in counts.items()},
    }
    return Draft(
        key=procedure_key_for(intent_name),
        applies_when=applies_when_for(intent_name, intent_description),
        steps=steps,
        required_tools=required_tools,
        forbidden_actions=forbidden_actions,
        evidence=evidence,
        skeleton=list(skeleton),
        proposed=group.proposed,
    )


def report_entry(intent_name: str, status: str, reason: str, draft: Draft | None = None, figures: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One line of a run's report. A reported (not proposed) draft keeps its steps and statistics
    so a reviewer sees what the sessions would have said."""
    entry: dict[str, Any] = {"intent": intent_name, "status": status, "reason": reason, "figures": dict(figures or {})}
    if draft is not None:
        ev = draft.evidence
        entry.update(
            skeleton=draft.skeleton,
            steps=draft.steps,
            forbiddenActions=draft.forbidden_actions,
            figures={**ev["outcomes"], "support": ev["support"], "supportSessions": ev["supportSessions"],
                     "failedWithSkeleton": ev["failedWithSkeleton"]},
            skeletonTest=ev["skeletonTest"],
            withinTask=ev.get("withinTask") or {},
            orderBeyondTools=ev.get("orderBeyondTools") or {},
            toolList=bool((ev.get("orderBeyondTools") or {}).get("toolList")),
            agreement=ev.get("agreement") or {},
            backtest=ev["backtest"],
            summary=ev["summary"],
        )
        if draft.verify_command:  # a coding group's contract, so a reported one still shows it
            entry.update(verifyCommand=draft.verify_command, preconditions=draft.preconditions, postconditions=draft.postconditions)
        if status == Status.REPORTED:
            # the whole draft, so that a reviewer can still propose it (runs.mining_report_propose)
            entry["draft"] = asdict(draft)
    return entry

