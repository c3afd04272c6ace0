"""Reading an agent's sessions for a mining run (library/mining/mining_runs.py runs it): which
sessions are held back for the backtest (`held_back`), the tasks grouped by their make-up in one
aggregate query (`task_groups`) and spooled for the second reading (`MakeUpSpool`), and the few
sessions read one by one as evidence (`sessions_with_variants`, `failed_samples`).

The order of every query is the (agent, intent, ended_at, received_at, id) index's own, so the
database reads the index instead of sorting.
"""

from __future__ import annotations

import json
import math
import pickle
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from django.db import connections, transaction
from django.db.models import BooleanField, Case, CharField, Count, F, Q, TextField, Value, When
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from ..ingest.outcomes import label_final_q
from ..models import Agent, AgentSession
from . import skeletons as mining
from .arguments import first_call_args

FETCH_SESSIONS = 10_000  # sessions' worth of make-up rows read from the database at a time
RAW_VARIANTS_QUERIED = 10
FAILED_SAMPLE_SESSIONS = 200


# The order of "newest": by end time; sessions without an end time (imports that carry none)
# after those with one, by receipt time; ties by id. It is the (agent, intent, ended_at,
# received_at, id) index's own order, so every query below reads the index instead of sorting.
OLDEST_FIRST = [F("ended_at").asc(nulls_last=True), F("received_at").asc(), F("pk").asc()]
NEWEST_FIRST = [F("ended_at").desc(nulls_first=True), F("received_at").desc(), F("pk").desc()]
Cutoff = tuple[Any, Any, int]  # (ended_at, received_at, pk) of the oldest held-back session


def held_back_cutoffs(agent: Agent, share: float) -> dict[int, Cutoff]:
    """intent id → the oldest held-back session of the intent: the newest `share` of each intent's
    sessions are held back for the backtest (one index-ordered query per intent)."""
    if share <= 0:
        return {}
    sessions = AgentSession.objects.filter(agent=agent, intent__isnull=False)
    sizes = dict(sessions.values_list("intent_id").annotate(n=Count("id")).order_by())
    cutoffs: dict[int, Cutoff] = {}
    for intent_id, size in sizes.items():
        held = int(size * share)
        if held < 1:
            continue
        row = (
            sessions.filter(intent_id=intent_id)
            .order_by(*NEWEST_FIRST)
            .values_list("ended_at", "received_at", "pk")[held - 1 : held]
        )
        for r in row:
            cutoffs[intent_id] = tuple(r)
    return cutoffs


def _at_or_after(cutoff: Cutoff) -> Q:
    """Sessions at or after `cutoff` in OLDEST_FIRST order."""
    ended, received, pk = cutoff
    same_end = Q(received_at__gt=received) | Q(received_at=received, pk__gte=pk)
    if ended is None:
        return Q(ended_at__isnull=True) & same_end
    return Q(ended_at__isnull=True) | Q(ended_at__gt=ended) | (Q(ended_at=ended) & same_end)


def held_back_tasks(agent: Agent, share: float) -> dict[int, Q]:
    """intent id → the held-back sessions of the intent when holding back by task: per intent, the
    last `share` of its sorted task keys (rounded up; code-point order), every session of those
    tasks. For data where a task has many sessions, so that no task sits on both sides (sessions
    without a task key are never held back this way)."""
    if share <= 0:
        return {}
    pairs = (
        AgentSession.objects.filter(agent=agent, intent__isnull=False)
        .exclude(task_key="")
        .values_list("intent_id", "task_key")
        .distinct()
        .order_by()
    )
    keys: dict[int, set[str]] = {}
    for intent_id, key in pairs.iterator(chunk_size=5000):
        keys.setdefault(intent_id, set()).add(key)
    held: dict[int, Q] = {}
    for intent_id, found in keys.items():
        ordered = sorted(found)
        count = math.ceil(len(ordered) * share - 1e-9)
        if count >= 1:
            held[intent_id] = Q(task_key__in=ordered[len(ordered) - count :])
    return held


class HoldOut:
    NEWEST = "newest"  # the newest share of each intent's sessions (the default)
    TASKS = "tasks"  # the last share of each intent's sorted task keys


def held_back(agent: Agent, share: float, hold_out: str = HoldOut.NEWEST) -> dict[int, Q]:
    """intent id → which of its sessions are held back for the backtest."""
    if hold_out == HoldOut.TASKS:
        return held_back_tasks(agent, share)
    if hold_out != HoldOut.NEWEST:
        raise ValueError(f"hold_out must be {HoldOut.NEWEST!r} or {HoldOut.TASKS!r}, not {hold_out!r}")
    return {intent_id: _at_or_after(cutoff) for intent_id, cutoff in held_back_cutoffs(agent, share).items()}


def _held_condition(held: Cutoff | Q) -> Q:
    return held if isinstance(held, Q) else _at_or_after(held)


def _held_q(cutoffs: Mapping[int, Cutoff | Q]) -> Q | None:
    """The held-back sessions of every intent, from cutoffs (held_back_cutoffs) or conditions (held_back)."""
    query = None
    for intent_id, cutoff in cutoffs.items():
        part = Q(intent_id=intent_id) & _held_condition(cutoff)
        query = part if query is None else query | part
    return query


def _annotated(agent: Agent, cutoffs: Mapping[int, Cutoff | Q]):
    held = _held_q(cutoffs)
    # sessions whose label is not final yet (the agent's complaint window is open) are not mined
    return (
        AgentSession.objects.filter(agent=agent)
        .filter(label_final_q(timezone.now()))
        .annotate(
            held=Case(When(held, then=Value(True)), default=Value(False), output_field=BooleanField())
            if held is not None
            else Value(False, output_field=BooleanField()),
        )
    )


def _task_unit():
    # a session without a task key is its own task
    return Case(
        When(task_key="", then=Concat(Value("session:"), Cast("id", CharField()))),
        default=F("task_key"),
        output_field=CharField(),
    )


def task_groups(
    agent: Agent, cutoffs: Mapping[int, Any], *, chunk_size: int = 2000
) -> Iterator[tuple[Any, list[int], list[str], list[str], int]]:
    """(intent id, session labels, session skeletons as JSON text, session models, tasks): the agent's
    tasks grouped by the database by their make-up — the sorted list of their sessions' (label,
    skeleton, model), label
    being mining.LABELS' code of the outcome and held-back flag — so that Python reads one row per
    distinct make-up, not one per session. The per-session rows are built, sorted and folded in
    PostgreSQL (narrow rows, C collation), read through a server-side cursor."""
    base = (
        _annotated(agent, cutoffs)
        .annotate(unit=_task_unit(), skeleton_text=Cast("skeleton", TextField()))
        .order_by()
        .values_list("intent_id", "unit", "resolved", "escalated", "held", "skeleton_text", "model")
    )
    base_sql, params = base.query.sql_with_params()
    connection = connections[base.db]
    label_sql = (
        "CASE WHEN b.resolved IS NULL THEN 0 WHEN b.resolved AND b.escalated THEN 2 WHEN b.resolved THEN 1 ELSE 3 END"
        " + CASE WHEN b.held THEN 4 ELSE 0 END"
    )
    if connection.vendor != "postgresql":
        yield from _task_groups_folded_here(connection, base_sql, params, label_sql, chunk_size)
        return
    # label: 0 unknown, 1 resolved, 2 resolved by escalation, 3 failed; + 4 when held back
    sql = f"""
        SELECT t.intent_id, t.labels, t.skeletons, t.models, COUNT(*)
        FROM (
            SELECT s.intent_id, s.unit, array_agg(s.label) AS labels, array_agg(s.skeleton) AS skeletons,
                   array_agg(s.model) AS models
            FROM (
                SELECT b.intent_id, b.unit COLLATE "C" AS unit, {label_sql} AS label,
                       b.skeleton_text COLLATE "C" AS skeleton, b.model COLLATE "C" AS model
                FROM ({base_sql}) b
                ORDER BY 1, 2, 3, 4, 5
                OFFSET 0
            ) s
            GROUP BY s.intent_id, s.unit
        ) t
        GROUP BY t.intent_id, t.labels, t.skeletons, t.models
    """
    with transaction.atomic(using=base.db):
        # One sort of narrow rows read to the end: plan it for the whole result, not for its
        # first rows (a cursor's default); compiling it (JIT) costs more than it saves; the
        # sort fits in memory with more than the default work_mem. All only for this transaction.
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL cursor_tuple_fraction = 1.0")
            cursor.execute("SET LOCAL jit = off")
            cursor.execute("SET LOCAL work_mem = '128MB'")
        with connection.chunked_cursor() as cursor:
            cursor.execute(sql, params)
            # A make-up row holds one entry per session of its tasks, so rows are fetched by a budget
            # of sessions (memory per fetch stays the same whether tasks have 4 sessions or 50), and
            # the previous fetch is let go before the next one is read.
            size = min(chunk_size, 100)
            while True:
                rows = cursor.fetchmany(size)
                if not rows:
                    break
                sessions = sum(len(row[1]) for row in rows)
                size = max(1, min(chunk_size, FETCH_SESSIONS * len(rows) // max(1, sessions)))
                yield from rows
                del rows


def _task_groups_folded_here(connection, base_sql: str, params, label_sql: str, chunk_size: int):
    """task_groups() where the database has no array_agg (SQLite, the embedded default): the same
    sorted per-session rows, folded into tasks and make-ups in Python."""
    sql = f"SELECT b.intent_id, b.unit, {label_sql} AS label, b.skeleton_text, b.model FROM ({base_sql}) b ORDER BY 1, 2, 3, 4, 5"
    makeups: Counter = Counter()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        current, labels, skeletons, models = None, [], [], []
        while rows := cursor.fetchmany(chunk_size):
            for intent_id, unit, label, skeleton, model in rows:
                if (intent_id, unit) != current:
                    if current is not None:
                        makeups[(current[0], tuple(labels), tuple(skeletons), tuple(models))] += 1
                    current, labels, skeletons, models = (intent_id, unit), [], [], []
                labels.append(label)
                skeletons.append(skeleton)
                models.append(model)
        if current is not None:
            makeups[(current[0], tuple(labels), tuple(skeletons), tuple(models))] += 1
    for (intent_id, labels, skeletons, models), tasks in makeups.items():
        yield intent_id, list(labels), list(skeletons), list(models), tasks


def _skeleton_filter(variants: Iterable[tuple[str, ...]]) -> Q:
    query = Q()
    for variant in variants:
        query |= Q(skeleton=list(variant))
    return query


def mined_sessions(agent: Agent, intent_id: int, cutoffs: Mapping[int, Cutoff | Q]):
    """The intent's sessions before its held-back cut, oldest first (the index's order)."""
    queryset = AgentSession.objects.filter(agent=agent, intent_id=intent_id).annotate(unit=_task_unit())
    if intent_id in cutoffs:
        queryset = queryset.exclude(_held_condition(cutoffs[intent_id]))
    return queryset.order_by(*OLDEST_FIRST)


def sessions_with_variants(agent: Agent, intent_id: int, cutoffs, *, variants: Iterable[tuple[str, ...]], limit: int):
    """Successful mined sessions whose raw skeleton is one of `variants`: (session id, task, excerpt)."""
    return (
        mined_sessions(agent, intent_id, cutoffs)
        .filter(resolved=True)
        .filter(_skeleton_filter(variants))
        .values_list("session_id", "unit", "redacted_excerpt")[:limit]
    )


def top_variants(
    stats: mining.IntentStats, label: str, reduced_skeletons: Iterable[mining.Skeleton]
) -> list[tuple[str, ...]]:
    merged: dict[tuple[str, ...], int] = {}
    for reduced in reduced_skeletons:
        for raw, n in stats.raw_variants.get((label, reduced), {}).items():
            merged[raw] = merged.get(raw, 0) + n
    ranked = sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))
    return [raw for raw, _ in ranked[:RAW_VARIANTS_QUERIED]]


def _decoded(cache: dict[Any, tuple[str, ...]], text: Any) -> tuple[str, ...]:
    if isinstance(text, list):  # a backend that hands JSON back decoded
        return tuple(text)
    found = cache.get(text)
    if found is None:
        value = json.loads(text) if text else []
        found = cache[text] = tuple(value) if isinstance(value, list) else ()
    return found


class MakeUpSpool:
    """The make-up rows of task_groups, read from the database once: the first feed() passes them on
    and writes them to a spooled temporary file (in memory up to SPOOL_MEMORY, 1 MB, then on disk, so memory
    stays flat), skeletons as small integers and each model name as one shared string (pickle writes
    it once a batch); later feeds replay the file."""

    SPOOL_MEMORY = 2**20

    def __init__(self, rows: Iterable[tuple]):
        self._rows = rows
        self._file = tempfile.SpooledTemporaryFile(max_size=self.SPOOL_MEMORY)
        self._written = False
        self._skeletons: dict[Any, int] = {}  # skeleton text → id
        self._decoded: list[tuple[str, ...]] = []  # id → raw skeleton
        self._models: dict[str, str] = {}  # model → the one string kept for it

    def __enter__(self) -> MakeUpSpool:
        return self

    def __exit__(self, *exc) -> None:
        self._file.close()

    def _skeleton_id(self, text: Any) -> int:
        found = self._skeletons.get(text if not isinstance(text, list) else json.dumps(text))
        if found is None:
            key = text if not isinstance(text, list) else json.dumps(text)
            found = self._skeletons[key] = len(self._decoded)
            self._decoded.append(_decoded({}, text))
        return found

    def _model(self, model: str | None) -> str:
        found = self._models.get(model or "")
        if found is None:
            found = self._models[model or ""] = model or ""
        return found

    def _first(self) -> Iterator[tuple]:
        batch: list[tuple] = []
        for intent_id, labels, keys, models, tasks in self._rows:
            row = (intent_id, labels, [self._skeleton_id(k) for k in keys], [self._model(m) for m in models], tasks)
            batch.append(row)
            if len(batch) >= 500:
                pickle.dump(batch, self._file, protocol=pickle.HIGHEST_PROTOCOL)
                batch = []
            yield row
        if batch:
            pickle.dump(batch, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self._written = True

    def _replay(self) -> Iterator[tuple]:
        self._file.seek(0)
        while True:
            try:
                batch = pickle.load(self._file)
            except EOFError:
                return
            yield from batch

    def feed(self, stream: mining.TaskStream) -> None:
        stream.consume(self._replay() if self._written else self._first(), self._decoded.__getitem__).finish()


def failed_samples(
    agent: Agent, intent_id: int, cutoffs, stats: mining.IntentStats
) -> dict[str, list[tuple[Any, Mapping[str, Any]]]]:
    """tool → (task, args of the tool's first call) in failed mined sessions of the intent (at most
    FAILED_SAMPLE_SESSIONS, oldest first), for the argument contrast and for naming the literal
    arguments of a forbidden action (replyTemplates('refund_promised'))."""
    if not stats.failed.tasks:
        return {}
    rows = (
        mined_sessions(agent, intent_id, cutoffs)
        .filter(resolved=False)
        .values_list("unit", "redacted_excerpt")[:FAILED_SAMPLE_SESSIONS]
    )
    samples: dict[str, list[tuple[Any, Mapping[str, Any]]]] = {}
    for task, excerpt in rows:
        for tool in {e.get("tool") for e in excerpt or [] if e.get("role") == "tool_call"}:
            args = first_call_args(excerpt, tool)
            if args is not None:
                samples.setdefault(tool, []).append((task, args))
    return samples
