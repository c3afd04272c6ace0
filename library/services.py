"""Lifecycle services: the only code that writes procedure versions and their status.

One atomic, row-locked, audited function per state change. Each one locks the rows it changes
(`select_for_update`), re-checks the current status and refuses otherwise, records who decided,
when and why, writes the audit row, and triggers side effects only on commit. Views, the API,
Celery tasks and management commands all call these; none of them writes a status itself.

Allowed status changes (the database's transition trigger refuses every other one):
    CANDIDATE → ACTIVE    version_approve   (approver with object permission, four eyes, passing eval)
    CANDIDATE → APPROVED  version_approve   (the same, when the agent has staging: released there)
    APPROVED  → ACTIVE    releases.version_promote / rollout_complete (promote permission)
    APPROVED  → RETIRED   releases.version_withdraw / superseded (served by no environment any more)
    CANDIDATE → REJECTED  version_reject    (reviewer, with a reason)
    ACTIVE    → RETIRED   version_retire    (admin, with a reason) — also done by approve/rollback
    RETIRED   → ACTIVE    version_rollback  (admin, with a reason)
    any       → ERASED    version_erase     (admin, with a ground and a reason; content and
                                             evidence wiped, a VersionTombstone kept; final)
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import Max
from django.utils import timezone

from . import policy
from .screening import quarantine_fields, screen_content, screened_provenance
from .environments import STAGING, approval_environment, has_staging
from .session_fields import normalise_tool_name
from .models import (
    Agent,
    AuditEvent,
    EvalRun,
    Intent,
    MiningRun,
    Procedure,
    ProcedureRelease,
    ProcedureVersion,
    Rollout,
    Source,
    Status,
    VersionEmbedding,
    VersionTombstone,
    content_hash,
    content_of,
    procedure_key_validator,
)
from .permissions import user_can_approve, user_can_manage_procedure, user_can_review

logger = logging.getLogger(__name__)

try:  # PostgreSQL's "you lost a race" errors; SQLite serialises writers and has none
    from psycopg import errors as _pg_errors

    _LOST_RACE_ERRORS: tuple[type[BaseException], ...] = (_pg_errors.DeadlockDetected, _pg_errors.SerializationFailure, _pg_errors.LockNotAvailable)
except ImportError:  # pragma: no cover
    _LOST_RACE_ERRORS = ()

MAX_STEPS_APPROVABLE = 8
MAX_STEPS_STORED = 100
MAX_FIELD_CHARS = 2000


class LifecycleError(Exception):
    """A status change that the current state does not allow; the message says why."""


class DecisionConflict(LifecycleError):
    """A decision that lost a race with another one on the same procedure (views answer 409)."""


@dataclass(frozen=True)
class Content:
    applies_when: str
    steps: list[str]
    required_tools: list[str]
    forbidden_actions: list[str]
    # a coding procedure's contract; empty for every other procedure
    preconditions: list[str] = field(default_factory=list)
    postconditions: list[str] = field(default_factory=list)
    verify_command: str = ""

    @property
    def hash(self) -> str:
        return content_hash(**asdict(self))

    @property
    def is_coding(self) -> bool:
        return bool(self.preconditions or self.postconditions or self.verify_command)


def _clean_str_list(value: Any, field: str, *, allow_empty: bool, max_items: int) -> list[str]:
    if not isinstance(value, (list, tuple)):
        raise ValidationError({field: f"must be a list of strings, got {type(value).__name__}"})
    cleaned: list[str] = []
    for index, item in enumerate(value, start=1):
        if not isinstance(item, str):
            raise ValidationError({field: f"item {index} must be a string, got {type(item).__name__}"})
        item = item.strip()
        if not item:
            raise ValidationError({field: f"item {index} is empty"})
        if len(item) > MAX_FIELD_CHARS:
            raise ValidationError({field: f"item {index} is longer than {MAX_FIELD_CHARS} characters"})
        cleaned.append(item)
    if not cleaned and not allow_empty:
        raise ValidationError({field: "must have at least one item"})
    if len(cleaned) > max_items:
        raise ValidationError({field: f"has {len(cleaned)} items; at most {max_items} are stored"})
    return cleaned


MAX_VERIFY_COMMAND_CHARS = 1000


def validate_content(
    *,
    applies_when: Any,
    steps: Any,
    required_tools: Any,
    forbidden_actions: Any,
    preconditions: Any = None,
    postconditions: Any = None,
    verify_command: Any = None,
    coding: bool = False,
) -> Content:
    """Checks the shape of a version's content; raises ValidationError naming the field.

    More than eight steps is stored (the reviewer's lint flags it) but never approvable. A coding
    agent's procedure (`coding`) needs a verify command: no verify command, no coding procedure."""
    preconditions = _clean_str_list(preconditions or [], "preconditions", allow_empty=True, max_items=20)
    postconditions = _clean_str_list(postconditions or [], "postconditions", allow_empty=True, max_items=20)
    if verify_command is None:
        verify_command = ""
    if not isinstance(verify_command, str):
        raise ValidationError({"verifyCommand": f"must be a string (one shell command), got {type(verify_command).__name__}"})
    verify_command = verify_command.strip()
    if len(verify_command) > MAX_VERIFY_COMMAND_CHARS:
        raise ValidationError({"verifyCommand": f"is longer than {MAX_VERIFY_COMMAND_CHARS} characters"})
    if coding and not verify_command:
        raise ValidationError({"verifyCommand": "is required for a coding agent's procedure: the command that verifies the work (e.g. the test run that passed)"})
    if not isinstance(applies_when, str) or not applies_when.strip():
        raise ValidationError({"appliesWhen": "is required: one sentence saying when the procedure applies"})
    applies_when = " ".join(applies_when.split())
    if len(applies_when) > MAX_FIELD_CHARS:
        raise ValidationError({"appliesWhen": f"is longer than {MAX_FIELD_CHARS} characters"})
    steps = _clean_str_list(steps, "steps", allow_empty=False, max_items=MAX_STEPS_STORED)
    required_tools = _clean_str_list(required_tools, "requiredTools", allow_empty=True, max_items=100)
    if len(set(required_tools)) != len(required_tools):
        raise ValidationError({"requiredTools": "lists a tool twice"})
    forbidden_actions = _clean_str_list(forbidden_actions, "forbiddenActions", allow_empty=True, max_items=50)
    return Content(applies_when, steps, required_tools, forbidden_actions, preconditions, postconditions, verify_command)


def audit(
    *,
    action: str,
    actor=None,
    actor_label: str = "",
    agent: Agent | None = None,
    procedure: Procedure | None = None,
    version: ProcedureVersion | None = None,
    reason: str = "",
    before: dict | None = None,
    after: dict | None = None,
) -> AuditEvent:
    if version is not None and procedure is None:
        procedure = version.procedure
    if procedure is not None and agent is None:
        agent = procedure.agent
    return AuditEvent.objects.create(
        action=action,
        actor=actor if actor is not None and getattr(actor, "is_authenticated", False) else None,
        actor_label=actor_label,
        agent=agent,
        procedure=procedure,
        version=version,
        reason=reason,
        before=before or {},
        after=after or {},
    )


def _status_snapshot(version: ProcedureVersion) -> dict[str, Any]:
    return {"version": version.number, "status": version.status}


def _on_commit(callback: Callable[[], None]) -> None:
    transaction.on_commit(callback, robust=True)


def _notify_active_set_changed(agent_id: int) -> None:
    # The agent API computes its ETag from the rows, so there is no cache to bust; hooks that other
    # parts register (notifications, metrics) listen to this signal.
    from .signals import active_set_changed

    active_set_changed.send(sender=Agent, agent_id=agent_id)


def _notify_status_changed(version_id: int, action: str, user, reason: str) -> None:
    from .signals import version_status_changed

    user_id = user.pk if user is not None and getattr(user, "is_authenticated", False) else None
    version_status_changed.send(sender=ProcedureVersion, version_id=version_id, action=action, user_id=user_id, reason=reason)


def required_reason(reason: str | None, what: str) -> str:
    """The reason of a decision, stripped; refused (a ValidationError on `reason`) when empty."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": f"{what} needs a reason."})
    return reason


def _notify_after_commit(locked: ProcedureVersion, action: str, user, reason: str) -> None:
    """After commit: the agent's served set changed, and `locked` changed status by `action`."""
    agent_id, version_id = locked.procedure.agent_id, locked.pk
    _on_commit(lambda: _notify_active_set_changed(agent_id))
    _on_commit(lambda: _notify_status_changed(version_id, action, user, reason))


# --------------------------------------------------------------------------------------------- propose / revise


def procedure_propose(
    *,
    agent: Agent,
    intent: Intent,
    key: str,
    applies_when: Any,
    steps: Any,
    required_tools: Any,
    forbidden_actions: Any,
    source: str,
    reason: str = "",
    proposed_by=None,
    actor_label: str = "",
    evidence: dict | None = None,
    provenance: dict | None = None,
    mining_run: MiningRun | None = None,
    skeleton: list[str] | None = None,
    preconditions: Any = None,
    postconditions: Any = None,
    verify_command: Any = None,
) -> ProcedureVersion:
    """Creates a CANDIDATE version (and the procedure identity if it is new). Never ACTIVE.
    A coding agent's procedure needs a verify command (validate_content)."""
    if source not in Source.values:
        raise ValidationError({"source": f"unknown source {source!r}"})
    if intent.agent_id != agent.pk:
        raise ValidationError({"intent": f"intent {intent.name!r} belongs to another agent"})
    procedure_key_validator(key)
    content = validate_content(
        applies_when=applies_when, steps=steps, required_tools=required_tools, forbidden_actions=forbidden_actions,
        preconditions=preconditions, postconditions=postconditions, verify_command=verify_command,
        coding=agent.kind == Agent.Kind.CODING,
    )
    findings = screen_content(content)
    with transaction.atomic():
        procedure, created = Procedure.objects.get_or_create(agent=agent, key=key, defaults={"intent": intent})
        if not created and procedure.intent_id != intent.pk:
            raise ValidationError(
                {"intent": f"procedure {key} serves intent {procedure.intent.name!r}, not {intent.name!r}"}
            )
        version = _create_version(
            procedure=procedure,
            content=content,
            source=source,
            proposed_by=proposed_by,
            edited_by=proposed_by if source in {Source.MANUAL, Source.IMPORTED} and proposed_by else None,
            evidence=evidence or {},
            provenance={**(provenance or {}), "source": source, "by": _who(proposed_by, actor_label)},
            mining_run=mining_run,
            skeleton=skeleton or [],
            findings=findings,
        )
        audit(
            action=AuditEvent.Action.PROPOSE if source != Source.IMPORTED else AuditEvent.Action.IMPORT,
            actor=proposed_by,
            actor_label=actor_label,
            version=version,
            reason=reason,
            after={**_status_snapshot(version), "quarantined": version.quarantined, "contentHash": version.content_hash},
        )
    return version


def _who(user, label: str) -> str:
    if user is not None and getattr(user, "is_authenticated", False):
        return user.get_username()
    return label or "system"


def _create_version(
    *,
    procedure: Procedure,
    content: Content,
    source: str,
    proposed_by,
    edited_by,
    evidence: dict,
    provenance: dict,
    findings: list[policy.Finding],
    mining_run: MiningRun | None = None,
    skeleton: list[str] | None = None,
    based_on: ProcedureVersion | None = None,
) -> ProcedureVersion:
    """Caller holds a transaction. Locks the procedure row so that version numbers never collide.
    The screen's record (policy version, trust level) goes into the immutable provenance."""
    provenance = screened_provenance(provenance=provenance, source=source, findings=findings)
    Procedure.objects.select_for_update().filter(pk=procedure.pk).first()
    last = ProcedureVersion.objects.filter(procedure=procedure).aggregate(n=Max("number"))["n"] or 0
    return ProcedureVersion.objects.create(
        procedure=procedure,
        number=last + 1,
        status=Status.CANDIDATE,
        **content_of(content),
        evidence=evidence,
        content_hash=content.hash,
        source=source,
        proposed_by=proposed_by if proposed_by is not None and getattr(proposed_by, "is_authenticated", False) else None,
        edited_by=edited_by,
        provenance=provenance,
        mining_run=mining_run,
        skeleton=skeleton or [],
        based_on=based_on,
        **quarantine_fields(findings),
    )


def version_revise(
    *,
    version: ProcedureVersion,
    user,
    applies_when: Any,
    steps: Any,
    required_tools: Any,
    forbidden_actions: Any,
    reason: str = "",
    preconditions: Any = None,
    postconditions: Any = None,
    verify_command: Any = None,
) -> ProcedureVersion:
    """An edit: a new CANDIDATE version based on `version`, with `user` as its last editor.
    Preconditions, postconditions and the verify command left out (None) keep the edited version's.

    When the edited version is itself a CANDIDATE it is superseded (REJECTED with a pointer to the
    new version), so a queue never holds two drafts of one edit. Evals of the old content no longer
    count: they are pinned to its content hash."""
    if not user_can_review(user, version.procedure):
        raise PermissionDenied("Only reviewers may edit procedures.")
    content = validate_content(
        applies_when=applies_when, steps=steps, required_tools=required_tools, forbidden_actions=forbidden_actions,
        preconditions=version.preconditions if preconditions is None else preconditions,
        postconditions=version.postconditions if postconditions is None else postconditions,
        verify_command=version.verify_command if verify_command is None else verify_command,
        coding=version.procedure.agent.kind == Agent.Kind.CODING,
    )
    findings = screen_content(content)
    with transaction.atomic():
        _lock_procedure(version, agent_too=False)  # before the version row: the decisions' lock order
        locked = ProcedureVersion.objects.select_for_update().select_related("procedure__agent").get(pk=version.pk)
        if locked.status == Status.REJECTED:
            raise LifecycleError(f"{locked} was rejected; propose a new version instead of editing it.")
        if locked.status == Status.ERASED:
            raise LifecycleError(f"{locked} was erased; there is no content left to edit.")
        if content.hash == locked.content_hash:
            raise LifecycleError("Nothing changed: the edit has the same content as the version it edits.")
        new_version = _create_version(
            procedure=locked.procedure,
            content=content,
            source=Source.REVISION,
            proposed_by=locked.proposed_by,
            edited_by=user,
            evidence=locked.evidence,
            provenance={**locked.provenance, "editedFrom": locked.number, "editedBy": user.get_username()},
            findings=findings,
            mining_run=locked.mining_run,
            skeleton=locked.skeleton,
            based_on=locked,
        )
        audit(
            action=AuditEvent.Action.REVISE,
            actor=user,
            version=new_version,
            reason=reason,
            before={"version": locked.number, "contentHash": locked.content_hash},
            after={**_status_snapshot(new_version), "contentHash": new_version.content_hash},
        )
        if locked.status == Status.CANDIDATE:
            _set_status(
                locked,
                Status.REJECTED,
                user=user,
                reason=f"Superseded by v{new_version.number}",
                action=AuditEvent.Action.REJECT,
            )
    return new_version


# --------------------------------------------------------------------------------------------- status changes


def _set_status(
    version: ProcedureVersion, new_status: str, *, user, reason: str, action: str, note: dict[str, Any] | None = None, **extra
) -> None:
    """Caller holds the row lock. A conditional UPDATE so that a racing writer is refused, not merged.
    `note`: more facts for the audit row's `after` (e.g. the eval a retirement rests on)."""
    before = _status_snapshot(version)
    now = timezone.now()
    updated = ProcedureVersion.objects.filter(pk=version.pk, status=version.status).update(
        status=new_status, status_reason=reason, status_changed_at=now, **extra
    )
    if updated != 1:
        raise LifecycleError(f"{version} changed while you were deciding; reload and try again.")
    version.status = new_status
    version.status_reason = reason
    version.status_changed_at = now
    for field, value in extra.items():
        setattr(version, field, value)
    audit(action=action, actor=user, version=version, reason=reason, before=before, after={**_status_snapshot(version), **(note or {})})


def _lock_procedure(version: ProcedureVersion, *, agent_too: bool) -> None:
    """Serialises decisions: locks the procedure row before any version row, and first the agent
    row for decisions that change the active set. Every writer takes these locks in one order
    (agent, procedure, versions; mining and the rights services lock the agent first too), so two
    decisions never deadlock, and the loser of a race re-reads the state the winner committed and
    re-checks its blockers against it. The agent lock matters because an eval's baseline is the
    agent's whole active set: two approvals of two procedures of one agent must not both pass on
    one baseline. Caller holds a transaction."""
    if agent_too:
        agent_id = Procedure.objects.filter(pk=version.procedure_id).values_list("agent_id", flat=True).first()
        Agent.objects.select_for_update().filter(pk=agent_id).values_list("pk", flat=True).first()
    Procedure.objects.select_for_update().filter(pk=version.procedure_id).values_list("pk", flat=True).first()


def _decision(callback: Callable[[], ProcedureVersion]) -> ProcedureVersion:
    """Runs a decision in one transaction. The locks make a lost race a LifecycleError; should the
    database's own invariants (one ACTIVE version per procedure, the transition trigger) still refuse
    a write, that is a lost race too and is reported as one, never as a server error."""
    try:
        with transaction.atomic():
            return callback()
    except (IntegrityError, OperationalError) as exc:
        if isinstance(exc, OperationalError) and not isinstance(exc.__cause__, _LOST_RACE_ERRORS):
            raise
        logger.warning("decision refused by the database: %s", exc)
        raise DecisionConflict(
            "Another decision on this procedure was made at the same time; reload and try again."
        ) from exc


def _lock_version(version: ProcedureVersion) -> ProcedureVersion:
    return (
        ProcedureVersion.objects.select_for_update(of=("self",))
        .select_related("procedure__agent", "procedure__intent")
        .get(pk=version.pk)
    )


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
        rows[pk]["number"]
        for pk in since | seen
        if user.pk in (rows[pk]["proposed_by_id"], rows[pk]["edited_by_id"])
    )


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
        f"of its intent {selection['targetIntent']} ({share:.0%}; at least {minimum:.0%} needed): its appliesWhen does "
        "not reach the tasks it is for. Reword it and run the eval again."
    )


def approval_blockers(
    version: ProcedureVersion, user, *, acknowledged_conflicts: bool = False, may_approve: bool | None = None
) -> list[str]:
    """Every reason why `user` may not approve `version` now (empty: may approve). The UI shows
    these next to a disabled button; version_approve re-checks them under the row lock. Conflicts
    with the agent's other ACTIVE procedures (library/conflicts.py) block unless acknowledged.
    `may_approve`: `user_can_approve(user, version.procedure)` when a page has already asked;
    None asks (as version_approve does, under the lock)."""
    reasons: list[str] = []
    if version.status != Status.CANDIDATE:
        reasons.append(f"Only a candidate can be approved; this version is {version.get_status_display().lower()}.")
        return reasons
    if not (user_can_approve(user, version.procedure) if may_approve is None else may_approve):
        reasons.append("You do not hold the approve permission for this procedure or its agent.")
    if user is not None and user.is_authenticated:
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
            "No passing eval run on this exact content yet." if elsewhere is None else
            f"Eval run {elsewhere.pk} passed against the {elsewhere.set_label}, but approving releases it to "
            f"{target}: start a new run (it replays against the {target} set)."
        )
    else:
        from .selectors import environment_set_hash

        if run.baseline_hash and run.baseline_hash != environment_set_hash(version.procedure.agent, target):
            reasons.append(f"The {run.set_label} changed since the eval run started; start a new run.")
        reach = selection_reach_blocker(run)
        if reach:
            reasons.append(reach)
    if not acknowledged_conflicts:
        from .conflicts import conflicts_for_candidate

        for conflict in conflicts_for_candidate(version):
            reasons.append(f"Conflict (acknowledge it on the approve page to approve anyway): {conflict.message}")
    return reasons


def version_approve(
    *, version: ProcedureVersion, user, comment: str = "", acknowledge_conflicts: bool = False
) -> ProcedureVersion:
    """CANDIDATE → ACTIVE. The previous ACTIVE version of the same procedure becomes RETIRED in the
    same transaction. When the agent has a staging environment, CANDIDATE → APPROVED instead:
    released to staging, production untouched (library/releases.py). Two approvers racing: the procedure lock serialises them, the second re-checks
    every blocker against what the first committed and is refused (LifecycleError, a 409). A
    conflict with another ACTIVE procedure blocks unless `acknowledge_conflicts`; then it is
    recorded in a `conflict_ack` audit row."""
    if user is None or not user.is_authenticated:
        raise PermissionDenied("Sign in to approve.")

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
        blockers = approval_blockers(locked, user, acknowledged_conflicts=acknowledge_conflicts)
        if blockers:
            raise LifecycleError(" ".join(blockers))
        if acknowledge_conflicts:
            from .conflicts import conflicts_for_candidate

            acknowledged = conflicts_for_candidate(locked)
            if acknowledged:
                audit(
                    action=AuditEvent.Action.CONFLICT_ACK, actor=user, version=locked, reason=comment,
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

    return _decision(decide)


def review_by_for(agent: Agent, *, today=None):
    """The day a version that becomes (or stays) ACTIVE today is due for re-review."""
    from datetime import timedelta

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
            action=AuditEvent.Action.REVIEW, actor=user, version=locked, reason=(comment or "").strip(),
            before=before, after={"version": locked.number, "reviewBy": review_by.isoformat()},
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


def change_eval_for(version: ProcedureVersion, *, kind: str, replacement: ProcedureVersion | None = None) -> EvalRun | None:
    """The newest eval of retiring `version` (kind retire) or of rolling it back to `replacement`
    (kind rollback) on its exact content, finished or not, or None."""
    return (
        EvalRun.objects.filter(version=version, kind=kind, replacement=replacement, content_hash=version.content_hash)
        .order_by("-created_at", "-id")
        .first()
    )


def change_eval_note(version: ProcedureVersion, *, kind: str, replacement: ProcedureVersion | None = None) -> dict[str, Any]:
    """What the audit row of a retirement or rollback records about its eval: the run it rests on
    (finished, on the current active set), or that the eval was skipped — or not needed, when the
    change is forced because the agent no longer has a tool the version requires."""
    missing = sorted(set(version.required_tools) - set(version.procedure.agent.tools))
    if missing:
        return {"eval": "not needed", "evalWhy": f"forced: the agent no longer has {', '.join(missing)}"}
    run = change_eval_for(version, kind=kind, replacement=replacement)
    if run is None or run.state != EvalRun.State.DONE:
        return {"eval": "skipped"}
    from .selectors import environment_set_hash

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
    audit row names the rollback eval it rests on, or records that it was skipped."""
    reason = required_reason(reason, "Rolling back")

    def decide() -> ProcedureVersion:
        locked = _lock_for_admin_change(
            version, user=user, doing="roll back", status=Status.RETIRED, only="Only a retired version can be rolled back to"
        )
        current = ProcedureVersion.objects.filter(procedure=locked.procedure, status=Status.ACTIVE).select_related("procedure__agent").first()
        note = change_eval_note(current, kind=EvalRun.Kind.ROLLBACK, replacement=locked) if current else {"eval": "not needed", "evalWhy": "no active version"}
        _retire_current_active(locked.procedure, user=user, reason=f"Rolled back to v{locked.number}: {reason}")
        _set_status(
            locked, Status.ACTIVE, user=user, reason=reason, action=AuditEvent.Action.ROLLBACK,
            review_by=review_by_for(locked.procedure.agent), note=note,
        )
        _notify_after_commit(locked, "rollback", user, reason)
        return locked

    return _decision(decide)


# What erasure leaves of a version's content, evidence, provenance and policy excerpts: the values
# the database's version guard lets an erasure write, once.
ERASED_CONTENT = {
    "applies_when": "", "steps": [], "required_tools": [], "forbidden_actions": [], "skeleton": [],
    "quarantine_reasons": [], "evidence": {}, "provenance": {}, "preconditions": [], "postconditions": [],
    "verify_command": "",
    "search_vector": None,  # the full-text document of the erased content
}


def version_erase(*, version: ProcedureVersion, user, ground: str, reason: str) -> VersionTombstone:
    """Any status → ERASED (admin): a personal-data request or poisoned content. In one transaction,
    under the version's row lock: a VersionTombstone keeps id, number, content hash, who, when and
    why; the version's content, evidence, provenance and policy excerpts are wiped (the database's
    version guard allows exactly this change, once, and only with the tombstone present); its
    stored embeddings are deleted; the replies and tool calls its eval runs recorded are wiped and
    unfinished runs cancelled; listeners of `version_erasing` (reviews: comments) wipe what they
    hold. After commit the served sets drop it (`active_set_changed`, whatever the old status was,
    so caches and ETags change at once)."""
    from . import erasure
    from .signals import version_erased, version_erasing

    if ground not in VersionTombstone.Ground.values:
        raise ValidationError({"ground": f"unknown ground {ground!r}; one of {', '.join(VersionTombstone.Ground.values)}"})
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Erasing needs a reason (it is kept in the tombstone)."})
    if user is None or not user.is_authenticated:
        raise PermissionDenied("Sign in to erase.")
    with transaction.atomic():
        _lock_procedure(version, agent_too=True)  # erasing an ACTIVE version changes the active set
        locked = _lock_version(version)
        if not user_can_manage_procedure(user, locked.procedure):
            raise PermissionDenied(f"You may not erase versions of {locked.procedure.key}.")
        if locked.status == Status.ERASED:
            raise LifecycleError(f"{locked} was already erased.")
        release_for_erasure(locked=locked, user=user)  # it leaves every environment and rollout first
        erased_texts = erasure.version_texts(locked)
        now = timezone.now()
        status_before = locked.status
        tombstone = VersionTombstone.objects.create(
            version=locked,
            procedure_key=locked.procedure.key,
            number=locked.number,
            content_hash=locked.content_hash,
            status_before=status_before,
            ground=ground,
            reason=reason,
            erased_by=user,
            erased_at=now,
        )
        updated = ProcedureVersion.objects.filter(pk=locked.pk, status=status_before).update(
            status=Status.ERASED,
            status_reason=f"Erased: {tombstone.get_ground_display()}",
            status_changed_at=now,
            **ERASED_CONTENT,
        )
        if updated != 1:
            raise LifecycleError(f"{locked} changed while you were deciding; reload and try again.")
        VersionEmbedding.objects.filter(version=locked).delete()
        _erase_eval_records(version_id=locked.pk)
        for _receiver, wiped in version_erasing.send(sender=ProcedureVersion, version_id=locked.pk):
            erased_texts.extend(wiped or [])  # listeners return the texts they wiped (comment bodies)
        sweep = erasure.erasure_sweep(version=locked, tombstone=tombstone, texts=erased_texts, user=user)
        audit(
            action=AuditEvent.Action.ERASE,
            actor=user,
            version=locked,
            reason=reason,
            before={"version": locked.number, "status": status_before, "contentHash": locked.content_hash},
            after={
                "version": locked.number, "status": Status.ERASED, "ground": ground, "copiesRewritten": sweep.rewritten_count,
                "versionsFlagged": sweep.flagged_versions, "copiesRemaining": len(sweep.remaining),
            },
        )
        agent_id = locked.procedure.agent_id
        _on_commit(lambda: _notify_active_set_changed(agent_id))
        version_id = locked.pk
        _on_commit(lambda: version_erased.send(sender=ProcedureVersion, agent_id=agent_id, version_id=version_id))
    locked.refresh_from_db()
    return tombstone


def _erase_eval_records(*, version_id: int) -> None:
    """Part of `version_erase` (caller holds the version's row lock inside its transaction): the
    version's unfinished eval runs are cancelled (a chunk task stops at its next case; a claimed row
    cannot be finished, its claim nonce is cleared), and the replies, tool calls and failure texts
    every run recorded are wiped, since a replay can echo the erased content. Verdicts stay (a
    finished run's verdict never changes)."""
    from .models import EvalCaseResult
    from .signals import eval_run_finished

    unfinished = [EvalRun.State.QUEUED, EvalRun.State.RUNNING]
    cancelled = list(
        EvalRun.objects.select_for_update().filter(version_id=version_id, state__in=unfinished).values_list("pk", flat=True)
    )
    EvalRun.objects.filter(pk__in=cancelled).update(
        state=EvalRun.State.CANCELLED, failure_reason="Cancelled: the version was erased", finished_at=timezone.now()
    )
    for run_id in cancelled:
        _on_commit(lambda run_id=run_id: eval_run_finished.send(sender=EvalRun, run_id=run_id))
    EvalCaseResult.objects.filter(run__version_id=version_id).update(
        reply="", tool_calls=[], failures=[], error="", claim_nonce=""
    )


def agent_set_tools(*, agent: Agent, tools: Any, user=None, actor_label: str = "", reason: str = "") -> Agent:
    """Replaces an agent's tool list, keeping the history. Versions that now miss a tool are refused
    at load by the agent API (library/serving.py), which raises the alert once."""
    from .models import AgentToolChange

    cleaned = _clean_str_list(tools, "tools", allow_empty=True, max_items=500)
    if len(set(cleaned)) != len(cleaned):
        raise ValidationError({"tools": "lists a tool twice"})
    for index, name in enumerate(cleaned):
        # the names sessions are stored under: any other name never matches a session's calls
        stored = normalise_tool_name(name)
        if stored != name:
            hint = f"; sessions store it as {stored!r}" if stored else ""
            raise ValidationError({"tools": f"tools[{index}]: {name[:80]!r} is not a tool name (letters, digits, _ . -, at most 128){hint}"})
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        before = list(locked.tools)
        if sorted(before) == sorted(cleaned):
            return locked
        locked.tools = cleaned
        locked.save(update_fields=["tools"])
        AgentToolChange.objects.create(
            agent=locked, tools_before=before, tools_after=cleaned, changed_by=user if user and user.is_authenticated else None, reason=reason
        )
        audit(
            action=AuditEvent.Action.TOOLS_CHANGE,
            actor=user,
            actor_label=actor_label,
            agent=locked,
            reason=reason,
            before={"tools": before},
            after={"tools": cleaned},
        )
        agent_id = locked.pk
        _on_commit(lambda: _notify_active_set_changed(agent_id))
    agent.tools = cleaned
    return locked


# --------------------------------------------------------------------------------------------- environments and rollouts
# The parts of approve, retire, roll back and erase that concern staging and rollouts; promotion
# itself is library/releases.py.


def _release_to(locked: ProcedureVersion, *, environment: str, user, reason: str) -> None:
    """Caller holds the locks; `locked` is APPROVED. Replaces what `environment` served for the
    procedure; a version that this displaces and that is released nowhere else is retired."""
    previous = ProcedureRelease.objects.select_for_update().filter(procedure=locked.procedure, environment=environment).first()
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
        action=AuditEvent.Action.STAGE, actor=user, version=locked, reason=reason,
        before={"environment": environment, "version": previous.version.number if previous else None},
        after={"environment": environment, "version": locked.number},
    )


def _retire_if_unreleased(version: ProcedureVersion, *, user, reason: str) -> None:
    """An APPROVED version that no environment serves and no rollout runs is retired: nothing
    could serve it again but a promotion nobody asked for."""
    version = ProcedureVersion.objects.select_for_update(of=("self",)).select_related("procedure__agent").get(pk=version.pk)
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
        locked, Status.APPROVED, user=user, reason=comment, action=AuditEvent.Action.APPROVE,
        approved_by=user, approved_at=timezone.now(), approval_eval_run=run,
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
        action=action, actor=user, version=version, reason=reason,
        before={"rollout": rollout.pk, "share": rollout.share, "state": Rollout.State.RUNNING},
        after={"rollout": rollout.pk, "state": rollout.state},
    )


def release_for_erasure(*, locked: ProcedureVersion, user) -> None:
    """Part of `services.version_erase` (caller holds the locks): an erased version leaves every
    environment, and a running rollout in which it is either arm is rolled back, so production
    serves what it served before the rollout (or, when the control is erased, nothing of it)."""
    released = list(ProcedureRelease.objects.select_for_update().filter(version=locked).values_list("environment", flat=True))
    if released:
        ProcedureRelease.objects.filter(version=locked).delete()
        audit(
            action=AuditEvent.Action.WITHDRAW, actor=user, version=locked, reason="Erased",
            before={"environments": released}, after={"environments": []},
        )
    for rollout in Rollout.objects.select_for_update().filter(state=Rollout.State.RUNNING, procedure=locked.procedure):
        if locked.pk in (rollout.version_id, rollout.control_version_id):
            _rollout_end(rollout, state=Rollout.State.ROLLED_BACK, user=user, reason=f"v{locked.number} was erased")
            _rollout_end_audit(rollout, locked, AuditEvent.Action.ROLLOUT_ROLLBACK, user, f"v{locked.number} was erased")
            if rollout.version_id != locked.pk:
                _retire_if_unreleased(rollout.version, user=user, reason=f"Rollout ended: v{locked.number} was erased")


__all__ = [
    "Content",
    "DecisionConflict",
    "LifecycleError",
    "authored_since_active",
    "approval_blockers",
    "audit",
    "agent_set_tools",
    "passing_eval_for",
    "procedure_propose",
    "refuse_while_rollout_runs",
    "release_for_erasure",
    "running_rollout",
    "validate_content",
    "version_approve",
    "version_erase",
    "version_reject",
    "version_retire",
    "version_review_confirm",
    "review_by_for",
    "version_revise",
    "version_rollback",
]
