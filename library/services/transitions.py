"""The status changes of a stored version: approve, re-review, reject, retire and roll back, each
in one transaction under the decisions' lock order."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from .. import embeddings
from ..conflicts import VectorsMissing, conflicts_for_candidate, vectors_for_candidate
from ..environments import approval_environment, has_staging
from ..models import Agent, AuditEvent, EvalRun, Procedure, ProcedureVersion, Status
from ..permissions import user_can_approve, user_can_manage_procedure, user_can_review
from ..selectors import environment_set_hash
from .approval import approval_blockers, passing_eval_for, rollback_gate_blocker
from .errors import DecisionConflict, LifecycleError
from .events import _notify_after_commit, audit, required_reason
from .locking import _decision, _lock_procedure, _lock_version, _set_status
from .rollouts import refuse_while_rollout_runs, stage_on_approval

APPROVAL_ATTEMPTS = 3  # decisions abandoned because the active set needed new vectors meanwhile


def _lock_for_admin_change(version: ProcedureVersion, *, user, doing: str, status: str, only: str) -> ProcedureVersion:
    """The checks of an admin's change to the production version (retire, roll back): locks agent,
    procedure and version, refuses without the manage right, unless the version is in `status`
    (`only` says which version may be changed), and while a rollout of the procedure runs.
    Caller holds a transaction."""
    _lock_procedure(version, agent_too=True)
    locked = _lock_version(version)
    if not user_can_manage_procedure(user, locked.procedure):
        raise PermissionDenied(f"You may not {doing} versions of {locked.procedure.key}.")
    if locked.status != status:
        raise LifecycleError(f"{only}; {locked} is {locked.status}.")
    refuse_while_rollout_runs(locked.procedure, doing)
    return locked


def _retire_current_active(procedure: Procedure, *, user, reason: str) -> None:
    """Retires the procedure's ACTIVE version, if it has one, to make room for another: at most one
    version of a procedure is ACTIVE. The caller is inside the transaction that activates the other."""
    current = ProcedureVersion.objects.select_for_update().filter(procedure=procedure, status=Status.ACTIVE).first()
    if current is not None:
        _set_status(current, Status.RETIRED, user=user, reason=reason, action=AuditEvent.Action.AUTO_RETIRE)


def version_approve(
    *, version: ProcedureVersion, user, comment: str = "", acknowledge_conflicts: bool = False
) -> ProcedureVersion:
    """CANDIDATE → ACTIVE. The previous ACTIVE version of the same procedure becomes RETIRED in the
    same transaction. When the agent has a staging environment, CANDIDATE → APPROVED instead:
    released to staging, production untouched (services/releases.py). Two approvers racing: the procedure lock serialises them, the second re-checks
    every blocker against what the first committed and is refused (LifecycleError, a 409). A
    conflict with another ACTIVE procedure blocks unless `acknowledge_conflicts`; then it is
    recorded in a `conflict_ack` audit row."""
    if user is None or not user.is_authenticated:
        raise PermissionDenied("Sign in to approve.")
    # The conflict check compares appliesWhen embeddings; computing one may load the model and
    # take seconds, so it happens here, before any lock, and the check under the lock only reads
    # them. Should the active set change in between and need another, the decision is abandoned
    # (locks released), the missing vectors computed, and it is decided again.
    vectors = vectors_for_candidate(version)

    def decide() -> ProcedureVersion:
        _lock_procedure(version, agent_too=True)
        locked = _lock_version(version)
        if locked.status != Status.CANDIDATE:
            if locked.status in (Status.ACTIVE, Status.APPROVED) and locked.approved_by_id:
                raise LifecycleError(
                    f"{locked} was already approved by {locked.approved_by.get_username()} "
                    f"at {locked.approved_at:%Y-%m-%d %H:%M:%S} UTC."
                )
            raise LifecycleError(f"Only a candidate can be approved; {locked} is {locked.status}.")
        if not user_can_approve(user, locked.procedure):
            raise PermissionDenied(f"You do not hold the approve permission for {locked.procedure.key}.")
        blockers = approval_blockers(
            locked, user, acknowledged_conflicts=acknowledge_conflicts, conflict_vectors=vectors
        )
        if blockers:
            raise LifecycleError(" ".join(blockers))
        if acknowledge_conflicts:
            acknowledged = conflicts_for_candidate(locked, vectors=vectors)
            if acknowledged:
                audit(
                    action=AuditEvent.Action.CONFLICT_ACK,
                    actor=user,
                    version=locked,
                    reason=comment,
                    after={"conflicts": [{"kind": c.kind, "with": c.b.pk, "message": c.message} for c in acknowledged]},
                )
        run = passing_eval_for(locked, environment=approval_environment(locked.procedure.agent))
        assert run is not None  # approval_blockers refused otherwise
        if has_staging(locked.procedure.agent):
            stage_on_approval(locked=locked, user=user, run=run, comment=comment)
            _notify_after_commit(locked, "approve", user, comment)
            return locked
        refuse_while_rollout_runs(locked.procedure, "approve another version")
        _retire_current_active(locked.procedure, user=user, reason=f"Replaced by v{locked.number}")
        _set_status(
            locked,
            Status.ACTIVE,
            user=user,
            reason=comment,
            action=AuditEvent.Action.APPROVE,
            approved_by=user,
            approved_at=timezone.now(),
            approval_eval_run=run,
            review_by=review_by_for(locked.procedure.agent),
        )
        _notify_after_commit(locked, "approve", user, comment)
        return locked

    for _attempt in range(APPROVAL_ATTEMPTS - 1):
        try:
            return _decision(decide)
        except VectorsMissing as missing:
            vectors.update(embeddings.version_vectors(missing.versions))
    try:
        return _decision(decide)
    except VectorsMissing:
        raise DecisionConflict(
            "The agent's active set kept changing while you were approving; reload and try again."
        ) from None


def review_by_for(agent: Agent, *, today=None):
    """The day a version that becomes (or stays) ACTIVE today is due for re-review."""

    return (today or timezone.localdate()) + timedelta(days=agent.review_after_days)


def version_review_confirm(*, version: ProcedureVersion, user, comment: str = "") -> ProcedureVersion:
    """A re-review of an ACTIVE version that keeps it: its review-by date moves to today plus the
    agent's review_after_days. Needs the approve right on the procedure (the people who decide what
    agents receive); demoting instead is `version_retire`."""
    if user is None or not user.is_authenticated:
        raise PermissionDenied("Sign in to review.")
    with transaction.atomic():
        _lock_procedure(version, agent_too=False)
        locked = _lock_version(version)
        if not user_can_approve(user, locked.procedure):
            raise PermissionDenied(f"You do not hold the approve permission for {locked.procedure.key}.")
        if locked.status != Status.ACTIVE:
            raise LifecycleError(f"Only the active version is re-reviewed; {locked} is {locked.status}.")
        before = {"version": locked.number, "reviewBy": locked.review_by.isoformat() if locked.review_by else None}
        review_by = review_by_for(locked.procedure.agent)
        updated = ProcedureVersion.objects.filter(pk=locked.pk, status=Status.ACTIVE).update(review_by=review_by)
        if updated != 1:
            raise LifecycleError(f"{locked} changed while you were deciding; reload and try again.")
        locked.review_by = review_by
        audit(
            action=AuditEvent.Action.REVIEW,
            actor=user,
            version=locked,
            reason=(comment or "").strip(),
            before=before,
            after={"version": locked.number, "reviewBy": review_by.isoformat()},
        )
    return locked


def version_reject(*, version: ProcedureVersion, user, reason: str) -> ProcedureVersion:
    """CANDIDATE → REJECTED, with a reason."""
    if not user_can_review(user, version.procedure):
        raise PermissionDenied("Only reviewers may reject candidates.")
    reason = required_reason(reason, "A rejection")

    def decide() -> ProcedureVersion:
        _lock_procedure(version, agent_too=False)
        locked = _lock_version(version)
        if locked.status != Status.CANDIDATE:
            raise LifecycleError(f"Only a candidate can be rejected; {locked} is {locked.status}.")
        _set_status(locked, Status.REJECTED, user=user, reason=reason, action=AuditEvent.Action.REJECT)
        return locked

    return _decision(decide)


def change_eval_for(
    version: ProcedureVersion, *, kind: str, replacement: ProcedureVersion | None = None
) -> EvalRun | None:
    """The newest eval of retiring `version` (kind retire) or of rolling it back to `replacement`
    (kind rollback) on its exact content, finished or not, or None."""
    return (
        EvalRun.objects.filter(version=version, kind=kind, replacement=replacement, content_hash=version.content_hash)
        .order_by("-created_at", "-id")
        .first()
    )


def change_eval_note(
    version: ProcedureVersion, *, kind: str, replacement: ProcedureVersion | None = None
) -> dict[str, Any]:
    """What the audit row of a retirement or rollback records about its eval: the run it rests on
    (finished, on the current active set), or that the eval was skipped — or not needed, when the
    change is forced because the agent no longer has a tool the version requires."""
    missing = sorted(set(version.required_tools) - set(version.procedure.agent.tools))
    if missing:
        return {"eval": "not needed", "evalWhy": f"forced: the agent no longer has {', '.join(missing)}"}
    run = change_eval_for(version, kind=kind, replacement=replacement)
    if run is None or run.state != EvalRun.State.DONE:
        return {"eval": "skipped"}

    if run.baseline_hash != environment_set_hash(version.procedure.agent, run.environment):
        return {"eval": "skipped", "evalWhy": f"run {run.pk} was on an active set that has changed since"}
    return {"eval": {"run": run.pk, "verdict": run.verdict}}


def version_retire(*, version: ProcedureVersion, user, reason: str) -> ProcedureVersion:
    """ACTIVE → RETIRED (admin), with a reason. The agent stops receiving the procedure at once. The
    audit row names the retirement eval it rests on, or records that it was skipped (or not needed:
    the agent lost a tool the version requires)."""
    reason = required_reason(reason, "Retiring")

    def decide() -> ProcedureVersion:
        locked = _lock_for_admin_change(
            version, user=user, doing="retire", status=Status.ACTIVE, only="Only the active version can be retired"
        )
        note = change_eval_note(locked, kind=EvalRun.Kind.RETIRE)
        _set_status(locked, Status.RETIRED, user=user, reason=reason, action=AuditEvent.Action.RETIRE, note=note)
        _notify_after_commit(locked, "retire", user, reason)
        return locked

    return _decision(decide)


def version_rollback(*, version: ProcedureVersion, user, reason: str) -> ProcedureVersion:
    """RETIRED → ACTIVE (admin): the chosen earlier version becomes ACTIVE and the current ACTIVE one
    RETIRED, in one transaction. The version keeps its original approval and eval run. Two roll-backs
    racing: the procedure lock serialises them and the second sees the state the first left. The
    audit row names the rollback eval it rests on, or records that it was skipped. Refused when the
    procedure moved namespace after the version's approval and its approver does not hold the
    approve right where it is now (`rollback_gate_blocker`: a move must not carry a version past
    the gate of the namespace it ends in)."""
    reason = required_reason(reason, "Rolling back")

    def decide() -> ProcedureVersion:
        locked = _lock_for_admin_change(
            version,
            user=user,
            doing="roll back",
            status=Status.RETIRED,
            only="Only a retired version can be rolled back to",
        )
        blocker = rollback_gate_blocker(locked)
        if blocker:
            raise LifecycleError(blocker)
        current = (
            ProcedureVersion.objects.filter(procedure=locked.procedure, status=Status.ACTIVE)
            .select_related("procedure__agent")
            .first()
        )
        note = (
            change_eval_note(current, kind=EvalRun.Kind.ROLLBACK, replacement=locked)
            if current
            else {"eval": "not needed", "evalWhy": "no active version"}
        )
        _retire_current_active(locked.procedure, user=user, reason=f"Rolled back to v{locked.number}: {reason}")
        _set_status(
            locked,
            Status.ACTIVE,
            user=user,
            reason=reason,
            action=AuditEvent.Action.ROLLBACK,
            review_by=review_by_for(locked.procedure.agent),
            note=note,
        )
        _notify_after_commit(locked, "rollback", user, reason)
        return locked

    return _decision(decide)
