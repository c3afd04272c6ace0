"""The approval rules: every reason why a user may not approve a version now (four eyes, the
screen, the step limit, tools, a passing eval on the exact content, conflicts)."""

from __future__ import annotations

from django.db.models import Q

from .. import formatting
from ..conflicts import conflicts_for_candidate
from ..environments import approval_environment
from ..models import AuditEvent, EvalRun, ProcedureVersion, Status
from ..permissions import approval_holds_in, user_can_approve
from ..selectors import environment_set_hash
from .content import MAX_STEPS_APPROVABLE


def passing_eval_for(version: ProcedureVersion, *, environment: str | None = None) -> EvalRun | None:
    """The newest passing approval eval run on this version's exact content (against `environment`'s
    set when given), or None."""
    runs = EvalRun.objects.filter(
        version=version,
        kind=EvalRun.Kind.APPROVAL,
        content_hash=version.content_hash,
        state=EvalRun.State.DONE,
        verdict=EvalRun.Verdict.PASS,
    )
    if environment is not None:
        runs = runs.filter(environment=environment)
    return runs.order_by("-finished_at", "-id").first()


def authored_since_active(version: ProcedureVersion, user) -> list[int]:
    """Numbers of the versions of `version`'s procedure that `user` proposed or edited since the
    current ACTIVE version: every version numbered above it (all of them when none is ACTIVE), and
    every version on the edit chain (`based_on`) that leads from `version` back to it. The four-eyes
    rule covers the whole chain, so an approver cannot edit v7 and approve a colleague's v9 on top.
    One query: a procedure has few versions."""
    rows = {
        row["pk"]: row
        for row in ProcedureVersion.objects.filter(procedure_id=version.procedure_id).values(
            "pk", "number", "status", "based_on_id", "proposed_by_id", "edited_by_id"
        )
    }
    active = next((row for row in rows.values() if row["status"] == Status.ACTIVE), None)
    floor = active["number"] if active is not None else 0
    since = {pk for pk, row in rows.items() if row["number"] > floor}
    seen: set[int] = set()
    pk = version.pk
    while pk is not None and pk in rows and pk not in seen and (active is None or pk != active["pk"]):
        seen.add(pk)
        pk = rows[pk]["based_on_id"]
    return sorted(
        rows[pk]["number"] for pk in since | seen if user.pk in (rows[pk]["proposed_by_id"], rows[pk]["edited_by_id"])
    )


def four_eyes_blockers(version: ProcedureVersion, user) -> list[str]:
    """The four-eyes rule, the one place it is decided: why `user` may not approve `version` because
    they wrote it (empty: they did not). Whoever proposed the version, made its last edit, or
    proposed or edited any version on its way since the ACTIVE one (`authored_since_active`) must
    leave the decision to another approver. `approval_blockers` includes these; the approve page
    asks for them to explain its 403."""
    if user is None or not user.is_authenticated:
        return []
    reasons = []
    if version.proposed_by_id == user.pk:
        reasons.append("You proposed this procedure; another approver must decide (four-eyes rule).")
    if version.edited_by_id == user.pk:
        reasons.append("You made the last edit of this version; another approver must decide (four-eyes rule).")
    earlier = [n for n in authored_since_active(version, user) if n != version.number]
    if earlier and version.proposed_by_id != user.pk and version.edited_by_id != user.pk:
        listed = ", ".join(f"v{n}" for n in earlier)
        reasons.append(
            f"You proposed or edited {listed} of this procedure since its active version; "
            "another approver must decide (four-eyes rule)."
        )
    return reasons


def selection_reach_blocker(run: EvalRun) -> str:
    """The blocker of a run whose served selection injected the candidate in too few of its intent's
    cases ("" when none): its appliesWhen does not reach the tasks it is for. Runs from before the
    replay selected as agents do carry no selection and get none."""
    selection = (run.verdict_detail or {}).get("selection")
    if not selection or not selection.get("targetCases"):
        return ""
    minimum = float((run.thresholds or {}).get("min_injected_share", 0.0))
    share = selection.get("injectedShare") or 0.0
    if share >= minimum:
        return ""
    return (
        f"The served selection injected the candidate in {selection['injectedIn']} of {selection['targetCases']} cases "
        f"of its intent {selection['targetIntent']} ({formatting.percent(share)}; at least {formatting.percent(minimum)} needed): its appliesWhen does "
        "not reach the tasks it is for. Reword it and run the eval again."
    )


def approval_blockers(
    version: ProcedureVersion,
    user,
    *,
    acknowledged_conflicts: bool = False,
    may_approve: bool | None = None,
    conflict_vectors: dict | None = None,
) -> list[str]:
    """Every reason why `user` may not approve `version` now (empty: may approve). The UI shows
    these next to a disabled button; version_approve re-checks them under the row lock. Conflicts
    with the agent's other ACTIVE procedures (library/conflicts.py) block unless acknowledged.
    `may_approve`: `user_can_approve(user, version.procedure)` when a page has already asked;
    None asks (as version_approve does, under the lock). `conflict_vectors`: the embeddings the
    conflict check needs, computed before a lock was taken (conflicts.vectors_for_candidate);
    with them nothing is embedded here (conflicts.VectorsMissing when they no longer suffice)."""
    reasons: list[str] = []
    if version.status != Status.CANDIDATE:
        reasons.append(f"Only a candidate can be approved; this version is {version.get_status_display().lower()}.")
        return reasons
    if not (user_can_approve(user, version.procedure) if may_approve is None else may_approve):
        reasons.append("You do not hold the approve permission for this procedure or its agent.")
    reasons.extend(four_eyes_blockers(version, user))
    if version.quarantined:
        reasons.append("The policy screen quarantined this version; edit out the flagged text first.")
    if len(version.steps) > MAX_STEPS_APPROVABLE:
        reasons.append(
            f"It has {len(version.steps)} steps; more than {MAX_STEPS_APPROVABLE} is a workflow that belongs in code."
        )
    if version.content_hash != version.compute_content_hash():
        reasons.append("The stored content hash does not match the content.")
    missing = sorted(set(version.required_tools) - set(version.procedure.agent.tools))
    if missing:
        reasons.append(f"The agent does not have the required tools: {', '.join(missing)}.")
    # the eval must have replayed against the set of the environment approving releases it to
    target = approval_environment(version.procedure.agent)
    run = passing_eval_for(version, environment=target)
    if run is None:
        elsewhere = passing_eval_for(version)
        reasons.append(
            "No passing eval run on this exact content yet."
            if elsewhere is None
            else f"Eval run {elsewhere.pk} passed against the {elsewhere.set_label}, but approving releases it to "
            f"{target}: start a new run (it replays against the {target} set)."
        )
    else:
        if run.baseline_hash and run.baseline_hash != environment_set_hash(version.procedure.agent, target):
            reasons.append(f"The {run.set_label} changed since the eval run started; start a new run.")
        reach = selection_reach_blocker(run)
        if reach:
            reasons.append(reach)
    if not acknowledged_conflicts:
        for conflict in conflicts_for_candidate(version, vectors=conflict_vectors):
            reasons.append(f"Conflict (acknowledge it on the approve page to approve anyway): {conflict.message}")
    return reasons


def moved_since_approval(version: ProcedureVersion) -> bool:
    """Whether `version`'s procedure changed namespace after the version was approved: a scope move
    of the procedure, or a move of its agent that took it along (read from the `scope` audit rows,
    written in the same transaction as every move). Without a recorded approval time, any move."""
    procedure = version.procedure
    events = AuditEvent.objects.filter(action=AuditEvent.Action.SCOPE).filter(
        Q(procedure_id=procedure.pk) | Q(procedure__isnull=True, agent_id=procedure.agent_id)
    )
    if version.approved_at is not None:
        events = events.filter(at__gte=version.approved_at)
    for procedure_id, before, after in events.values_list("procedure_id", "before", "after"):
        if procedure_id is not None and (before or {}).get("namespace") != (after or {}).get("namespace"):
            return True
        if procedure_id is None and procedure.key in (after or {}).get("proceduresMoved", []):
            return True
    return False


def rollback_gate_blocker(version: ProcedureVersion) -> str:
    """Why rolling back to `version` would carry it past the approve gate of the namespace its
    procedure is in now ("" when it would not): the procedure moved after the version was approved,
    and its approver does not hold the approve right here. Caller holds the procedure's row lock."""
    namespace = version.procedure.namespace
    if not moved_since_approval(version) or approval_holds_in(version, namespace):
        return ""
    who = version.approved_by.get_username() if version.approved_by_id else "nobody recorded"
    return (
        f"v{version.number} was approved by {who} before {version.procedure.key} moved into namespace "
        f"{namespace.name}, and {who} does not hold the approve right there: an approver of {namespace.name} "
        "approves a new version instead."
    )
