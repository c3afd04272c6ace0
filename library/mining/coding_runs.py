"""The family miner's Django side (a coding agent's mining run; library/mining/mining_runs.py hands coding
agents here): reads the agent's sessions, asks families.mine_families for one candidate per task
family, proposes each through procedure_propose (the policy screen applies; never ACTIVE), and
records a report with one entry per family — the families that yielded nothing say why.

Nothing is held back and no outcome contrast gates a candidate: the unresolved sessions of a
family are counted in its evidence, shown, not tested. What a candidate is worth is measured by
`manage.py measure_coding` (leave one task out, library/coding/measure.py).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db import transaction
from django.utils import timezone

from .. import formatting
from ..coding.families import FamilyCandidate, FamilyOutcome, Trace, clean_family_rules, edited_files, mine_families
from ..coding.procedures import tools_named
from ..models import Agent, AgentSession, AuditEvent, Intent, MiningRun, ProcedureVersion, Source, Status
from ..redaction.redactor import Redactor
from ..services import audit, file_indexes_rebuild, procedure_propose
from ..signals import candidates_created

ACTOR_LABEL = "miner"
EXCERPTS_SHOWN = 3
TOO_FEW_CALLS = "too few tool calls"


def coding_parameters(agent: Agent) -> dict[str, Any]:
    return {
        "agentKind": Agent.Kind.CODING,
        "method": "task families (library/coding/families.py)",
        "minTraces": agent.coding_min_traces,
        "familyRules": list(agent.coding_family_rules or []),
        "minToolCalls": agent.min_tool_calls,
    }


def _traces(agent: Agent) -> tuple[list[Trace], dict[str, Any], int]:
    """The agent's sessions as traces (those with at least min_tool_calls calls), each session's
    intent id, and how many were too short. The redacted excerpts (a third of what the sessions
    store) are not read here: only a few are shown (`_excerpts`), and a purged session's in one more
    query."""
    traces: list[tuple[int, Trace]] = []
    about: dict[str, Any] = {}
    too_short = 0

    def add(pk: int, session_id: str, task_key: str, task: str, resolved, calls: list, intent_id) -> None:
        nonlocal too_short
        if len(calls) < agent.min_tool_calls:
            too_short += 1
            return
        traces.append((pk, Trace(session_id, task_key or "", task or "", resolved, calls, edited_files(calls))))
        about[session_id] = intent_id

    rows = (
        AgentSession.objects.filter(agent=agent)
        .order_by("pk")
        .values_list("pk", "session_id", "task_key", "task", "resolved", "tool_calls", "raw_purged", "intent_id")
    )
    purged_rows = []
    for pk, session_id, task_key, task, resolved, calls, purged, intent_id in rows.iterator(chunk_size=200):
        if purged:
            purged_rows.append((pk, session_id, task_key, task, resolved, intent_id))
        else:
            add(pk, session_id, task_key, task, resolved, calls if isinstance(calls, list) else [], intent_id)
    if purged_rows:
        excerpts = dict(
            AgentSession.objects.filter(pk__in=[row[0] for row in purged_rows]).values_list("pk", "redacted_excerpt")
        )
        for pk, session_id, task_key, task, resolved, intent_id in purged_rows:
            # past the retention window only the excerpt keeps commands (redacted, cut short)
            calls = [
                {"name": e.get("tool"), "args": e.get("args") or {}, "ok": e.get("ok")}
                for e in excerpts.get(pk) or []
                if e.get("role") == "tool_call"
            ]
            add(pk, session_id, task_key, task, resolved, calls, intent_id)
        traces.sort(key=lambda pair: pair[0])  # in the sessions' order, as one query read them
    return [trace for _pk, trace in traces], about, too_short


def _resolved_ids(outcome: FamilyOutcome) -> list[str]:
    """The sessions of a family that resolved their task, in the family's order."""
    return [t.session_id for t in outcome.traces if t.resolved is True]


def _excerpts(agent: Agent, session_ids: set[str]) -> dict[str, list]:
    """The redacted excerpts of the agent's sessions `session_ids`."""
    rows = AgentSession.objects.filter(agent=agent, session_id__in=session_ids).values_list(
        "session_id", "redacted_excerpt"
    )
    return {session_id: excerpt or [] for session_id, excerpt in rows}


def _live_versions(agent: Agent, keys: list[str]) -> dict[str, list[ProcedureVersion]]:
    """The ACTIVE and CANDIDATE versions of the agent's procedures `keys`, by key, the newest first."""
    live: dict[str, list[ProcedureVersion]] = {}
    versions = (
        ProcedureVersion.objects.filter(
            procedure__agent=agent, procedure__key__in=keys, status__in=[Status.ACTIVE, Status.CANDIDATE]
        )
        .select_related("procedure")
        .order_by("-number")
    )
    for version in versions:
        live.setdefault(version.procedure.key, []).append(version)
    return live


def _entry(outcome: FamilyOutcome, intent_name: str, status: str, reason: str) -> dict[str, Any]:
    figures = outcome.figures()
    entry: dict[str, Any] = {
        "intent": intent_name,
        "family": outcome.family,
        "status": status,
        "reason": reason,
        "figures": figures,
    }
    if outcome.candidate is not None:
        candidate = outcome.candidate
        entry.update(
            steps=candidate.steps,
            verifyCommand=candidate.verify_command,
            preconditions=candidate.preconditions,
            postconditions=candidate.postconditions,
            skeleton=candidate.skeleton,
            recoveryNotes=[n.to_dict() for n in candidate.notes],
        )
    return entry


def _redacted(candidate: FamilyCandidate, redactor: Redactor) -> FamilyCandidate:
    candidate.applies_when = redactor.text(candidate.applies_when)
    candidate.steps = [redactor.text(s) for s in candidate.steps]
    candidate.preconditions = [redactor.text(p) for p in candidate.preconditions]
    candidate.postconditions = [redactor.text(p) for p in candidate.postconditions]
    candidate.verify_command = redactor.text(candidate.verify_command)
    candidate.evidence = redactor.value(candidate.evidence)
    return candidate


def _same_content(version: ProcedureVersion, candidate: FamilyCandidate) -> bool:
    return (
        version.applies_when == candidate.applies_when
        and list(version.steps) == candidate.steps
        and list(version.preconditions or []) == candidate.preconditions
        and list(version.postconditions or []) == candidate.postconditions
        and version.verify_command == candidate.verify_command
    )


def coding_mining_run(*, agent: Agent, run: MiningRun, user) -> MiningRun:
    """Mines a coding agent's sessions by task family into CANDIDATE versions and completes `run`."""
    traces, about, too_short = _traces(agent)
    outcomes = mine_families(
        traces, min_traces=agent.coding_min_traces, rules=clean_family_rules(agent.coding_family_rules)
    )
    intents = {i.pk: i for i in Intent.objects.filter(agent=agent)}
    redactor = Redactor(agent_patterns=agent.redaction_patterns, keep=agent.tools or [])
    report: list[dict[str, Any]] = []
    created: list[ProcedureVersion] = []
    with transaction.atomic():
        # one mining run per agent at a time proposes (the same lock as library/mining/mining_runs.py)
        Agent.objects.select_for_update().filter(pk=agent.pk).first()
        # what the sessions saw, per repository: the files a task's words point to (served on request)
        indexes = file_indexes_rebuild(agent=agent, traces=traces, mining_run=run)
        # the excerpts the candidates show: the first resolved sessions of each family with one
        excerpts = _excerpts(
            agent,
            {
                sid
                for outcome in outcomes
                if outcome.candidate is not None
                for sid in _resolved_ids(outcome)[:EXCERPTS_SHOWN]
            },
        )
        # the live versions of every candidate's procedure, read once (the newest first)
        existing = _live_versions(agent, [o.candidate.key for o in outcomes if o.candidate is not None])
        proposed: set[str] = set()
        for outcome in outcomes:
            intent_ids = Counter(about[t.session_id] for t in outcome.traces if about[t.session_id] is not None)
            intent = intents.get(intent_ids.most_common(1)[0][0]) if intent_ids else None
            intent_name = intent.name if intent else None
            if outcome.candidate is None:
                report.append(_entry(outcome, intent_name, outcome.status, outcome.reason))
                continue
            if intent is None:
                report.append(
                    _entry(outcome, None, "no intent", "its sessions carry no intent: a procedure serves one intent")
                )
                continue
            candidate = _redacted(outcome.candidate, redactor)
            if candidate.key in proposed:  # a key proposed before in this run: its versions read again
                live = _live_versions(agent, [candidate.key]).get(candidate.key, [])
            else:
                live = existing.get(candidate.key, [])
            same = next((v for v in live if _same_content(v, candidate)), None)
            if same is not None:
                report.append(
                    _entry(
                        outcome,
                        intent_name,
                        "duplicate",
                        f"{candidate.key} v{same.number} ({same.status}) has the same content",
                    )
                )
                continue
            resolved_ids = _resolved_ids(outcome)
            evidence = {
                **candidate.evidence,
                "miningRunId": run.pk,
                "sessionIds": resolved_ids[:40],
                "excerpts": [
                    {"sessionId": sid, "excerpt": excerpts.get(sid, [])} for sid in resolved_ids[:EXCERPTS_SHOWN]
                ],
                "outcomes": {**{k: v for k, v in outcome.figures().items() if k in ("resolved", "failed")}},
            }
            version = procedure_propose(
                agent=agent,
                intent=intent,
                key=candidate.key,
                applies_when=candidate.applies_when,
                steps=candidate.steps,
                required_tools=tools_named(candidate.steps, agent.tools or []),
                forbidden_actions=[],
                source=Source.MINED,
                actor_label=ACTOR_LABEL,
                evidence=evidence,
                mining_run=run,
                skeleton=candidate.skeleton,
                preconditions=candidate.preconditions,
                postconditions=candidate.postconditions,
                verify_command=candidate.verify_command,
                provenance={"miningRun": run.pk, "family": candidate.family, "intent": intent.name},
                reason=evidence["summary"],
            )
            created.append(version)
            proposed.add(candidate.key)
            status = "quarantined" if version.quarantined else "mined"
            entry = _entry(
                outcome,
                intent_name,
                status,
                f"proposed as {candidate.key} v{version.number}"
                + (", and quarantined by the policy screen" if version.quarantined else ""),
            )
            entry["version"] = {"id": candidate.key, "number": version.number, "pk": version.pk}
            report.append(entry)
        if too_short:
            report.append(
                {
                    "intent": None,
                    "family": None,
                    "status": TOO_FEW_CALLS,
                    "figures": {"sessions": too_short},
                    "reason": f"{too_short} session{'s' if too_short != 1 else ''} with fewer than {agent.min_tool_calls} tool calls: not read",
                }
            )
        counts = {
            "sessions": len(traces) + too_short,
            "tooFewToolCalls": too_short,
            "families": sum(1 for o in outcomes if o.status != "no edited source file"),
            "candidates": len(created),
            "quarantined": sum(1 for v in created if v.quarantined),
            "fileIndexes": len(indexes),
        }
        counts["familiesNotProposed"] = sum(1 for e in report if e["status"] not in ("mined", "quarantined"))
        run.counts = counts
        run.report = report
        run.skipped = [
            {"intent": e["intent"], "family": e.get("family"), "status": e["status"], "reason": e["reason"]}
            for e in report
            if e["status"] not in ("mined", "quarantined")
        ]
        run.state = MiningRun.State.DONE
        run.finished_at = timezone.now()
        run.save(update_fields=["counts", "skipped", "report", "state", "finished_at"])
        audit(
            action=AuditEvent.Action.MINE,
            actor=user,
            actor_label=ACTOR_LABEL,
            agent=agent,
            reason=(
                f"mining run {run.pk}: {formatting.count(len(created), 'candidates')} from "
                f"{formatting.count(counts['sessions'], 'sessions')} in {formatting.count(counts['families'], 'task families')}"
            ),
            after={"miningRun": run.pk, "counts": counts, "versions": [v.pk for v in created]},
        )
        if created:
            agent_id, version_ids, run_id = agent.pk, [v.pk for v in created], run.pk
            transaction.on_commit(
                lambda: candidates_created.send(
                    sender=MiningRun, agent_id=agent_id, version_ids=version_ids, mining_run_id=run_id
                ),
                robust=True,
            )
    return run
