"""The skeleton miner's core (pure Python, no Django): what a skeleton is, and the first reading of
an agent's tasks, which counts distinct tasks by skeleton, tool, pair and order feature.
library/mining/mining_runs.py feeds it from the database; the rest of the pure core builds on it:
groups.py (the groups tested and the gate's choice), within.py (the second reading: followers vs
the other sessions within tasks), evidence.py (the statistics behind a candidate: feature contrast,
backtest, argument and conditional-step tests), arguments.py (which argument values a step may
name), drafting.py (the deterministic draft and the run report). docs (mining) explain the evidence
to reviewers.

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
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from ..coding.procedures import coding_skeleton

Skeleton = tuple[str, ...]
SUCCESS, FAILED = "success", "failed"
COMBINATIONS_KEPT = 20_000
DEFAULT_TERMINAL_TOOLS = (
    "transfer_to_human_agents",
    "transfer_to_human",
    "escalate_to_human",
    "FINISH",
    "finish",
    "end_session",
)


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


def reduce_skeleton(
    tools: Iterable[str], ignored: Iterable[str] = ("think",), terminal: Iterable[str] = DEFAULT_TERMINAL_TOOLS
) -> Skeleton:
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


def skeleton_function(params: MiningParams) -> SkeletonFunction:
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
                block = spans[i : i + length]
                if any(s.times > 1 for s in block):
                    continue
                names = [skeleton[s.start] for s in block]
                times = 1
                while [
                    skeleton[s.start] for s in spans[i + times * length : i + (times + 1) * length]
                ] == names and all(s.times == 1 for s in spans[i + times * length : i + (times + 1) * length]):
                    times += 1
                if times > 1 and (best is None or (times - 1) * length > best[0]):
                    best = ((times - 1) * length, i, length, times)
        if best is None:
            return spans
        _, i, length, times = best
        spans[i : i + length * times] = [Span(spans[i].start, length, times)]


def compressed_length(skeleton: Sequence[str]) -> int:
    return len(compress_skeleton(skeleton))


# ---------------------------------------------------------------------------------------------- aggregation


def pairs_of(skeleton: Skeleton) -> set[tuple[str, str]]:
    return {
        (skeleton[i], skeleton[j])
        for i in range(len(skeleton))
        for j in range(i + 1, len(skeleton))
        if skeleton[i] != skeleton[j]
    }


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
    def of(cls, skeleton: Skeleton) -> SkeletonFeatures:
        before = _before_first(skeleton)
        return cls(
            tools=frozenset(skeleton),
            pairs=frozenset(pairs_of(skeleton)),
            before_first=before,
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
        self,
        skeletons: Mapping[Skeleton, int],
        features: Callable[[Skeleton], SkeletonFeatures],
        budget: list[int] | None = None,
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

    def _add_combination(
        self, skeletons: Iterable[Skeleton], count: int, features: Callable[[Skeleton], SkeletonFeatures]
    ) -> None:
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
# The database's code of a session's outcome and held-back flag (library/mining/mining_runs.py computes it in
# SQL): outcome 0 unknown, 1 resolved, 2 resolved by escalation, 3 failed; + 4 when held back.
LABELS: dict[int, tuple[bool | None, bool | None, bool]] = {
    code + (4 if held else 0): (resolved, escalated, held)
    for code, (resolved, escalated) in enumerate([(None, None), (True, False), (True, True), (False, False)])
    for held in (False, True)
}


class TaskStream(ABC):
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
        self,
        *,
        intent: Any,
        task: Any,
        resolved: bool | None,
        escalated: bool | None,
        raw_skeleton: Sequence[str],
        count: int = 1,
        held: bool = False,
        model: str = "",
    ) -> None:
        """`count` sessions of one task; rows of one task must be consecutive."""
        key = (intent, task)
        if key != self._current:
            self._flush()
            self._current = key
        raw = raw_skeleton if isinstance(raw_skeleton, tuple) else tuple(raw_skeleton)
        self._buffer[
            (resolved, bool(escalated) if resolved else None if resolved is None else False, held, raw, model or "")
        ] += count

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
            # the task's sessions counted by (code, key, model) first: a make-up repeats them
            same = Counter(zip(labels, keys, row[3] if len(row) > 4 else repeat("")))
            sessions: dict[SessionKey, int] = {}
            for (code, key, model), n in same.items():
                raw = raws.get(key)
                if raw is None:
                    raw = raws[key] = decode(key)
                session = (*LABELS[code], raw, model or "")
                sessions[session] = sessions.get(session, 0) + n
            self.add_tasks(intent, sessions, tasks)
        return self

    @abstractmethod
    def add_tasks(self, intent: Any, sessions: Mapping[SessionKey, int], tasks: int = 1) -> None:
        """What `tasks` tasks of the intent with these sessions (counted by key) add to the reader."""

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

    def finish(self) -> Aggregator:
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
