"""The miner's Django side: reads an agent's sessions, asks library/mining.py for groups, contrast
and drafts, skips what the library already covers, and proposes the rest as CANDIDATE versions
through procedure_propose (which applies the policy screen). Every run leaves a MiningRun row.

Reading is one aggregate query (intent, resolved, escalated, skeleton → count) streamed with a
server-side cursor, so memory grows with the number of distinct skeletons, not of sessions; only
the few sessions that become evidence are read one by one (bounded per group).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.module_loading import import_string

from ..models import Agent, AgentSession, AuditEvent, Intent, MiningRun, Procedure, ProcedureVersion, Source, Status
from ..redaction import Redactor
from ..services import audit, procedure_propose
from . import skeletons as mining

logger = logging.getLogger(__name__)

ACTOR_LABEL = "miner"
STEP_SAMPLE_SESSIONS = 200
FAILED_SAMPLE_SESSIONS = 100
RAW_VARIANTS_QUERIED = 10


class Trigger:
    MANUAL = "manual"
    SCHEDULED = "scheduled"


def mining_params_for(agent: Agent, *, support_threshold: int | None = None) -> mining.MiningParams:
    return mining.MiningParams(
        support_threshold=support_threshold if support_threshold is not None else agent.support_threshold,
        ignored_tools=tuple(getattr(settings, "PROCMEM_MINING_IGNORED_TOOLS", ["think"])),
    )


# ---------------------------------------------------------------------------------------------- selectors


def session_skeleton_counts(agent: Agent) -> Iterable[tuple[int | None, bool | None, bool | None, list[str], int]]:
    """(intent id, resolved, escalated, raw skeleton, sessions), grouped by the database."""
    return (
        AgentSession.objects.filter(agent=agent)
        .values_list("intent_id", "resolved", "escalated", "skeleton")
        .annotate(n=Count("id"))
        .order_by()
        .iterator(chunk_size=5000)
    )


def _skeleton_filter(variants: Iterable[tuple[str, ...]]) -> Q:
    query = Q()
    for variant in variants:
        query |= Q(skeleton=list(variant))
    return query


def _sessions_with_variants(agent: Agent, intent_id: int, *, resolved: bool, variants: Iterable[tuple[str, ...]], limit: int):
    queryset = AgentSession.objects.filter(agent=agent, intent_id=intent_id, resolved=resolved)
    if resolved:
        queryset = queryset.exclude(escalated=True)
    return (
        queryset.filter(_skeleton_filter(variants))
        .order_by("ended_at", "session_id")
        .values_list("session_id", "redacted_excerpt")[:limit]
    )


def _top_variants(stats: mining.IntentStats, label: str, reduced_skeletons: Iterable[mining.Skeleton]) -> list[tuple[str, ...]]:
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


def _covered_by(versions: list[ProcedureVersion], skeleton: mining.Skeleton, params: mining.MiningParams) -> ProcedureVersion | None:
    for version in versions:
        if version.skeleton and mining.reduce_skeleton(version.skeleton, params.ignored_tools) == skeleton:
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


def _polisher() -> Callable[[mining.Draft], mining.Draft] | None:
    path = getattr(settings, "PROCMEM_MINING_POLISH", "") or ""
    return import_string(path) if path else None


# ---------------------------------------------------------------------------------------------- the run


def mining_run_execute(
    *,
    agent: Agent,
    started_by=None,
    support_threshold: int | None = None,
    trigger: str = Trigger.MANUAL,
) -> MiningRun:
    """Mines one agent's sessions into CANDIDATE versions and records the run. Refuses nothing
    silently: a switched-off agent gets a run row that says why nothing was mined."""
    params = mining_params_for(agent, support_threshold=support_threshold)
    parameters = {**params.to_dict(), "trigger": trigger, "nearDuplicate": float(getattr(settings, "PROCMEM_MINING_NEAR_DUPLICATE", 0.85))}
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
        run.counts = {"sessions": 0, "candidates": 0}
        run.finished_at = timezone.now()
        run.save(update_fields=["state", "skipped", "counts", "finished_at"])
        return run
    try:
        return _mine(agent=agent, run=run, params=params, user=user)
    except Exception as exc:
        MiningRun.objects.filter(pk=run.pk).update(state=MiningRun.State.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000], finished_at=timezone.now())
        raise


def _mine(*, agent: Agent, run: MiningRun, params: mining.MiningParams, user) -> MiningRun:
    aggregator = mining.Aggregator(params)
    for intent_id, resolved, escalated, skeleton, n in session_skeleton_counts(agent):
        aggregator.add(intent=intent_id, resolved=resolved, escalated=escalated, raw_skeleton=skeleton or [], count=n)
    groups, skipped = mining.choose_groups(aggregator)
    intents = {i.pk: i for i in Intent.objects.filter(agent=agent, pk__in=list(aggregator.intents))}
    for entry in skipped:
        entry["intent"] = intents[entry["intent"]].name if entry["intent"] in intents else entry["intent"]
    counts = aggregator.counts()
    counts["groupsAtThreshold"] = sum(1 + len(g.alternatives) for g in groups)
    redactor = Redactor(agent_patterns=agent.redaction_patterns)

    drafts: list[tuple[mining.GroupChoice, mining.Draft]] = []
    for group in groups:
        intent = intents[group.intent]
        stats = aggregator.intents[group.intent]
        covered = _covered_by(_live_versions(agent, intent.pk), group.skeleton, params)
        if covered is not None:
            skipped.append(_skip(intent, group, f"covered by {covered.procedure.key} v{covered.number} ({covered.status}) with the same skeleton"))
            continue
        rows = list(_sessions_with_variants(
            agent, intent.pk, resolved=True, variants=_top_variants(stats, "resolved", [group.skeleton]), limit=STEP_SAMPLE_SESSIONS
        ))
        step_samples = [s for s in (mining.calls_by_step(ex or [], group.skeleton, params.ignored_tools) for _, ex in rows) if s is not None]
        failed_samples = _failed_samples(agent, intent.pk, stats, group, params)
        draft = mining.draft_candidate(
            intent_name=intent.name,
            intent_description=intent.description,
            group=group,
            stats=stats,
            params=params,
            step_samples=step_samples,
            failed_samples=failed_samples,
            session_ids=[sid for sid, _ in rows[: params.evidence_session_ids]],
            excerpts=[(sid, redactor.value(ex or [])) for sid, ex in rows[: params.evidence_excerpts]],
            counts={"sessions": counts["sessions"], "withoutIntent": counts["withoutIntent"], "withoutOutcome": counts["withoutOutcome"]},
        )
        draft.steps = [redactor.text(step) for step in draft.steps]
        draft.forbidden_actions = [redactor.text(text) for text in draft.forbidden_actions]
        drafts.append((group, draft))

    polish = _polisher()
    created: list[ProcedureVersion] = []
    with transaction.atomic():
        # One mining run per agent at a time proposes: a concurrent run waits here, then finds the
        # groups this one proposed already covered.
        Agent.objects.select_for_update().filter(pk=agent.pk).first()
        for group, draft in drafts:
            intent = intents[group.intent]
            live = _live_versions(agent, intent.pk)
            covered = _covered_by(live, group.skeleton, params)
            if covered is not None:
                skipped.append(_skip(intent, group, f"covered by {covered.procedure.key} v{covered.number} ({covered.status}) with the same skeleton"))
                continue
            near = _near_duplicate(live, draft.applies_when)
            provenance: dict[str, Any] = {"miningRun": run.pk, "support": group.support, "intent": intent.name}
            if near is not None:
                key = near[0].procedure.key
                provenance["nearDuplicateOf"] = {"id": key, "version": near[0].number, "similarity": near[1]}
            else:
                key = _free_key(agent, draft.key, intent.pk)
            if polish is not None:
                polished = polish(replace(draft))
                draft = replace(draft, applies_when=polished.applies_when, steps=polished.steps, forbidden_actions=polished.forbidden_actions)
                provenance["polishedBy"] = settings.PROCMEM_MINING_POLISH
            evidence = {**draft.evidence, "miningRunId": run.pk}
            if near is not None:
                evidence["nearDuplicateOf"] = provenance["nearDuplicateOf"]
            version = procedure_propose(
                agent=agent,
                intent=intent,
                key=key,
                applies_when=draft.applies_when,
                steps=draft.steps,
                required_tools=draft.required_tools,
                forbidden_actions=draft.forbidden_actions,
                source=Source.MINED,
                actor_label=ACTOR_LABEL,
                evidence=evidence,
                provenance=provenance,
                mining_run=run,
                skeleton=draft.skeleton,
                reason=evidence["summary"],
            )
            created.append(version)
        counts["candidates"] = len(created)
        counts["quarantined"] = sum(1 for v in created if v.quarantined)
        counts["skipped"] = len(skipped)
        run.counts = counts
        run.skipped = skipped
        run.state = MiningRun.State.DONE
        run.finished_at = timezone.now()
        run.save(update_fields=["counts", "skipped", "state", "finished_at"])
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


def _notify(agent_id: int, version_ids: list[int], run_id: int) -> None:
    from ..signals import candidates_created

    candidates_created.send(sender=MiningRun, agent_id=agent_id, version_ids=version_ids, mining_run_id=run_id)


def _skip(intent: Intent, group: mining.GroupChoice, reason: str) -> dict[str, Any]:
    return {"intent": intent.name, "skeleton": list(group.skeleton), "support": group.support, "reason": reason}


def _failed_samples(agent: Agent, intent_id: int, stats: mining.IntentStats, group: mining.GroupChoice, params: mining.MiningParams) -> dict[str, list[Mapping[str, Any]]]:
    """Args of the offending tool's calls in failed sessions that show a forbidden feature, so that
    the forbidden action can name the literal arguments (replyTemplates('refund_promised'))."""
    result = mining.contrast(stats, group.skeleton, params)
    samples: dict[str, list[Mapping[str, Any]]] = {}
    for feature in result.forbidden:
        if feature.kind == "tool":
            matching = [s for s in stats.failed if feature.tool in s]
        else:
            matching = [s for s in stats.failed if mining._without_before(s, feature.before, feature.tool)]
        variants = _top_variants(stats, "failed", matching)
        rows = _sessions_with_variants(agent, intent_id, resolved=False, variants=variants, limit=FAILED_SAMPLE_SESSIONS)
        args: list[Mapping[str, Any]] = []
        for _sid, excerpt in rows:
            for entry in excerpt or []:
                if entry.get("role") == "tool_call" and entry.get("tool") == feature.tool:
                    args.append(entry.get("args") if isinstance(entry.get("args"), Mapping) else {})
                    break
        samples[feature.tool] = args
    return samples


def agents_for_scheduled_mining() -> list[int]:
    return list(
        Agent.objects.filter(procedural_memory_enabled=True, auto_capture_enabled=True).order_by("pk").values_list("pk", flat=True)
    )
