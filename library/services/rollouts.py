"""The parts of approve, retire, roll back and erase that concern staging and rollouts; promotion
itself is services/releases.py."""

from __future__ import annotations

from django.utils import timezone

from ..environments import STAGING
from ..models import AuditEvent, EvalRun, Procedure, ProcedureRelease, ProcedureVersion, Rollout, Status
from .errors import LifecycleError
from .events import audit
from .locking import _set_status


def _release_to(locked: ProcedureVersion, *, environment: str, user, reason: str) -> None:
    """Caller holds the locks; `locked` is APPROVED. Replaces what `environment` served for the
    procedure; a version that this displaces and that is released nowhere else is retired."""
    previous = (
        ProcedureRelease.objects.select_for_update().filter(procedure=locked.procedure, environment=environment).first()
    )
    if previous is not None and previous.version_id == locked.pk:
        raise LifecycleError(f"{locked} is already in {environment}.")
    now = timezone.now()
    if previous is None:
        ProcedureRelease.objects.create(
            procedure=locked.procedure, environment=environment, version=locked, released_by=user, released_at=now
        )
    else:
        displaced = previous.version
        ProcedureRelease.objects.filter(pk=previous.pk).update(version=locked, released_by=user, released_at=now)
        _retire_if_unreleased(displaced, user=user, reason=f"Replaced in {environment} by v{locked.number}")
    audit(
        action=AuditEvent.Action.STAGE,
        actor=user,
        version=locked,
        reason=reason,
        before={"environment": environment, "version": previous.version.number if previous else None},
        after={"environment": environment, "version": locked.number},
    )


def _retire_if_unreleased(version: ProcedureVersion, *, user, reason: str) -> None:
    """An APPROVED version that no environment serves and no rollout runs is retired: nothing
    could serve it again but a promotion nobody asked for."""
    version = (
        ProcedureVersion.objects.select_for_update(of=("self",)).select_related("procedure__agent").get(pk=version.pk)
    )
    if version.status != Status.APPROVED:
        return
    if ProcedureRelease.objects.filter(version=version).exists():
        return
    if Rollout.objects.filter(version=version, state=Rollout.State.RUNNING).exists():
        return
    _set_status(version, Status.RETIRED, user=user, reason=reason, action=AuditEvent.Action.AUTO_RETIRE)


def running_rollout(procedure: Procedure | int) -> Rollout | None:
    procedure_id = procedure if isinstance(procedure, int) else procedure.pk
    return Rollout.objects.filter(procedure_id=procedure_id, state=Rollout.State.RUNNING).first()


def refuse_while_rollout_runs(procedure: Procedure, what: str) -> None:
    """Retire, roll back and approve-into-production leave the control arm alone while a rollout runs."""
    rollout = running_rollout(procedure)
    if rollout is not None:
        raise LifecycleError(
            f"A rollout of v{rollout.version.number} to {rollout.share} % of production is running; "
            f"complete it or roll it back before you {what}."
        )


def stage_on_approval(*, locked: ProcedureVersion, user, run: EvalRun, comment: str) -> None:
    """Part of `services.version_approve` for an agent with staging (caller holds the agent,
    procedure and version locks, and checked every approval blocker): CANDIDATE → APPROVED with the
    approval recorded, released to staging. Production is untouched."""
    refuse_while_rollout_runs(locked.procedure, "approve another version")
    _set_status(
        locked,
        Status.APPROVED,
        user=user,
        reason=comment,
        action=AuditEvent.Action.APPROVE,
        approved_by=user,
        approved_at=timezone.now(),
        approval_eval_run=run,
    )
    _release_to(locked, environment=STAGING, user=user, reason=f"Approved v{locked.number}: staging first")


def _rollout_end(rollout: Rollout, *, state: str, user, reason: str) -> None:
    now = timezone.now()
    updated = Rollout.objects.filter(pk=rollout.pk, state=Rollout.State.RUNNING).update(
        state=state, ended_by=user, ended_at=now, end_reason=reason
    )
    if updated != 1:
        raise LifecycleError("The rollout changed while you were deciding; reload and try again.")
    rollout.state, rollout.ended_by, rollout.ended_at, rollout.end_reason = state, user, now, reason


def _rollout_end_audit(rollout: Rollout, version: ProcedureVersion, action: str, user, reason: str) -> None:
    audit(
        action=action,
        actor=user,
        version=version,
        reason=reason,
        before={"rollout": rollout.pk, "share": rollout.share, "state": Rollout.State.RUNNING},
        after={"rollout": rollout.pk, "state": rollout.state},
    )


def release_for_erasure(*, locked: ProcedureVersion, user) -> None:
    """Part of `services.version_erase` (caller holds the locks): an erased version leaves every
    environment, and a running rollout in which it is either arm is rolled back, so production
    serves what it served before the rollout (or, when the control is erased, nothing of it)."""
    released = list(
        ProcedureRelease.objects.select_for_update().filter(version=locked).values_list("environment", flat=True)
    )
    if released:
        ProcedureRelease.objects.filter(version=locked).delete()
        audit(
            action=AuditEvent.Action.WITHDRAW,
            actor=user,
            version=locked,
            reason="Erased",
            before={"environments": released},
            after={"environments": []},
        )
    for rollout in Rollout.objects.select_for_update().filter(state=Rollout.State.RUNNING, procedure=locked.procedure):
        if locked.pk in (rollout.version_id, rollout.control_version_id):
            _rollout_end(rollout, state=Rollout.State.ROLLED_BACK, user=user, reason=f"v{locked.number} was erased")
            _rollout_end_audit(
                rollout, locked, AuditEvent.Action.ROLLOUT_ROLLBACK, user, f"v{locked.number} was erased"
            )
            if rollout.version_id != locked.pk:
                _retire_if_unreleased(rollout.version, user=user, reason=f"Rollout ended: v{locked.number} was erased")
