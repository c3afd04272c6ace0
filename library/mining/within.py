"""The miner's second reading: followers vs the other sessions *within* each task (pure Python, no
Django). docs (mining) explain why this is the unit.

The first reading (skeletons.Aggregator) counts distinct tasks and names the groups to test. This
one reads the same tasks again and, for each tested skeleton S of an intent, files every task's
2×2 table (followers succeeded, followers failed, others succeeded, others failed; in sessions)
for:
- the gate: mined sessions that follow S (its steps in order, other calls in between allowed) vs
  the other mined sessions of the same task;
- the backtest: the same on the held-back sessions (the same estimator, so the two cannot disagree
  by construction; where the data still make them disagree, the evidence says so);
- order beyond the tools: sessions that call every tool of S (in any order) vs those that do not,
  and, among those that call them all, followers of S's order vs the rest;
- each model family: the gate's contrast within the sessions of one family.

Tables are not kept: each task's table is added to its set's evidence_statistics.WithinTaskSums (the
sums the Cochran–Mantel–Haenszel test and the Mantel–Haenszel risk ratio with its Greenland–Robins
interval need; single-session tasks into one pooled stratum), so memory is constant per table set:
it grows with the tested groups and model families, not with tasks or sessions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from . import evidence_statistics as st
from .groups import chosen_skeletons, groups_to_test
from .skeletons import Aggregator, MiningParams, SessionKey, Skeleton, TaskStream, is_subsequence

KINDS = ("mined", "held", "tools", "order", "heldTools", "heldOrder")


@lru_cache(maxsize=4096)
def model_family(model: str) -> str:
    """A model's family: its name after the last "/" up to the first "-", "_", "." or space,
    lower-cased (gpt-4-0613 → gpt, Llama-2-70b-chat-hf → llama, openai/gpt-4o → gpt); "" unknown."""
    name = (model or "").strip().rsplit("/", 1)[-1]
    return re.split(r"[-_. ]", name, maxsplit=1)[0].lower() if name else ""


class TaskTables(TaskStream):
    """The within-task sums of the tested skeletons (`tested`: intent → skeletons), per table set."""

    # how a session's reduced skeleton stands to a tested one
    FOLLOWS, TOOLS_ONLY, NEITHER = (
        0,
        1,
        2,
    )  # its steps in order (so every tool); every tool, another order; not every tool

    def __init__(self, params: MiningParams, tested: Mapping[Any, Sequence[Skeleton]], *, gates_only: bool = False):
        super().__init__(params)
        self.tested = {intent: list(skeletons) for intent, skeletons in tested.items() if skeletons}
        # only the gate's table set ("mined"): the rest is needed for the groups drafted only
        self.gates_only = gates_only
        # (intent, skeleton) → kind → the sums of its tasks' tables; kind "family:<name>" for a model family
        self.tables: dict[tuple[Any, Skeleton], dict[str, st.WithinTaskSums]] = {}
        self._relations: dict[tuple[Skeleton, Skeleton], int] = {}

    def _relation(self, skeleton: Skeleton, reduced: Skeleton) -> int:
        key = (skeleton, reduced)
        found = self._relations.get(key)
        if found is None:
            found = self._relations[key] = (
                self.FOLLOWS
                if is_subsequence(skeleton, reduced)
                else self.TOOLS_ONLY
                if set(skeleton) <= set(reduced)
                else self.NEITHER
            )
        return found

    def add_tasks(self, intent: Any, sessions: Mapping[SessionKey, int], tasks: int = 1) -> None:
        skeletons = self.tested.get(intent)
        if not skeletons:
            return
        # the task's labelled sessions once, by reduced skeleton: [mined succeeded, mined failed, held
        # back succeeded, held back failed], and the mined ones by model family too
        by_reduced: dict[Skeleton, list[int]] = {}
        by_family: dict[str, dict[Skeleton, list[int]]] = {}
        gates_only = self.gates_only
        for (resolved, _escalated, held, raw, model), n in sessions.items():
            if resolved is None or (held and gates_only):
                continue
            reduced, enough = self._reduce(raw)
            if not (held or enough):  # a mined session needs enough calls (the first reading's rule)
                continue
            counts = by_reduced.get(reduced)
            if counts is None:
                counts = by_reduced[reduced] = [0, 0, 0, 0]
            cell = (0 if resolved else 1) + (2 if held else 0)
            counts[cell] += n
            if not (held or gates_only):
                family = by_family.get(model_family(model))
                if family is None:
                    family = by_family[model_family(model)] = {}
                counts = family.get(reduced)
                if counts is None:
                    counts = family[reduced] = [0, 0]
                counts[cell] += n
        if not by_reduced:
            return
        relation = self._relation
        if self.gates_only:
            for skeleton in skeletons:
                table = [0, 0, 0, 0]
                for reduced, counts in by_reduced.items():
                    other = 0 if relation(skeleton, reduced) == self.FOLLOWS else 2
                    table[other] += counts[0]
                    table[other + 1] += counts[1]
                sets = self.tables.get((intent, skeleton))
                if sets is None:
                    sets = self.tables[(intent, skeleton)] = {}
                _add(sets, "mined", table, tasks)
            return
        for skeleton in skeletons:
            # sessions of the task by relation to the skeleton: [[mined ok, mined failed, held ok, held failed]; 3]
            by = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
            for reduced, counts in by_reduced.items():
                target = by[relation(skeleton, reduced)]
                target[0] += counts[0]
                target[1] += counts[1]
                target[2] += counts[2]
                target[3] += counts[3]
            (f0, f1, f2, f3), (t0, t1, t2, t3), (n0, n1, n2, n3) = by
            sets = self.tables.get((intent, skeleton))
            if sets is None:
                sets = self.tables[(intent, skeleton)] = {}
            # followers vs the others; every tool vs not; among every tool: this order vs another
            _add(sets, "mined", (f0, f1, t0 + n0, t1 + n1), tasks)
            _add(sets, "held", (f2, f3, t2 + n2, t3 + n3), tasks)
            _add(sets, "tools", (f0 + t0, f1 + t1, n0, n1), tasks)
            _add(sets, "heldTools", (f2 + t2, f3 + t3, n2, n3), tasks)
            _add(sets, "order", (f0, f1, t0, t1), tasks)
            _add(sets, "heldOrder", (f2, f3, t2, t3), tasks)
            for family, per_reduced in by_family.items():
                table = [0, 0, 0, 0]
                for reduced, (ok, failed) in per_reduced.items():
                    other = 0 if relation(skeleton, reduced) == self.FOLLOWS else 2
                    table[other] += ok
                    table[other + 1] += failed
                _add(sets, "family:" + family, table, tasks)

    def table(self, intent: Any, skeleton: Skeleton, kind: str) -> st.WithinTaskSums:
        """The sums of one table set (empty when no task had it)."""
        return self.tables.get((intent, skeleton), {}).get(kind) or st.WithinTaskSums()

    def gate(self, intent: Any, skeleton: Skeleton, *, tests: int, alpha: float) -> dict[str, Any]:
        return st.within_task(self.table(intent, skeleton, "mined"), tests=tests, alpha=alpha)

    def families(self, intent: Any, skeleton: Skeleton, *, alpha: float) -> list[dict[str, Any]]:
        """Per model family (mined sessions): the gate's contrast within the family, and whether it
        holds there (risk ratio's 95 % interval above 1) or at least points the same way."""
        found = []
        for kind, sums in self.tables.get((intent, skeleton), {}).items():
            if not kind.startswith("family:"):
                continue
            record = st.within_task(sums, alpha=alpha)
            ratio = st.ratio_number(record)
            record.update(
                family=kind.removeprefix("family:") or "unknown",
                holds=st.holds(record),
                direction="not compared"
                if ratio is None
                else ("same" if ratio > 1 else ("opposite" if ratio < 1 else "none")),
            )
            found.append(record)
        found.sort(key=lambda r: (-(r["followers"]["of"] + r["others"]["of"]), r["family"]))
        return found

    def order_beyond_tools(
        self, intent: Any, skeleton: Skeleton, *, alpha: float, held: bool = False
    ) -> dict[str, Any]:
        """The tool-presence contrast (every tool of the skeleton called, in any order, vs not) and
        the order contrast among the sessions that call them all. `toolList`: the order adds nothing
        credible (its risk ratio's 95 % interval does not lie above 1, or its one-sided p is not
        below alpha, or no session calls the tools in another order)."""
        tools = st.within_task(self.table(intent, skeleton, "heldTools" if held else "tools"), alpha=alpha)
        order = st.within_task(self.table(intent, skeleton, "heldOrder" if held else "order"), alpha=alpha)
        credible = st.holds(order) and order["pValue"] < alpha
        return {"tools": tools, "order": order, "toolList": not credible}


def _add(sets: dict[str, st.WithinTaskSums], kind: str, table: Sequence[int], tasks: int) -> None:
    """Adds `tasks` tasks with `table` to the kind's sums (made when a task first has sessions of it)."""
    if not (table[0] or table[1] or table[2] or table[3]):
        return
    sums = sets.get(kind)
    if sums is None:
        sums = sets[kind] = st.WithinTaskSums()
    sums.add(table, tasks)


def mine_tasks(params: MiningParams, feed: Callable[[TaskStream], Any]) -> Aggregator:
    """The readings of an agent's tasks: `feed(stream)` hands every task to `stream` (consume or add).
    First the Aggregator (distinct-task counts, the groups to test); when any group is tested, the
    gates of all of them (followers vs others, mined sessions); then, for the group each intent
    will draft (groups.chosen_skeletons), every other table set (held back, tools and order, model
    families). Kept together as `aggregator.within`."""
    aggregator = Aggregator(params)
    feed(aggregator)
    aggregator.finish()
    tested, _ = groups_to_test(aggregator)
    within = TaskTables(params, {intent: [s for s, _ in groups] for intent, groups in tested.items()}, gates_only=True)
    if within.tested:
        feed(within)
        within.finish()
        details = TaskTables(
            params, {intent: [skeleton] for intent, skeleton in chosen_skeletons(aggregator, within).items()}
        )
        feed(details)
        details.finish()
        for key, sets in details.tables.items():
            within.tables.setdefault(key, {}).update(sets)
    aggregator.within = within
    return aggregator


def feed_rows(rows: Iterable[Sequence[Any]]) -> Callable[[TaskStream], Any]:
    """A feed for mine_tasks from rows of single sessions (intent, task, resolved, escalated, raw
    skeleton, count[, held[, model]]) in any order (sorted here by intent and task)."""
    ordered = sorted(rows, key=lambda r: (str(r[0]), str(r[1])))

    def feed(stream: TaskStream) -> None:
        for row in ordered:
            intent, task, resolved, escalated, skeleton, n, *rest = row
            stream.add(
                intent=intent,
                task=task,
                resolved=resolved,
                escalated=escalated,
                raw_skeleton=skeleton,
                count=n,
                held=bool(rest and rest[0]),
                model=rest[1] if len(rest) > 1 else "",
            )
        stream.finish()

    return feed
