"""Proposing and revising: the only code that creates procedure versions (always CANDIDATE),
screened by the policy before they are stored."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Max

from ..models import (
    Agent,
    AuditEvent,
    Intent,
    MiningRun,
    Procedure,
    ProcedureVersion,
    Source,
    Status,
    content_of,
    procedure_key_validator,
)
from ..permissions import user_can_review
from ..policy import rules as policy
from ..policy.screening import quarantine_fields, screen_content, screened_provenance
from .content import Content, validate_content
from .errors import LifecycleError
from .events import _status_snapshot, audit
from .locking import _lock_procedure, _set_status


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
    screen_also: dict[str, str] | None = None,
    based_on: ProcedureVersion | None = None,
) -> ProcedureVersion:
    """Creates a CANDIDATE version (and the procedure identity if it is new). Never ACTIVE.
    A coding agent's procedure needs a verify command (validate_content).

    `screen_also`: more texts that come with the content ({field label: text}, e.g. an imported
    skill's body kept beside its steps), screened like the content; a finding quarantines the
    version. `based_on`: the version of the same procedure this one changes (its diff's base)."""
    if source not in Source.values:
        raise ValidationError({"source": f"unknown source {source!r}"})
    if intent.agent_id != agent.pk:
        raise ValidationError({"intent": f"intent {intent.name!r} belongs to another agent"})
    procedure_key_validator(key)
    content = validate_content(
        applies_when=applies_when,
        steps=steps,
        required_tools=required_tools,
        forbidden_actions=forbidden_actions,
        preconditions=preconditions,
        postconditions=postconditions,
        verify_command=verify_command,
        coding=agent.kind == Agent.Kind.CODING,
    )
    findings = screen_content(content)
    for label, text in (screen_also or {}).items():
        findings.extend(policy.screen_text(text, label))
    with transaction.atomic():
        procedure, created = Procedure.objects.get_or_create(agent=agent, key=key, defaults={"intent": intent})
        if not created and procedure.intent_id != intent.pk:
            raise ValidationError(
                {"intent": f"procedure {key} serves intent {procedure.intent.name!r}, not {intent.name!r}"}
            )
        if based_on is not None and based_on.procedure_id != procedure.pk:
            raise ValidationError({"basedOn": f"{based_on} is a version of another procedure"})
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
            based_on=based_on,
            new_procedure=created,
        )
        audit(
            action=AuditEvent.Action.PROPOSE if source != Source.IMPORTED else AuditEvent.Action.IMPORT,
            actor=proposed_by,
            actor_label=actor_label,
            version=version,
            reason=reason,
            after={
                **_status_snapshot(version),
                "quarantined": version.quarantined,
                "contentHash": version.content_hash,
            },
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
    new_procedure: bool = False,
) -> ProcedureVersion:
    """Caller holds a transaction. Locks the procedure row so that version numbers never collide.
    The screen's record (policy version, trust level) goes into the immutable provenance.
    `new_procedure`: the caller's transaction inserted the procedure row, which no other
    transaction sees yet, let alone gives a version: it holds no version and its row is locked."""
    provenance = screened_provenance(provenance=provenance, source=source, findings=findings)
    if new_procedure:
        last = 0
    else:
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
        proposed_by=proposed_by
        if proposed_by is not None and getattr(proposed_by, "is_authenticated", False)
        else None,
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
        applies_when=applies_when,
        steps=steps,
        required_tools=required_tools,
        forbidden_actions=forbidden_actions,
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
