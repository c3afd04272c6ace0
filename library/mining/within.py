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

Tables are not kept: each task's table is added to its set's statistics.WithinTaskSums (the
sums the Cochran–Mantel–Haenszel test and the Mantel–Haenszel risk ratio with its Greenland–Robins
interval need; single-session tasks into one pooled stratum), so memory is constant per table set:
it grows with the tested groups and model families, not with tasks or sessions.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, Sequence

from . import statistics as st
from .groups import groups_to_test
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

    def __init__(self, params: MiningParams, tested: Mapping[Any, Sequence[Skeleton]]):
        super().__init__(params)
        self.tested = {intent: list(skeletons) for intent, skeletons in tested.items() if skeletons}
        # (intent, skeleton, kind) → the sums of its tasks' tables; kind "family:<name>" for a model family
        self.tables: dict[tuple[Any, Skeleton, str], st.WithinTaskSums] = {}
        self._follows: dict[tuple[Skeleton, Skeleton], tuple[bool, bool]] = {}

    def _relation(self, skeleton: Skeleton, reduced: Skeleton) -> tuple[bool, bool]:
        """(follows the order, calls every tool) of a session's reduced skeleton."""
        key = (skeleton, reduced)
        found = self._follows.get(key)
        if found is None:
            found = self._follows[key] = (is_subsequence(skeleton, reduced), set(skeleton) <= set(reduced))
        return found

    def add_tasks(self, intent: Any, sessions: Mapping[SessionKey, int], tasks: int = 1) -> None:
        skeletons = self.tested.get(intent)
        if not skeletons:
            return
        # the task's labelled sessions once: (succeeded, held back, reduced skeleton, family, n)
        labelled: Counter = Counter()
        for (resolved, _escalated, held, raw, model), n in sessions.items():
            if resolved is None:
                continue
            reduced, enough = self._reduce(raw)
            if held or enough:  # a mined session needs enough calls (the first reading's rule)
                labelled[(0 if resolved else 1, held, reduced, model_family(model))] += n
        if not labelled:
            return
        tables = self.tables
        for skeleton in skeletons:
            cells: dict[str, list[int]] = {}
            for (cell, held, reduced, family), n in labelled.items():
                follows, has_tools = self._relation(skeleton, reduced)
                order = (0 if follows else 2) + cell
                _cell(cells, "held" if held else "mined", order, n)
                _cell(cells, "heldTools" if held else "tools", (0 if has_tools else 2) + cell, n)
                if has_tools:
                    _cell(cells, "heldOrder" if held else "order", order, n)
                if not held:
                    _cell(cells, "family:" + family, order, n)
            for kind, table in cells.items():
                sums = tables.get((intent, skeleton, kind))
                if sums is None:
                    sums = tables[(intent, skeleton, kind)] = st.WithinTaskSums()
                sums.add(table, tasks)

    def table(self, intent: Any, skeleton: Skeleton, kind: str) -> st.WithinTaskSums:
        """The sums of one table set (empty when no task had it)."""
        return self.tables.get((intent, skeleton, kind)) or st.WithinTaskSums()

    def gate(self, intent: Any, skeleton: Skeleton, *, tests: int, alpha: float) -> dict[str, Any]:
        return st.within_task(self.table(intent, skeleton, "mined"), tests=tests, alpha=alpha)

    def families(self, intent: Any, skeleton: Skeleton, *, alpha: float) -> list[dict[str, Any]]:
        """Per model family (mined sessions): the gate's contrast within the family, and whether it
        holds there (risk ratio's 95 % interval above 1) or at least points the same way."""
        found = []
        for (i, s, kind), tables in self.tables.items():
            if i != intent or s != skeleton or not kind.startswith("family:"):
                continue
            record = st.within_task(tables, alpha=alpha)
            ratio = st.ratio_number(record)
            record.update(
                family=kind.removeprefix("family:") or "unknown",
                holds=st.holds(record),
                direction="not compared" if ratio is None else ("same" if ratio > 1 else ("opposite" if ratio < 1 else "none")),
            )
            found.append(record)
        found.sort(key=lambda r: (-(r["followers"]["of"] + r["others"]["of"]), r["family"]))
        return found

    def order_beyond_tools(self, intent: Any, skeleton: Skeleton, *, alpha: float, held: bool = False) -> dict[str, Any]:
        """The tool-presence contrast (every tool of the skeleton called, in any order, vs not) and
        the order contrast among the sessions that call them all. `toolList`: the order adds nothing
        credible (its risk ratio's 95 % interval does not lie above 1, or its one-sided p is not
        below alpha, or no session calls the tools in another order)."""
        tools = st.within_task(self.table(intent, skeleton, "heldTools" if held else "tools"), alpha=alpha)
        order = st.within_task(self.table(intent, skeleton, "heldOrder" if held else "order"), alpha=alpha)
        credible = st.holds(order) and order["pValue"] < alpha
        return {"tools": tools, "order": order, "toolList": not credible}


def _cell(cells: dict[str, list[int]], kind: str, index: int, n: int) -> None:
    table = cells.get(kind)
    if table is None:
        table = cells[kind] = [0, 0, 0, 0]
    table[index] += n


def mine_tasks(params: MiningParams, feed: Callable[[TaskStream], Any]) -> Aggregator:
    """Both readings of an agent's tasks: `feed(stream)` hands every task to `stream` (consume or
    add); it is called once for the Aggregator and, when any group is tested, once more for the
    TaskTables of the tested groups (kept as `aggregator.within`)."""
    aggregator = Aggregator(params)
    feed(aggregator)
    aggregator.finish()
    tested, _ = groups_to_test(aggregator)
    within = TaskTables(params, {intent: [s for s, _ in groups] for intent, groups in tested.items()})
    if within.tested:
        feed(within)
    within.finish()
    aggregator.within = within
    return aggregator


def feed_rows(rows: Iterable[Sequence[Any]]) -> Callable[[TaskStream], Any]:
    """A feed for mine_tasks from rows of single sessions (intent, task, resolved, escalated, raw
    skeleton, count[, held[, model]]) in any order (sorted here by intent and task)."""
    ordered = sorted(rows, key=lambda r: (str(r[0]), str(r[1])))

    def feed(stream: TaskStream) -> None:
        for row in ordered:
            intent, task, resolved, escalated, skeleton, n, *rest = row
            stream.add(intent=intent, task=task, resolved=resolved, escalated=escalated, raw_skeleton=skeleton, count=n,
                       held=bool(rest and rest[0]), model=rest[1] if len(rest) > 1 else "")
        stream.finish()

    return feed
