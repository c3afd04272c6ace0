"""Environments, promotion between them, and staged rollouts in production.

An agent has `production` (always) and the environments its admins list in its settings
(`Agent.environments`, e.g. `staging`). Production serves the ACTIVE versions. A non-production
environment serves, per procedure, the version released to it (`ProcedureRelease`, an APPROVED
version) and otherwise the production one. When the agent has `staging`, approving a candidate makes
it APPROVED and releases it to staging (`stage_on_approval`, called by `services.version_approve`);
production keeps serving the ACTIVE version until someone who may promote decides:

    version_promote(environment="production")            APPROVED → ACTIVE (the previous ACTIVE retired)
    version_promote(environment="production", share=20)  a Rollout: 20 % of production sessions get it
    version_promote(environment="qa")                    released to another non-production environment
    version_withdraw(environment=...)                    rollback in a non-production environment: it
                                                         serves the production version again
    rollout_complete / rollout_rollback                  the rollout ends: the version becomes ACTIVE,
                                                         or production stays as it was

Each is one transaction under the agent, procedure and version row locks (the lifecycle's lock
order, services._lock_procedure), with an audit row; the database refuses a release or a rollout of
a version that is not APPROVED, a second running rollout, a share outside (0, 100), and any status
change of a released version or of either arm of a running rollout (migration
0015_environments_and_rollouts).

Which arm a session gets is a hash of the rollout and the session id the agent sends (`?session=`):
deterministic, so one session sees one arm however often it fetches, and independent between
rollouts. Without a session id an agent gets the control arm.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.dispatch import receiver
from django.utils import timezone

from .models import (
    ENVIRONMENT_RE,
    PRODUCTION,
    STAGING,
    Agent,
    AuditEvent,
    EvalRun,
    Procedure,
    ProcedureRelease,
    ProcedureVersion,
    Rollout,
    Status,
)
from .permissions import user_can_promote
from .signals import version_erased

MAX_ENVIRONMENTS = 10
MAX_SESSION_CHARS = 200  # AgentSession.session_id


# ---------------------------------------------------------------------------------------------- environments


def environment_names(agent: Agent) -> list[str]:
    """Every environment of the agent: production first, then the ones its admins defined."""
    return [PRODUCTION, *(agent.environments or [])]


def has_staging(agent: Agent) -> bool:
    return STAGING in (agent.environments or [])


def clean_environments(value: Any) -> list[str]:
    """The environments beside production, as an admin lists them (a list, or names separated by
    commas or spaces): lower-case names, no repeats, `production` implied and never listed."""
    if isinstance(value, str):
        value = [part for part in re.split(r"[\s,]+", value) if part]
    if not isinstance(value, (list, tuple)):
        raise ValidationError({"environments": f"must be a list of environment names, got {type(value).__name__}"})
    names: list[str] = []
    for index, item in enumerate(value, start=1):
        if not isinstance(item, str) or not re.fullmatch(ENVIRONMENT_RE, item.strip()):
            shown = item[:40] if isinstance(item, str) else type(item).__name__
            raise ValidationError(
                {"environments": f"name {index} ({shown!r}) is not an environment name: lower-case letters, digits, _ and -, starting with a letter, at most 32"}
            )
        name = item.strip()
        if name == PRODUCTION:
            continue  # always there
        if name in names:
            raise ValidationError({"environments": f"lists {name!r} twice"})
        names.append(name)
    if len(names) > MAX_ENVIRONMENTS:
        raise ValidationError({"environments": f"has {len(names)} environments beside production; at most {MAX_ENVIRONMENTS}"})
    return names


def environments_in_use(agent: Agent) -> set[str]:
    """The environments that still serve a released version (they cannot be removed)."""
    return set(ProcedureRelease.objects.filter(procedure__agent=agent).values_list("environment", flat=True))


class UnknownEnvironment(ValueError):
    """An environment name the agent does not have; the message lists the ones it has."""


def resolve_environment(agent: Agent, name: str | None) -> str:
    """`?environment=` as given by an agent: empty means production; a name the agent does not
    have raises UnknownEnvironment."""
    if not name:
        return PRODUCTION
    if name not in environment_names(agent):
        raise UnknownEnvironment(
            f"environment {name[:40]!r} is unknown for agent {agent.name}; it has: {', '.join(environment_names(agent))}."
        )
    return name


def clean_session(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if len(value) > MAX_SESSION_CHARS:
        raise ValueError(f"session is longer than {MAX_SESSION_CHARS} characters.")
    return value


# ---------------------------------------------------------------------------------------------- arms


def rollout_arm(*, rollout_id: int, share: int, session: str | None) -> str:
    """The arm a session gets: `rollout` for `share` percent of the session ids (by a hash of the
    rollout and the session id), `control` for the rest and for a fetch without a session id."""
    if not session:
        return Rollout.Arm.CONTROL
    digest = hashlib.sha256(f"procmem-rollout:{rollout_id}:{session}".encode("utf-8")).digest()
    return Rollout.Arm.ROLLOUT if int.from_bytes(digest[:8], "big") % 100 < share else Rollout.Arm.CONTROL


# ---------------------------------------------------------------------------------------------- services


def _require_promoter(user, procedure: Procedure, what: str) -> None:
    if user is None or not user.is_authenticated:
        raise PermissionDenied("Sign in to promote.")
    if not user_can_promote(user, procedure):
        raise PermissionDenied(f"You may not {what} versions of {procedure.key} (needs the promote permission).")


def _reason(reason: str, what: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": f"{what} needs a reason."})
    return reason


def _notify(locked: ProcedureVersion, action: str, user, reason: str) -> None:
    from .services import _notify_active_set_changed, _notify_status_changed, _on_commit

    agent_id = locked.procedure.agent_id
    _on_commit(lambda: _notify_active_set_changed(agent_id))
    _on_commit(lambda: _notify_status_changed(locked.pk, action, user, reason))


def _release(locked: ProcedureVersion, *, environment: str, user, reason: str) -> None:
    """Caller holds the locks; `locked` is APPROVED. Replaces what `environment` served for the
    procedure; a version that this displaces and that is released nowhere else is retired."""
    from .services import audit

    previous = ProcedureRelease.objects.select_for_update().filter(procedure=locked.procedure, environment=environment).first()
    if previous is not None and previous.version_id == locked.pk:
        raise _lifecycle_error(f"{locked} is already in {environment}.")
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
        action=AuditEvent.Action.STAGE, actor=user, version=locked, reason=reason,
        before={"environment": environment, "version": previous.version.number if previous else None},
        after={"environment": environment, "version": locked.number},
    )


def _retire_if_unreleased(version: ProcedureVersion, *, user, reason: str) -> None:
    """An APPROVED version that no environment serves and no rollout runs is retired: nothing
    could serve it again but a promotion nobody asked for."""
    from .services import _set_status

    version = ProcedureVersion.objects.select_for_update(of=("self",)).select_related("procedure__agent").get(pk=version.pk)
    if version.status != Status.APPROVED:
        return
    if ProcedureRelease.objects.filter(version=version).exists():
        return
    if Rollout.objects.filter(version=version, state=Rollout.State.RUNNING).exists():
        return
    _set_status(version, Status.RETIRED, user=user, reason=reason, action=AuditEvent.Action.AUTO_RETIRE)


def _lifecycle_error(message: str):
    from .services import LifecycleError

    return LifecycleError(message)


def running_rollout(procedure: Procedure | int) -> Rollout | None:
    procedure_id = procedure if isinstance(procedure, int) else procedure.pk
    return Rollout.objects.filter(procedure_id=procedure_id, state=Rollout.State.RUNNING).first()


def refuse_while_rollout_runs(procedure: Procedure, what: str) -> None:
    """Retire, roll back and approve-into-production leave the control arm alone while a rollout runs."""
    rollout = running_rollout(procedure)
    if rollout is not None:
        raise _lifecycle_error(
            f"A rollout of v{rollout.version.number} to {rollout.share} % of production is running; "
            f"complete it or roll it back before you {what}."
        )


def stage_on_approval(*, locked: ProcedureVersion, user, run: EvalRun, comment: str) -> None:
    """Part of `services.version_approve` for an agent with staging (caller holds the agent,
    procedure and version locks, and checked every approval blocker): CANDIDATE → APPROVED with the
    approval recorded, released to staging. Production is untouched."""
    from .services import _set_status

    refuse_while_rollout_runs(locked.procedure, "approve another version")
    _set_status(
        locked, Status.APPROVED, user=user, reason=comment, action=AuditEvent.Action.APPROVE,
        approved_by=user, approved_at=timezone.now(), approval_eval_run=run,
    )
    _release(locked, environment=STAGING, user=user, reason=f"Approved v{locked.number}: staging first")


def version_promote(*, version: ProcedureVersion, user, environment: str, reason: str, share: int | None = None) -> ProcedureVersion:
    """Promotes an APPROVED version: to production (APPROVED → ACTIVE, the previous ACTIVE retired,
    its releases removed), to a share of production (a Rollout; `share` from 1 to 99), or to
    another non-production environment (a release). Needs the promote permission."""
    from .services import _decision, _lock_procedure, _lock_version, audit

    reason = _reason(reason, "A promotion")
    if share is not None and (isinstance(share, bool) or not isinstance(share, int) or not 0 < share <= 100):
        raise ValidationError({"share": f"must be a whole percentage from 1 to 99 (100: promote outright), got {share!r}"})
    if share == 100:
        share = None

    def decide() -> ProcedureVersion:
        _lock_procedure(version, agent_too=True)
        locked = _lock_version(version)
        procedure = locked.procedure
        _require_promoter(user, procedure, "promote")
        names = environment_names(procedure.agent)
        if environment not in names:
            raise ValidationError({"environment": f"{environment!r} is not an environment of {procedure.agent.name}: {', '.join(names)}"})
        if locked.status != Status.APPROVED:
            raise _lifecycle_error(f"Only an approved version waiting for production can be promoted; {locked} is {locked.status}.")
        if environment != PRODUCTION:
            if share is not None:
                raise ValidationError({"share": "A rollout share is for production only."})
            _release(locked, environment=environment, user=user, reason=reason)
            _notify(locked, "stage", user, reason)
            return locked
        refuse_while_rollout_runs(procedure, "promote")
        if share is not None:
            control = ProcedureVersion.objects.filter(procedure=procedure, status=Status.ACTIVE).first()
            rollout = Rollout.objects.create(
                procedure=procedure, version=locked, control_version=control, share=share, reason=reason,
                started_by=user, started_at=timezone.now(),
            )
            audit(
                action=AuditEvent.Action.ROLLOUT_START, actor=user, version=locked, reason=reason,
                before={"active": control.number if control else None},
                after={"rollout": rollout.pk, "version": locked.number, "share": share, "control": control.number if control else None},
            )
            _notify(locked, "rollout_start", user, reason)
            return locked
        _to_production(locked, user=user, reason=reason, action=AuditEvent.Action.PROMOTE)
        return locked

    return _decision(decide)


def _to_production(locked: ProcedureVersion, *, user, reason: str, action: str) -> None:
    """Caller holds the locks and refused a running rollout other than the one it ends. APPROVED →
    ACTIVE: the version leaves every non-production environment (they serve production's version,
    which it now is), the previous ACTIVE retires."""
    from .services import _retire_current_active, _set_status, audit, review_by_for

    released = list(ProcedureRelease.objects.select_for_update().filter(version=locked).values_list("environment", flat=True))
    ProcedureRelease.objects.filter(version=locked).delete()
    if released:
        audit(
            action=AuditEvent.Action.WITHDRAW, actor=user, version=locked, reason="Promoted to production",
            before={"environments": released}, after={"environments": []},
        )
    _retire_current_active(locked.procedure, user=user, reason=f"Replaced by v{locked.number}")
    _set_status(locked, Status.ACTIVE, user=user, reason=reason, action=action, review_by=review_by_for(locked.procedure.agent))
    _notify(locked, "promote", user, reason)


def version_withdraw(*, version: ProcedureVersion, user, environment: str, reason: str) -> ProcedureVersion:
    """Rollback in a non-production environment: the environment stops serving `version` and
    serves the production version of the procedure again. A version released nowhere else (and in
    no running rollout) is retired. Needs the promote permission. (Rollback in production is
    `services.version_rollback`; ending a rollout is `rollout_rollback`.)"""
    from .services import _decision, _lock_procedure, _lock_version, audit

    reason = _reason(reason, "A withdrawal")

    def decide() -> ProcedureVersion:
        _lock_procedure(version, agent_too=True)
        locked = _lock_version(version)
        _require_promoter(user, locked.procedure, "withdraw")
        if environment == PRODUCTION:
            raise ValidationError({"environment": "Production is rolled back on the procedure's page (roll back to a retired version) or by rolling back its rollout."})
        release = ProcedureRelease.objects.select_for_update().filter(version=locked, environment=environment).first()
        if release is None:
            raise _lifecycle_error(f"{locked} is not in {environment}.")
        release.delete()
        audit(
            action=AuditEvent.Action.WITHDRAW, actor=user, version=locked, reason=reason,
            before={"environment": environment, "version": locked.number}, after={"environment": environment, "version": None},
        )
        _retire_if_unreleased(locked, user=user, reason=f"Withdrawn from {environment}: {reason}")
        locked.refresh_from_db(fields=["status", "status_reason", "status_changed_at"])
        _notify(locked, "withdraw", user, reason)
        return locked

    return _decision(decide)


def _lock_rollout(rollout: Rollout, user, what: str) -> tuple[Rollout, ProcedureVersion]:
    from .services import _lock_procedure, _lock_version

    _lock_procedure(rollout.version, agent_too=True)
    locked_version = _lock_version(rollout.version)
    locked = Rollout.objects.select_for_update(of=("self",)).select_related("version", "control_version").get(pk=rollout.pk)
    _require_promoter(user, locked_version.procedure, what)
    if locked.state != Rollout.State.RUNNING:
        raise _lifecycle_error(f"This rollout is no longer running ({locked.get_state_display().lower()}).")
    return locked, locked_version


def _end(rollout: Rollout, *, state: str, user, reason: str) -> None:
    now = timezone.now()
    updated = Rollout.objects.filter(pk=rollout.pk, state=Rollout.State.RUNNING).update(
        state=state, ended_by=user, ended_at=now, end_reason=reason
    )
    if updated != 1:
        raise _lifecycle_error("The rollout changed while you were deciding; reload and try again.")
    rollout.state, rollout.ended_by, rollout.ended_at, rollout.end_reason = state, user, now, reason


def rollout_complete(*, rollout: Rollout, user, reason: str) -> Rollout:
    """The rolled-out version becomes ACTIVE (every session gets it), the control retires."""
    from .services import _decision

    reason = _reason(reason, "Completing a rollout")

    def decide() -> ProcedureVersion:
        locked, version = _lock_rollout(rollout, user, "complete rollouts of")
        _end(locked, state=Rollout.State.COMPLETED, user=user, reason=reason)
        _audit_rollout_end(locked, version, AuditEvent.Action.ROLLOUT_COMPLETE, user, reason)
        _to_production(version, user=user, reason=f"Rollout completed: {reason}", action=AuditEvent.Action.PROMOTE)
        rollout.state, rollout.ended_at = locked.state, locked.ended_at
        return version

    _decision(decide)
    return rollout


def rollout_rollback(*, rollout: Rollout, user, reason: str) -> Rollout:
    """Production serves the control to every session again; the version stays APPROVED (in staging
    if it was there) for another try, or is retired when no environment serves it."""
    from .services import _decision

    reason = _reason(reason, "Rolling back a rollout")

    def decide() -> ProcedureVersion:
        locked, version = _lock_rollout(rollout, user, "roll back rollouts of")
        _end(locked, state=Rollout.State.ROLLED_BACK, user=user, reason=reason)
        _audit_rollout_end(locked, version, AuditEvent.Action.ROLLOUT_ROLLBACK, user, reason)
        _retire_if_unreleased(version, user=user, reason=f"Rollout rolled back: {reason}")
        _notify(version, "rollout_rollback", user, reason)
        rollout.state, rollout.ended_at = locked.state, locked.ended_at
        return version

    _decision(decide)
    return rollout


def _audit_rollout_end(rollout: Rollout, version: ProcedureVersion, action: str, user, reason: str) -> None:
    from .services import audit

    audit(
        action=action, actor=user, version=version, reason=reason,
        before={"rollout": rollout.pk, "share": rollout.share, "state": Rollout.State.RUNNING},
        after={"rollout": rollout.pk, "state": rollout.state},
    )


def release_for_erasure(*, locked: ProcedureVersion, user) -> None:
    """Part of `services.version_erase` (caller holds the locks): an erased version leaves every
    environment, and a running rollout in which it is either arm is rolled back, so production
    serves what it served before the rollout (or, when the control is erased, nothing of it)."""
    from .services import audit

    released = list(ProcedureRelease.objects.select_for_update().filter(version=locked).values_list("environment", flat=True))
    if released:
        ProcedureRelease.objects.filter(version=locked).delete()
        audit(
            action=AuditEvent.Action.WITHDRAW, actor=user, version=locked, reason="Erased",
            before={"environments": released}, after={"environments": []},
        )
    for rollout in Rollout.objects.select_for_update().filter(state=Rollout.State.RUNNING, procedure=locked.procedure):
        if locked.pk in (rollout.version_id, rollout.control_version_id):
            _end(rollout, state=Rollout.State.ROLLED_BACK, user=user, reason=f"v{locked.number} was erased")
            _audit_rollout_end(rollout, locked, AuditEvent.Action.ROLLOUT_ROLLBACK, user, f"v{locked.number} was erased")
            if rollout.version_id != locked.pk:
                _retire_if_unreleased(rollout.version, user=user, reason=f"Rollout ended: v{locked.number} was erased")


# ---------------------------------------------------------------------------------------------- serving


_variants: "OrderedDict[tuple, Any]" = OrderedDict()
_variants_lock = threading.Lock()
MAX_VARIANTS = 256


@receiver(version_erased)
def _forget_variants(sender, **kwargs) -> None:
    """A built variant may hold an erased version's text: drop them all (they rebuild on demand)."""
    with _variants_lock:
        _variants.clear()


def _plan(agent_id: int, environment: str, session: str | None, using: str) -> tuple[dict[str, int | None], dict[str, str]]:
    """What differs from the production (ACTIVE) set for this environment and session: the
    version each overridden procedure key gets (None: nothing), and each rollout's arm."""
    overrides: dict[str, int | None] = {}
    arms: dict[str, str] = {}
    if environment != PRODUCTION:
        releases = ProcedureRelease.objects.using(using).filter(procedure__agent_id=agent_id, environment=environment)
        overrides.update(releases.values_list("procedure__key", "version_id"))
        return overrides, arms
    rollouts = Rollout.objects.using(using).filter(procedure__agent_id=agent_id, state=Rollout.State.RUNNING).values_list(
        "pk", "procedure__key", "version_id", "control_version_id", "share"
    )
    for rollout_id, key, version_id, control_id, share in rollouts:
        arm = rollout_arm(rollout_id=rollout_id, share=share, session=session)
        arms[key] = arm
        overrides[key] = version_id if arm == Rollout.Arm.ROLLOUT else control_id
    return overrides, arms


def served_for(*, served, environment: str = PRODUCTION, session: str | None = None, using: str | None = None):
    """The set `environment` serves to `session`, derived from the production set `served`
    (serving.active_set_for_agent): released versions replace the production ones in a
    non-production environment; in production a running rollout gives the session its arm's version
    and every procedure under rollout says its `arm`. Equal to `served` (same bytes, same ETag) when
    nothing differs in production; a non-production environment's body names it, so its ETag is its
    own. Variants are kept per production set and difference, so they rebuild exactly when those change."""
    from . import serving

    using = using or serving.READONLY_ALIAS
    if not served.data.get("proceduralMemoryEnabled", True):
        overrides, arms = {}, {}
    else:
        overrides, arms = _plan(served.agent_id, environment, session, using)
    if environment == PRODUCTION and not overrides and not arms:
        return served
    key = (served.etag, environment, tuple(sorted(overrides.items(), key=lambda kv: kv[0])), tuple(sorted(arms.items())))
    with _variants_lock:
        cached = _variants.get(key)
        if cached is not None:
            _variants.move_to_end(key)
            return cached
    variant = _build_variant(served, environment=environment, overrides=overrides, arms=arms, using=using)
    with _variants_lock:
        _variants[key] = variant
        while len(_variants) > MAX_VARIANTS:
            _variants.popitem(last=False)
    return variant


def _build_variant(served, *, environment: str, overrides: dict[str, int | None], arms: dict[str, str], using: str):
    import gzip
    import json

    from . import serving

    base = dict(zip((p["id"] for p in served.procedures), zip(served.version_ids, served.procedures)))
    wanted = {vid for vid in overrides.values() if vid is not None} - set(served.version_ids)
    loaded = {
        v.pk: v
        for v in ProcedureVersion.objects.using(using).filter(pk__in=wanted)
        .select_related("procedure", "procedure__intent", "approved_by")
        .defer(*serving.approver_secret_columns())
    }
    tools = list(served.data["tools"])
    chosen: dict[str, tuple[int, dict]] = {k: v for k, v in base.items() if k not in overrides}
    refused = [r for r in served.data["refused"] if r["id"] not in overrides]
    for key, version_id in overrides.items():
        if version_id is None:
            continue
        if key in base and base[key][0] == version_id:
            chosen[key] = base[key]
            continue
        version = loaded.get(version_id)
        if version is None:  # changed since the plan was read: serve nothing rather than a guess
            continue
        missing = serving.missing_tools(required=list(version.required_tools), available=tools)
        if missing:
            refused.append({
                "id": key, "version": version.number, "intent": version.procedure.intent.name, "reason": "missing_tools",
                "message": f"The agent lacks the required tools: {', '.join(missing)}.", "missingTools": missing,
            })
            continue
        chosen[key] = (version.pk, serving._served(version))
    ordered = sorted(chosen.items())
    procedures = [{**record, "arm": arms[key]} if key in arms else record for key, (_, record) in ordered]
    data = {**served.data, "procedures": procedures, "refused": sorted(refused, key=lambda r: r["id"])}
    if environment != PRODUCTION:
        data["environment"] = environment
    if arms:
        data["arms"] = dict(sorted(arms.items()))
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    tag = hashlib.sha256(body).hexdigest()[:40]
    return serving.ServedSet(
        agent_id=served.agent_id, fingerprint=f"{served.fingerprint}:{environment}:{tag}", data=data, body=body,
        etag=f'"{tag}"', body_gzip=gzip.compress(body, compresslevel=6, mtime=0), etag_gzip=f'"{tag}-gzip"',
        version_ids=[vid for _, (vid, _) in ordered],
    )
