"""Promotion between environments and staged rollouts in production: the services.

An agent has `production` (always) and the environments its admins list in its settings
(library/environments.py). Production serves the ACTIVE versions. A non-production environment
serves, per procedure, the version released to it (`ProcedureRelease`, an APPROVED version) and
otherwise the production one. When the agent has `staging`, approving a candidate makes it APPROVED
and releases it to staging (services.version_approve); production keeps serving the ACTIVE version
until someone who holds the promote permission decides:

    version_promote(environment="production")            APPROVED → ACTIVE (the previous ACTIVE retired)
    version_promote(environment="production", share=20)  a Rollout: 20 % of production sessions get it
    version_promote(environment="qa")                    released to another non-production environment
    version_withdraw(environment=...)                    rollback in a non-production environment: it
                                                         serves the production version again
    rollout_complete / rollout_rollback                  the rollout ends: the version becomes ACTIVE,
                                                         or production stays as it was

Promoting to production, outright or as a rollout, needs a passing eval of the version's exact
content against production's set, still the set production serves (`promotion_blockers`: a
promotion eval, evals.eval_runs.eval_run_start_promotion, or the approval eval of an agent that approved
it straight for production); completing a rollout needs that pass too, whatever production's set
did meanwhile (the rollout measured production itself), and the database refuses any version that
becomes ACTIVE without it (migration 0027_eval_run_environment). Releasing to another
non-production environment needs no eval of its own: the approval eval judged the version against
staging's set.

Each is one transaction under the agent, procedure and version row locks (the lifecycle's lock
order, services.locking._lock_procedure), with an audit row; the database refuses a release or a rollout of
a version that is not APPROVED, a second running rollout, a share outside (0, 100), and any status
change of a released version or of either arm of a running rollout (migration
0015_environments_and_rollouts).
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from ..environments import PRODUCTION, environment_names
from ..models import AuditEvent, EvalRun, Procedure, ProcedureRelease, ProcedureVersion, Rollout, Status
from ..permissions import user_can_promote
from ..selectors import environment_set_hash
from .approval import selection_reach_blocker
from .errors import LifecycleError
from .events import _notify_after_commit, audit, required_reason
from .locking import _decision, _lock_procedure, _lock_version, _set_status
from .rollouts import (
    _release_to,
    _retire_if_unreleased,
    _rollout_end,
    _rollout_end_audit,
    refuse_while_rollout_runs,
)
from .transitions import _retire_current_active, review_by_for


def _require_promoter(user, procedure: Procedure, what: str) -> None:
    if user is None or not user.is_authenticated:
        raise PermissionDenied("Sign in to promote.")
    if not user_can_promote(user, procedure):
        raise PermissionDenied(f"You may not {what} versions of {procedure.key} (needs the promote permission).")


def production_eval_for(version: ProcedureVersion) -> EvalRun | None:
    """The newest passing eval of `version`'s exact content against production's set (a promotion
    eval, or an approval eval that targeted production), or None."""
    return (
        EvalRun.objects.filter(
            version=version,
            content_hash=version.content_hash,
            environment=PRODUCTION,
            kind__in=[EvalRun.Kind.APPROVAL, EvalRun.Kind.PROMOTION],
            state=EvalRun.State.DONE,
            verdict=EvalRun.Verdict.PASS,
        )
        .order_by("-finished_at", "-id")
        .first()
    )


def latest_promotion_eval(version: ProcedureVersion) -> EvalRun | None:
    """The newest promotion eval of `version`'s exact content, finished or not (the promote page)."""
    return (
        EvalRun.objects.filter(version=version, content_hash=version.content_hash, kind=EvalRun.Kind.PROMOTION)
        .select_related("started_by")
        .order_by("-created_at", "-id")
        .first()
    )


def promotion_blockers(version: ProcedureVersion) -> list[str]:
    """Why `version` may not go to production (outright or as a rollout) now, as far as its eval
    goes (empty: it may): it needs a passing eval of its exact content against production's set,
    pinned on the set production serves now, whose selection reached its intent's tasks."""

    run = production_eval_for(version)
    if run is None:
        return ["No passing eval of this exact content against production's set yet: run the promotion eval."]
    reasons = []
    if run.baseline_hash != environment_set_hash(version.procedure.agent, PRODUCTION):
        reasons.append(f"The active set changed since eval run {run.pk} started; run the promotion eval again.")
    reach = selection_reach_blocker(run)
    if reach:
        reasons.append(reach)
    return reasons


def version_promote(
    *, version: ProcedureVersion, user, environment: str, reason: str, share: int | None = None
) -> ProcedureVersion:
    """Promotes an APPROVED version: to production (APPROVED → ACTIVE, the previous ACTIVE retired,
    its releases removed), to a share of production (a Rollout; `share` from 1 to 99), or to
    another non-production environment (a release). Needs the promote permission."""
    reason = required_reason(reason, "A promotion")
    if share is not None and (isinstance(share, bool) or not isinstance(share, int) or not 0 < share <= 100):
        raise ValidationError(
            {"share": f"must be a whole percentage from 1 to 99 (100: promote outright), got {share!r}"}
        )
    if share == 100:
        share = None

    def decide() -> ProcedureVersion:
        _lock_procedure(version, agent_too=True)
        locked = _lock_version(version)
        procedure = locked.procedure
        _require_promoter(user, procedure, "promote")
        names = environment_names(procedure.agent)
        if environment not in names:
            raise ValidationError(
                {"environment": f"{environment!r} is not an environment of {procedure.agent.name}: {', '.join(names)}"}
            )
        if locked.status != Status.APPROVED:
            raise LifecycleError(
                f"Only an approved version waiting for production can be promoted; {locked} is {locked.status}."
            )
        if environment != PRODUCTION:
            if share is not None:
                raise ValidationError({"share": "A rollout share is for production only."})
            _release_to(locked, environment=environment, user=user, reason=reason)
            _notify_after_commit(locked, "stage", user, reason)
            return locked
        refuse_while_rollout_runs(procedure, "promote")
        blockers = promotion_blockers(locked)
        if blockers:
            raise LifecycleError(" ".join(blockers))
        if share is not None:
            control = ProcedureVersion.objects.filter(procedure=procedure, status=Status.ACTIVE).first()
            rollout = Rollout.objects.create(
                procedure=procedure,
                version=locked,
                control_version=control,
                share=share,
                reason=reason,
                started_by=user,
                started_at=timezone.now(),
            )
            audit(
                action=AuditEvent.Action.ROLLOUT_START,
                actor=user,
                version=locked,
                reason=reason,
                before={"active": control.number if control else None},
                after={
                    "rollout": rollout.pk,
                    "version": locked.number,
                    "share": share,
                    "control": control.number if control else None,
                },
            )
            _notify_after_commit(locked, "rollout_start", user, reason)
            return locked
        _to_production(locked, user=user, reason=reason, action=AuditEvent.Action.PROMOTE)
        return locked

    return _decision(decide)


def _to_production(locked: ProcedureVersion, *, user, reason: str, action: str) -> None:
    """Caller holds the locks and refused a running rollout other than the one it ends. APPROVED →
    ACTIVE: the version leaves every non-production environment (they serve production's version,
    which it now is), the previous ACTIVE retires."""
    released = list(
        ProcedureRelease.objects.select_for_update().filter(version=locked).values_list("environment", flat=True)
    )
    ProcedureRelease.objects.filter(version=locked).delete()
    if released:
        audit(
            action=AuditEvent.Action.WITHDRAW,
            actor=user,
            version=locked,
            reason="Promoted to production",
            before={"environments": released},
            after={"environments": []},
        )
    _retire_current_active(locked.procedure, user=user, reason=f"Replaced by v{locked.number}")
    _set_status(
        locked, Status.ACTIVE, user=user, reason=reason, action=action, review_by=review_by_for(locked.procedure.agent)
    )
    _notify_after_commit(locked, "promote", user, reason)


def version_withdraw(*, version: ProcedureVersion, user, environment: str, reason: str) -> ProcedureVersion:
    """Rollback in a non-production environment: the environment stops serving `version` and
    serves the production version of the procedure again. A version released nowhere else (and in
    no running rollout) is retired. Needs the promote permission. (Rollback in production is
    `services.version_rollback`; ending a rollout is `rollout_rollback`.)"""
    reason = required_reason(reason, "A withdrawal")

    def decide() -> ProcedureVersion:
        _lock_procedure(version, agent_too=True)
        locked = _lock_version(version)
        _require_promoter(user, locked.procedure, "withdraw")
        if environment == PRODUCTION:
            raise ValidationError(
                {
                    "environment": "Production is rolled back on the procedure's page (roll back to a retired version) or by rolling back its rollout."
                }
            )
        release = ProcedureRelease.objects.select_for_update().filter(version=locked, environment=environment).first()
        if release is None:
            raise LifecycleError(f"{locked} is not in {environment}.")
        release.delete()
        audit(
            action=AuditEvent.Action.WITHDRAW,
            actor=user,
            version=locked,
            reason=reason,
            before={"environment": environment, "version": locked.number},
            after={"environment": environment, "version": None},
        )
        _retire_if_unreleased(locked, user=user, reason=f"Withdrawn from {environment}: {reason}")
        locked.refresh_from_db(fields=["status", "status_reason", "status_changed_at"])
        _notify_after_commit(locked, "withdraw", user, reason)
        return locked

    return _decision(decide)


def _lock_rollout(rollout: Rollout, user, what: str) -> tuple[Rollout, ProcedureVersion]:
    _lock_procedure(rollout.version, agent_too=True)
    locked_version = _lock_version(rollout.version)
    locked = (
        Rollout.objects.select_for_update(of=("self",)).select_related("version", "control_version").get(pk=rollout.pk)
    )
    _require_promoter(user, locked_version.procedure, what)
    if locked.state != Rollout.State.RUNNING:
        raise LifecycleError(f"This rollout is no longer running ({locked.get_state_display().lower()}).")
    return locked, locked_version


def rollout_complete(*, rollout: Rollout, user, reason: str) -> Rollout:
    """The rolled-out version becomes ACTIVE (every session gets it), the control retires."""
    reason = required_reason(reason, "Completing a rollout")

    def decide() -> ProcedureVersion:
        locked, version = _lock_rollout(rollout, user, "complete rollouts of")
        if production_eval_for(version) is None:
            raise LifecycleError(
                f"v{version.number} has no passing eval of its exact content against production's set; "
                "run the promotion eval before completing the rollout."
            )
        _rollout_end(locked, state=Rollout.State.COMPLETED, user=user, reason=reason)
        _rollout_end_audit(locked, version, AuditEvent.Action.ROLLOUT_COMPLETE, user, reason)
        _to_production(version, user=user, reason=f"Rollout completed: {reason}", action=AuditEvent.Action.PROMOTE)
        rollout.state, rollout.ended_at = locked.state, locked.ended_at
        return version

    _decision(decide)
    return rollout


def rollout_rollback(*, rollout: Rollout, user, reason: str) -> Rollout:
    """Production serves the control to every session again; the version stays APPROVED (in staging
    if it was there) for another try, or is retired when no environment serves it."""
    reason = required_reason(reason, "Rolling back a rollout")

    def decide() -> ProcedureVersion:
        locked, version = _lock_rollout(rollout, user, "roll back rollouts of")
        _rollout_end(locked, state=Rollout.State.ROLLED_BACK, user=user, reason=reason)
        _rollout_end_audit(locked, version, AuditEvent.Action.ROLLOUT_ROLLBACK, user, reason)
        _retire_if_unreleased(version, user=user, reason=f"Rollout rolled back: {reason}")
        _notify_after_commit(version, "rollout_rollback", user, reason)
        rollout.state, rollout.ended_at = locked.state, locked.ended_at
        return version

    _decision(decide)
    return rollout
