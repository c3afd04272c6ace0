"""The miner's Django side: reads an agent's sessions, asks the pure core (library/mining/) for groups, statistics,
backtests and drafts, skips what the library already covers, proposes the credible rest as CANDIDATE
versions through procedure_propose (which applies the policy screen), and records a report that
names every intent of the agent with what happened to it and why. Every run leaves a MiningRun row.

Reading is one aggregate query: PostgreSQL folds every task into its make-up (its sessions'
outcomes, held-back flags and skeletons) and counts the tasks of each distinct make-up, so Python
reads one row per make-up, not per session (memory grows with distinct make-ups and skeletons, not
with sessions); only the few sessions that become evidence are read one by one (bounded per group).
"""

from __future__ import annotations

import json
import logging
import math
import pickle
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connections, transaction
from django.db.models import BooleanField, Case, CharField, Count, F, Q, TextField, Value, When
from django.db.models.functions import Cast, Concat
from django.utils import timezone
from django.utils.module_loading import import_string

from ..ingest.outcomes import label_final_q, sessions_waiting, waiting_report_entry
from ..models import Agent, AgentSession, AuditEvent, Intent, MiningRun, Procedure, ProcedureVersion, Source, Status
from ..redaction.redactor import Redactor
from ..services import audit, procedure_propose, required_reason
from . import skeletons as mining
from . import within
from .arguments import calls_by_step, first_call_args, reduced_calls
from .coding_runs import coding_mining_run, coding_parameters
from .drafting import Draft, draft_candidate, report_entry
from .evidence import Branch, splits_of
from .groups import GroupChoice, choose_groups, step_count
from .groups import Status as MiningStatus

logger = logging.getLogger(__name__)

ACTOR_LABEL = "miner"
STEP_SAMPLE_SESSIONS = 200
FAILED_SAMPLE_SESSIONS = 200
RAW_VARIANTS_QUERIED = 10
FETCH_SESSIONS = 10_000  # sessions' worth of make-up rows read from the database at a time


class Trigger:
    MANUAL = "manual"
    SCHEDULED = "scheduled"


def mining_params_for(agent: Agent, *, support_threshold: int | None = None) -> mining.MiningParams:
    coding_agent = agent.kind == Agent.Kind.CODING
    return mining.MiningParams(
        support_threshold=support_threshold if support_threshold is not None else agent.support_threshold,
        # a coding agent's skeleton is made of phases; "think" is a tool agent's scratchpad
        ignored_tools=() if coding_agent else tuple(getattr(settings, "PROCMEM_MINING_IGNORED_TOOLS", ["think"])),
        agent_kind=agent.kind,
        terminal_tools=tuple(getattr(settings, "PROCMEM_MINING_TERMINAL_TOOLS", mining.DEFAULT_TERMINAL_TOOLS)),
        min_tool_calls=agent.min_tool_calls,
        significance_level=agent.significance_level,
        backtest_share=agent.backtest_share,
    )


# ---------------------------------------------------------------------------------------------- selectors


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


def _mined_sessions(agent: Agent, intent_id: int, cutoffs: Mapping[int, Cutoff | Q]):
    """The intent's sessions before its held-back cut, oldest first (the index's order)."""
    queryset = AgentSession.objects.filter(agent=agent, intent_id=intent_id).annotate(unit=_task_unit())
    if intent_id in cutoffs:
        queryset = queryset.exclude(_held_condition(cutoffs[intent_id]))
    return queryset.order_by(*OLDEST_FIRST)


def _sessions_with_variants(agent: Agent, intent_id: int, cutoffs, *, variants: Iterable[tuple[str, ...]], limit: int):
    """Successful mined sessions whose raw skeleton is one of `variants`: (session id, task, excerpt)."""
    return (
        _mined_sessions(agent, intent_id, cutoffs)
        .filter(resolved=True)
        .filter(_skeleton_filter(variants))
        .values_list("session_id", "unit", "redacted_excerpt")[:limit]
    )


def _top_variants(
    stats: mining.IntentStats, label: str, reduced_skeletons: Iterable[mining.Skeleton]
) -> list[tuple[str, ...]]:
    merged: dict[tuple[str, ...], int] = {}
    for reduced in reduced_skeletons:
        for raw, n in stats.raw_variants.get((label, reduced), {}).items():
            merged[raw] = merged.get(raw, 0) + n
    ranked = sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))
    return [raw for raw, _ in ranked[:RAW_VARIANTS_QUERIED]]


# ---------------------------------------------------------------------------------------------- coverage


def _live_versions(agent: Agent, intent_id: int) -> list[ProcedureVersion]:
    return list(
        ProcedureVersion.objects.filter(
            procedure__agent=agent, procedure__intent_id=intent_id, status__in=[Status.ACTIVE, Status.CANDIDATE]
        )
        .select_related("procedure")
        .order_by("procedure__key", "number")
    )


def _covered_by(
    versions: list[ProcedureVersion], skeleton: mining.Skeleton, params: mining.MiningParams
) -> ProcedureVersion | None:
    for version in versions:
        if (
            version.skeleton
            and mining.skeleton_function(params)(version.skeleton, params.ignored_tools, params.terminal_tools)
            == skeleton
        ):
            return version
    return None


def _near_duplicate(versions: list[ProcedureVersion], applies_when: str) -> tuple[ProcedureVersion, float] | None:
    """The same intent's live version whose appliesWhen is nearest, if at least
    PROCMEM_MINING_NEAR_DUPLICATE similar (cosine of the bundled MiniLM embeddings). A procedure with
    an ACTIVE version wins over one with only candidates, so a new skeleton diffs against what runs."""
    if not versions:
        return None
    from ..embeddings import embed

    threshold = float(getattr(settings, "PROCMEM_MINING_NEAR_DUPLICATE", 0.85))
    vectors = embed([applies_when] + [v.applies_when for v in versions])
    best: tuple[tuple[int, float], ProcedureVersion, float] | None = None
    for version, vector in zip(versions, vectors[1:]):
        similarity = float(vectors[0] @ vector)
        if similarity < threshold:
            continue
        rank = (1 if version.status == Status.ACTIVE else 0, similarity)
        if best is None or rank > best[0]:
            best = (rank, version, similarity)
    return (best[1], round(best[2], 3)) if best else None


def _free_key(agent: Agent, base: str, intent_id: int) -> str:
    """The base key if it is free or already serves this intent; else base_2, base_3, …"""
    taken = dict(Procedure.objects.filter(agent=agent, key__startswith=base).values_list("key", "intent_id"))
    if base not in taken or taken[base] == intent_id:
        return base
    suffix = 2
    while f"{base}_{suffix}" in taken and taken[f"{base}_{suffix}"] != intent_id:
        suffix += 1
    return f"{base}_{suffix}"


def _polisher() -> Callable[[Draft], Draft] | None:
    path = getattr(settings, "PROCMEM_MINING_POLISH", "") or ""
    return import_string(path) if path else None


# ---------------------------------------------------------------------------------------------- the run


def mining_run_execute(
    *,
    agent: Agent,
    started_by=None,
    support_threshold: int | None = None,
    trigger: str = Trigger.MANUAL,
    hold_out: str = HoldOut.NEWEST,
) -> MiningRun:
    """Mines one agent's sessions into CANDIDATE versions and records the run. Refuses nothing
    silently: a switched-off agent gets a run row that says why nothing was mined."""
    params = mining_params_for(agent, support_threshold=support_threshold)
    if hold_out not in (HoldOut.NEWEST, HoldOut.TASKS):
        raise ValueError(f"hold_out must be {HoldOut.NEWEST!r} or {HoldOut.TASKS!r}, not {hold_out!r}")
    parameters = {
        **params.to_dict(),
        "trigger": trigger,
        "holdOut": hold_out,
        "nearDuplicate": float(getattr(settings, "PROCMEM_MINING_NEAR_DUPLICATE", 0.85)),
    }
    user = started_by if started_by is not None and getattr(started_by, "is_authenticated", False) else None
    run = MiningRun.objects.create(agent=agent, parameters=parameters, started_by=user)
    off_reason = None
    if not agent.procedural_memory_enabled:
        off_reason = "procedural memory is switched off for this agent"
    elif trigger == Trigger.SCHEDULED and not agent.auto_capture_enabled:
        off_reason = "automatic capture is switched off for this agent"
    if off_reason:
        run.state = MiningRun.State.DONE
        run.skipped = [{"intent": None, "skeleton": None, "reason": off_reason}]
        run.report = [{"intent": None, "status": "switched off", "reason": off_reason, "figures": {}}]
        run.counts = {"sessions": 0, "candidates": 0}
        run.finished_at = timezone.now()
        run.save(update_fields=["state", "skipped", "report", "counts", "finished_at"])
        return run
    try:
        if agent.kind == Agent.Kind.CODING:
            # coding agents: one candidate per task family from resolved traces, no outcome gate
            run.parameters = {**coding_parameters(agent), "trigger": trigger}
            run.save(update_fields=["parameters"])
            return coding_mining_run(agent=agent, run=run, user=user)
        return _mine(agent=agent, run=run, params=params, user=user, hold_out=hold_out)
    except Exception as exc:
        MiningRun.objects.filter(pk=run.pk).update(
            state=MiningRun.State.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000], finished_at=timezone.now()
        )
        raise


def _propose_draft(
    *,
    agent: Agent,
    run: MiningRun,
    intent: Intent,
    draft: Draft,
    params: mining.MiningParams,
    support: int,
    proposed_by=None,
    reason: str = "",
    evidence_extra: Mapping[str, Any] | None = None,
) -> tuple[ProcedureVersion | None, dict[str, Any]]:
    """Proposes one draft as a CANDIDATE of `intent` (under the caller's lock on the agent row), unless
    a live version of the intent already has its skeleton. Returns the version (None when covered) and
    the run's report entry for it."""
    live = _live_versions(agent, intent.pk)
    covered = _covered_by(live, tuple(draft.skeleton), params)
    if covered is not None:
        why = f"covered by {covered.procedure.key} v{covered.number} ({covered.status}) with the same skeleton"
        return None, report_entry(intent.name, MiningStatus.DUPLICATE, why, draft)
    near = _near_duplicate(live, draft.applies_when)
    provenance: dict[str, Any] = {"miningRun": run.pk, "support": support, "intent": intent.name}
    if near is not None:
        key = near[0].procedure.key
        provenance["nearDuplicateOf"] = {"id": key, "version": near[0].number, "similarity": near[1]}
    else:
        key = _free_key(agent, draft.key, intent.pk)
    drafted = None
    if agent.model_drafts_enabled and not draft.verify_command:  # tool agents' drafts (library/mining/model_draft.py)
        from .model_draft import model_draft, rule_draft_record

        drafted = model_draft(agent=agent, draft=draft, intent_name=intent.name)
        if drafted.status == "used":
            provenance.update(draftedBy={"kind": "model", "model": drafted.model}, ruleDraft=rule_draft_record(draft))
        else:
            provenance["modelDraft"] = drafted.report()
        draft = drafted.draft
    polish = _polisher()
    if polish is not None:
        polished = polish(replace(draft))
        from .model_draft import reworded

        # a polisher (an LLM) only rewords, but what it returns is redacted all the same
        draft = reworded(
            draft,
            agent,
            applies_when=polished.applies_when,
            steps=polished.steps,
            forbidden_actions=polished.forbidden_actions,
        )
        provenance["polishedBy"] = settings.PROCMEM_MINING_POLISH
    evidence = {**draft.evidence, "miningRunId": run.pk, **(evidence_extra or {})}
    if near is not None:
        evidence["nearDuplicateOf"] = provenance["nearDuplicateOf"]
    version = procedure_propose(
        agent=agent,
        intent=intent,
        key=key,
        **draft.content(),
        source=Source.MINED,
        proposed_by=proposed_by,
        actor_label="" if proposed_by is not None else ACTOR_LABEL,
        evidence=evidence,
        provenance=provenance,
        mining_run=run,
        reason=reason or evidence["summary"],
    )
    if version.quarantined:
        entry = report_entry(
            intent.name, MiningStatus.QUARANTINED, "proposed, and quarantined by the policy screen", draft
        )
    else:
        entry = report_entry(intent.name, MiningStatus.MINED, f"proposed as {key} v{version.number}", draft)
    entry["version"] = {"id": key, "number": version.number, "pk": version.pk}
    if drafted is not None:
        entry["modelDraft"] = drafted.report()
    return version, entry


def mining_report_propose(*, run: MiningRun, intent_name: str, user, reason: str) -> ProcedureVersion:
    """A reviewer proposes, as a CANDIDATE, the group a run reported but did not propose because its
    order did not credibly explain the outcome (e.g. sessions where resolved and failed
    ones work in the same order). The draft is the run's, content and evidence unchanged, plus who
    proposed it against the test and why (`evidence.proposedDespite`). Nothing else changes: it is
    reviewed, needs a passing eval run, and its approver may not be this person (the proposer).
    The run's report entry links to the candidate. Refused with a ValidationError that says why:
    no such reported group, already proposed, or a live version already has its skeleton."""
    reason = required_reason(reason, "Proposing a group the test did not find credible")
    with transaction.atomic():
        # the same lock as a mining run: a run proposing at the same time waits, then sees this one
        agent = Agent.objects.select_for_update().get(pk=run.agent_id)
        run = MiningRun.objects.select_for_update().get(pk=run.pk)
        report = run.report or []
        index = next(
            (
                i
                for i, e in enumerate(report)
                if e.get("intent") == intent_name and e.get("status") == MiningStatus.REPORTED
            ),
            None,
        )
        if index is None:
            raise ValidationError(
                {"intent": f"mining run {run.pk} reported no unproposed group for the intent {intent_name!r}"}
            )
        entry = report[index]
        if entry.get("version"):
            raise ValidationError(
                {"intent": f"already proposed as {entry['version']['id']} v{entry['version']['number']}"}
            )
        if not isinstance(entry.get("draft"), dict):
            raise ValidationError(
                {"intent": f"mining run {run.pk} is older than proposing from a report: run the mining again"}
            )
        intent = Intent.objects.filter(agent=agent, name=intent_name).first()
        if intent is None:
            raise ValidationError({"intent": f"the agent {agent.name} has no intent {intent_name!r} any more"})
        draft = Draft(**entry["draft"])
        test = entry.get("withinTask") or entry.get("skeletonTest") or {}
        despite = {
            "by": user.get_username(),
            "at": timezone.now().isoformat(timespec="seconds"),
            "reason": reason,
            "pAdjusted": test.get("pAdjusted"),
            "alpha": test.get("alpha"),
        }
        version, proposed = _propose_draft(
            agent=agent,
            run=run,
            intent=intent,
            draft=draft,
            params=mining_params_for(agent),
            support=entry["figures"].get("support", 0),
            proposed_by=user,
            reason=f"Proposed from mining run {run.pk} although the order was not credible: {reason}",
            evidence_extra={"proposedDespite": despite},
        )
        if version is None:
            raise ValidationError({"intent": proposed["reason"]})
        report[index] = {**entry, "version": proposed["version"], "proposedDespite": despite}
        if "modelDraft" in proposed:
            report[index]["modelDraft"] = proposed["modelDraft"]
        run.report = report
        run.save(update_fields=["report"])
        agent_id, version_ids, run_id = agent.pk, [version.pk], run.pk
        transaction.on_commit(lambda: _notify(agent_id, version_ids, run_id), robust=True)
    return version


def _decoded(cache: dict[Any, tuple[str, ...]], text: Any) -> tuple[str, ...]:
    if isinstance(text, list):  # a backend that hands JSON back decoded
        return tuple(text)
    found = cache.get(text)
    if found is None:
        value = json.loads(text) if text else []
        found = cache[text] = tuple(value) if isinstance(value, list) else ()
    return found


class _MakeUpSpool:
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

    def __enter__(self) -> _MakeUpSpool:
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


def _mine(
    *, agent: Agent, run: MiningRun, params: mining.MiningParams, user, hold_out: str = HoldOut.NEWEST
) -> MiningRun:
    cutoffs = held_back(agent, params.backtest_share, hold_out)
    # two readings of the same make-ups (distinct-task counts, then the tested groups' within-task
    # tables): the database is read once, the second reading replays a spool of the first
    with _MakeUpSpool(task_groups(agent, cutoffs)) as spool:
        aggregator = within.mine_tasks(params, spool.feed)
    groups, report = choose_groups(aggregator)
    intents = {i.pk: i for i in Intent.objects.filter(agent=agent)}
    # every intent of the agent is named, also those with no session (yet)
    for intent_id in sorted(set(intents) - set(aggregator.intents), key=lambda pk: intents[pk].name):
        report.append(
            {
                "intent": intent_id,
                "status": MiningStatus.NO_RESOLVED,
                "reason": "no session of this intent",
                "figures": {},
            }
        )
    for entry in report:
        entry["intent"] = intents[entry["intent"]].name if entry["intent"] in intents else entry["intent"]
    counts = aggregator.counts()
    waiting = sessions_waiting(agent, timezone.now())
    counts["awaitingLabel"] = waiting["awaitingLabel"]
    if (entry := waiting_report_entry(waiting)) is not None:
        report.append(entry)
    counts["groupsTested"] = sum(1 + len(g.alternatives) for g in groups)
    counts["credible"] = sum(1 for g in groups if g.proposed)
    redactor = Redactor(agent_patterns=agent.redaction_patterns, keep=agent.tools or [])

    drafts: list[tuple[GroupChoice, Draft]] = []
    for group in groups:
        intent = intents[group.intent]
        stats = aggregator.intents[group.intent]
        rows = list(
            _sessions_with_variants(
                agent,
                intent.pk,
                cutoffs,
                variants=_top_variants(stats, mining.SUCCESS, [group.skeleton]),
                limit=STEP_SAMPLE_SESSIONS,
            )
        )
        step_samples = []
        for _sid, task, excerpt in rows:
            sample = calls_by_step(excerpt or [], group.skeleton, params.ignored_tools, params.terminal_tools)
            if sample is not None:
                step_samples.append((task, sample))
        draft = _draft(
            intent,
            group,
            stats,
            params,
            counts,
            redactor,
            [(sid, ex or []) for sid, _, ex in rows],
            step_samples=step_samples,
            failed_samples=_failed_samples(agent, intent.pk, cutoffs, stats),
            branches=_branches(agent, intent.pk, cutoffs, stats, group, params, rows),
        )
        draft.steps = [redactor.text(step) for step in draft.steps]
        draft.forbidden_actions = [redactor.text(text) for text in draft.forbidden_actions]
        # the evidence repeats each forbidden action's text
        for entry in draft.evidence.get("forbidden", []):
            entry["action"] = redactor.text(entry["action"])
        if group.workflow:
            report.append(report_entry(intent.name, MiningStatus.WORKFLOW, _workflow_reason(group, params), draft))
            continue
        if not group.proposed:
            report.append(report_entry(intent.name, MiningStatus.REPORTED, _not_credible_reason(group, params), draft))
            continue
        drafts.append((group, draft))

    created: list[ProcedureVersion] = []
    with transaction.atomic():
        # One mining run per agent at a time proposes: a concurrent run waits here, then finds the
        # groups this one proposed already covered.
        Agent.objects.select_for_update().filter(pk=agent.pk).first()
        for group, draft in drafts:
            version, entry = _propose_draft(
                agent=agent, run=run, intent=intents[group.intent], draft=draft, params=params, support=group.support
            )
            if version is not None:
                created.append(version)
            report.append(entry)
        report.sort(key=lambda e: (str(e["intent"]), e["status"]))
        skipped = [
            {
                "intent": e["intent"],
                "skeleton": e.get("skeleton") or e["figures"].get("topSkeleton"),
                "support": e["figures"].get("support", e["figures"].get("topSupport")),
                "status": e["status"],
                "reason": e["reason"],
            }
            for e in report
            if e["status"] not in (MiningStatus.MINED, MiningStatus.QUARANTINED)
        ]
        counts["candidates"] = len(created)
        counts["quarantined"] = sum(1 for v in created if v.quarantined)
        counts["skipped"] = len(skipped)
        counts["reported"] = sum(1 for e in report if e["status"] == MiningStatus.REPORTED)
        run.counts = counts
        run.skipped = skipped
        run.report = report
        run.state = MiningRun.State.DONE
        run.finished_at = timezone.now()
        run.save(update_fields=["counts", "skipped", "report", "state", "finished_at"])
        audit(
            action=AuditEvent.Action.MINE,
            actor=user,
            actor_label=ACTOR_LABEL,
            agent=agent,
            reason=f"mining run {run.pk}: {len(created)} candidate(s) from {counts['sessions']} sessions",
            after={"miningRun": run.pk, "counts": counts, "versions": [v.pk for v in created]},
        )
        if created:
            version_ids = [v.pk for v in created]
            agent_id, run_id = agent.pk, run.pk
            transaction.on_commit(lambda: _notify(agent_id, version_ids, run_id), robust=True)
    return run


def _draft(
    intent,
    group,
    stats,
    params,
    counts,
    redactor: Redactor,
    shown: list[tuple[str, Any]],
    *,
    step_samples,
    failed_samples,
    branches=(),
) -> Draft:
    """draft_candidate with the run's figures; `shown` is (session id, excerpt) of the sessions the
    evidence may name and quote (redacted here); `branches`: the conditional-step material."""
    return draft_candidate(
        intent_name=intent.name,
        intent_description=intent.description,
        group=group,
        stats=stats,
        params=params,
        step_samples=step_samples,
        failed_samples=failed_samples,
        session_ids=[sid for sid, _ in shown[: params.evidence_session_ids]],
        excerpts=[(sid, redactor.value(excerpt)) for sid, excerpt in shown[: params.evidence_excerpts]],
        counts={key: counts[key] for key in ("sessions", "withoutIntent", "withoutOutcome")},
        branches=branches,
    )


def _branches(
    agent: Agent,
    intent_id: int,
    cutoffs,
    stats: mining.IntentStats,
    group: GroupChoice,
    params: mining.MiningParams,
    candidate_rows: list[tuple[str, Any, Any]],
) -> list[Branch]:
    """The candidate's one-step variants (splits_of) with, per resolved mined session of
    each side (at most STEP_SAMPLE_SESSIONS), the result summary of the step before the branch.
    The candidate's side is the sample already read; the other side is read only when the
    candidate's sessions kept a result summary of that step (else there is nothing to test)."""

    def calls(rows, skeleton):
        found = []
        for _sid, task, excerpt in rows:
            names, entries = reduced_calls(excerpt or [], params.ignored_tools, params.terminal_tools)
            if names == skeleton:
                found.append((task, entries))
        return found

    def summary(entry) -> dict:
        result = entry.get("result")
        return result if isinstance(result, dict) else {}

    mine = calls(candidate_rows, group.skeleton)
    branches = []
    for split, candidate_has_step in splits_of(stats, group.skeleton, min_tasks=params.min_literal_tasks):
        if not any(summary(entries[split.position - 1]) for _, entries in mine):
            continue
        other = split.without_skeleton if candidate_has_step else split.with_skeleton
        theirs = calls(
            _sessions_with_variants(
                agent,
                intent_id,
                cutoffs,
                variants=_top_variants(stats, mining.SUCCESS, [other]),
                limit=STEP_SAMPLE_SESSIONS,
            ),
            other,
        )
        with_side, without_side = (mine, theirs) if candidate_has_step else (theirs, mine)
        branches.append(
            Branch(
                split=split,
                candidate_has_step=candidate_has_step,
                with_results=[(task, summary(entries[split.position - 1])) for task, entries in with_side],
                without_results=[(task, summary(entries[split.position - 1])) for task, entries in without_side],
                then_args=[(task, entries[split.position].get("args") or {}) for task, entries in with_side],
            )
        )
    return branches


def _workflow_reason(group: GroupChoice, params: mining.MiningParams) -> str:
    return (
        f"{len(group.skeleton)} calls, {step_count(group.skeleton)} steps with each repeated "
        f"block of calls as one step, more than the {params.max_steps} a procedure may have"
    )


def _not_credible_reason(group: GroupChoice, params: mining.MiningParams) -> str:
    """Why the gate (followers vs other sessions within tasks) refused the group, naming what failed."""
    gate = group.within.get("gate") or {}
    followers, others = gate.get("followers") or {}, gate.get("others") or {}
    if not followers.get("of") or not others.get("of"):
        return "no session to contrast with (every labelled session follows it, or none does): the tool order cannot be shown to matter"
    if gate.get("riskRatio") is None:
        return "no task has both sessions that follow it and sessions that do not: the tool order cannot be shown to matter within tasks"
    blockers = []
    if gate["pAdjusted"] >= params.significance_level:
        blockers.append(f"adjusted p = {gate['pAdjusted']:.3g} is not below {params.significance_level}")
    corrected_low = gate.get("lowCorrected")
    if corrected_low is None or corrected_low <= 1:
        level = 100 * (1 - params.significance_level / max(1, gate["tests"]))
        blockers.append(
            f"the risk ratio's {level:.3g} % interval starts at {corrected_low if corrected_low is not None else 0}, not above 1"
        )
    return (
        f"the tool order does not credibly explain the outcome within tasks ({'; '.join(blockers) or 'not credible'}): "
        f"{followers['count']} of {followers['of']} sessions that follow it succeeded vs {others['count']} of {others['of']} that do not, "
        f"risk ratio {gate['riskRatio']} (95 % interval from {gate['low'] if gate['low'] is not None else 0}), adjusted p = "
        f"{gate['pAdjusted']:.3g} over {gate['tests']} skeleton(s) tested, significance level {params.significance_level}"
    )


def _notify(agent_id: int, version_ids: list[int], run_id: int) -> None:
    from ..signals import candidates_created

    candidates_created.send(sender=MiningRun, agent_id=agent_id, version_ids=version_ids, mining_run_id=run_id)


def _failed_samples(
    agent: Agent, intent_id: int, cutoffs, stats: mining.IntentStats
) -> dict[str, list[tuple[Any, Mapping[str, Any]]]]:
    """tool → (task, args of the tool's first call) in failed mined sessions of the intent (at most
    FAILED_SAMPLE_SESSIONS, oldest first), for the argument contrast and for naming the literal
    arguments of a forbidden action (replyTemplates('refund_promised'))."""
    if not stats.failed.tasks:
        return {}
    rows = (
        _mined_sessions(agent, intent_id, cutoffs)
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


def agents_for_scheduled_mining() -> list[int]:
    return list(
        Agent.objects.filter(procedural_memory_enabled=True, auto_capture_enabled=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
