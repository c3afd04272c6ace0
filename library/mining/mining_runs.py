"""The miner's Django side: reads an agent's sessions, asks the pure core (library/mining/) for groups, statistics,
backtests and drafts, skips what the library already covers, proposes the credible rest as CANDIDATE
versions through procedure_propose (which applies the policy screen), and records a report that
names every intent of the agent with what happened to it and why. Every run leaves a MiningRun row.

Reading (library/mining/session_reads.py) is one aggregate query: PostgreSQL folds every task into
its make-up (its sessions' outcomes, held-back flags and skeletons) and counts the tasks of each
distinct make-up, so Python reads one row per make-up, not per session (memory grows with distinct
make-ups and skeletons, not with sessions); only the few sessions that become evidence are read one
by one (bounded per group).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from .. import formatting
from ..embeddings import embed
from ..ingest.outcomes import sessions_waiting, waiting_report_entry
from ..models import Agent, AuditEvent, Intent, MiningRun, Procedure, ProcedureVersion, Source, Status
from ..redaction.redactor import Redactor
from ..services import audit, procedure_propose, required_reason
from ..signals import candidates_created
from . import skeletons as mining
from . import within
from .arguments import calls_by_step, reduced_calls
from .coding_runs import coding_mining_run, coding_parameters
from .drafting import Draft, draft_candidate, report_entry
from .evidence import Branch, splits_of
from .groups import GroupChoice, choose_groups, step_count
from .groups import Status as MiningStatus
from .model_draft import model_draft, reworded, rule_draft_record
from .session_reads import (
    HoldOut,
    MakeUpSpool,
    failed_samples,
    held_back,
    sessions_with_variants,
    task_groups,
    top_variants,
)

logger = logging.getLogger(__name__)

ACTOR_LABEL = "miner"
STEP_SAMPLE_SESSIONS = 200


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
        drafted = model_draft(agent=agent, draft=draft, intent_name=intent.name)
        if drafted.status == "used":
            provenance.update(draftedBy={"kind": "model", "model": drafted.model}, ruleDraft=rule_draft_record(draft))
        else:
            provenance["modelDraft"] = drafted.report()
        draft = drafted.draft
    polish = _polisher()
    if polish is not None:
        polished = polish(replace(draft))

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


def _mine(
    *, agent: Agent, run: MiningRun, params: mining.MiningParams, user, hold_out: str = HoldOut.NEWEST
) -> MiningRun:
    cutoffs = held_back(agent, params.backtest_share, hold_out)
    # two readings of the same make-ups (distinct-task counts, then the tested groups' within-task
    # tables): the database is read once, the second reading replays a spool of the first
    with MakeUpSpool(task_groups(agent, cutoffs)) as spool:
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
            sessions_with_variants(
                agent,
                intent.pk,
                cutoffs,
                variants=top_variants(stats, mining.SUCCESS, [group.skeleton]),
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
            failed_samples=failed_samples(agent, intent.pk, cutoffs, stats),
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
            reason=f"mining run {run.pk}: {formatting.count(len(created), 'candidates')} from {formatting.count(counts['sessions'], 'sessions')}",
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
            sessions_with_variants(
                agent,
                intent_id,
                cutoffs,
                variants=top_variants(stats, mining.SUCCESS, [other]),
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
        blockers.append(
            f"{formatting.p_value(gate['pAdjusted'], 'adjusted p')} is not below {params.significance_level}"
        )
    corrected_low = gate.get("lowCorrected")
    if corrected_low is None or corrected_low <= 1:
        level = 100 * (1 - params.significance_level / max(1, gate["tests"]))
        blockers.append(
            f"the risk ratio's {level:.3g} % interval starts at {formatting.ratio(corrected_low or 0)}, not above 1"
        )
    return (
        f"the tool order does not credibly explain the outcome within tasks ({'; '.join(blockers) or 'not credible'}): "
        f"{followers['count']} of {followers['of']} sessions that follow it succeeded vs {others['count']} of {others['of']} that do not, "
        f"risk ratio {formatting.ratio(gate['riskRatio'])} ({formatting.interval(gate['low'], lower_only=True)}), "
        f"{formatting.p_value(gate['pAdjusted'], 'adjusted p')} over {formatting.count(gate['tests'], 'skeletons')} tested, "
        f"significance level {params.significance_level}"
    )


def _notify(agent_id: int, version_ids: list[int], run_id: int) -> None:
    candidates_created.send(sender=MiningRun, agent_id=agent_id, version_ids=version_ids, mining_run_id=run_id)


def agents_for_scheduled_mining() -> list[int]:
    return list(
        Agent.objects.filter(procedural_memory_enabled=True, auto_capture_enabled=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
