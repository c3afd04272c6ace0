"""Writes of the review workspace that are not lifecycle changes (those are library.services):
comments, and a bulk rejection that goes through `version_reject` for each version."""

from __future__ import annotations

from typing import Sequence

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.dispatch import receiver

from library import signals as library_signals

from django.utils import timezone

from library.models import Agent, AuditEvent, ProcedureVersion, Status
from library.permissions import user_can_manage_procedure, user_is_reviewer
from library.services import LifecycleError, audit, version_reject, version_retire

from .models import Comment, DemotionProposal

MAX_COMMENT_CHARS = 5000
MAX_BULK_REJECT = 500


def comment_create(*, version: ProcedureVersion, user, body: str) -> Comment:
    """A reviewer's comment on a version (any status: a rejected one can still be discussed)."""
    if not user_is_reviewer(user):
        raise PermissionDenied("Only reviewers may comment.")
    body = (body or "").strip()
    if not body:
        raise ValidationError({"body": "A comment cannot be empty."})
    if len(body) > MAX_COMMENT_CHARS:
        raise ValidationError({"body": f"A comment is at most {MAX_COMMENT_CHARS} characters."})
    with transaction.atomic():
        comment = Comment.objects.create(version=version, author=user, body=body)
        audit(action=AuditEvent.Action.COMMENT, actor=user, version=version, reason=body[:200], after={"comment": comment.pk})
    return comment


@receiver(library_signals.version_erasing, dispatch_uid="reviews.wipe_comments_of_erased_version")
def _wipe_comments(sender, version_id: int, **kwargs) -> None:
    """Inside the erasing transaction: comments can quote the erased content. The rows stay (who
    commented when), their text goes."""
    Comment.objects.filter(version_id=version_id).update(body="(erased with the version)")


def versions_bulk_reject(*, versions: Sequence[ProcedureVersion], user, reason: str) -> list[ProcedureVersion]:
    """Rejects every version with one reason, all or nothing: one transaction, each through
    `version_reject` (which locks, re-checks the status and audits). If one of them is no longer a
    candidate the whole batch is refused with that version named, and nothing changes."""
    if not user_is_reviewer(user):
        raise PermissionDenied("Only reviewers may reject candidates.")
    if not versions:
        raise ValidationError({"versions": "Select at least one candidate."})
    if len(versions) > MAX_BULK_REJECT:
        raise ValidationError({"versions": f"At most {MAX_BULK_REJECT} candidates at once."})
    with transaction.atomic():
        return [version_reject(version=version, user=user, reason=reason) for version in versions]


# ---------------------------------------------------------------------------------------------- demotion


def demotions_propose(*, agent: Agent, today=None) -> list[DemotionProposal]:
    """Runs the demotion check (reviews.metrics.demotion) for one agent and opens a proposal, with an
    audit row, for each finding on a version that has no open proposal yet. Retires nothing."""
    from .metrics.demotion import demotion_findings

    findings = demotion_findings(agent=agent, today=today)
    opened: list[DemotionProposal] = []
    with transaction.atomic():
        for finding in findings:
            locked = ProcedureVersion.objects.select_for_update().filter(pk=finding.version.pk, status=Status.ACTIVE).first()
            if locked is None or DemotionProposal.objects.filter(version=locked, state=DemotionProposal.State.OPEN).exists():
                continue
            proposal = DemotionProposal.objects.create(
                version=locked, kind=finding.kind, figures=finding.figures, message=finding.message
            )
            audit(
                action=AuditEvent.Action.DEMOTION_PROPOSE, actor_label="demotion check", version=finding.version,
                reason=finding.message, after={"proposal": proposal.pk, "kind": finding.kind, **finding.figures},
            )
            opened.append(proposal)
    return opened


def _lock_open_proposal(proposal: DemotionProposal, user) -> DemotionProposal:
    locked = (
        DemotionProposal.objects.select_for_update(of=("self",))
        .select_related("version__procedure__agent")
        .get(pk=proposal.pk)
    )
    if not user_can_manage_procedure(user, locked.version.procedure):
        raise PermissionDenied(f"You may not decide demotions of {locked.version.procedure.key}.")
    if locked.state != DemotionProposal.State.OPEN:
        raise LifecycleError(f"This proposal was already {locked.get_state_display().lower()}.")
    return locked


def _close(locked: DemotionProposal, *, user, state: str, reason: str) -> None:
    locked.state = state
    locked.decided_by = user
    locked.decided_at = timezone.now()
    locked.decision_reason = reason
    locked.save(update_fields=["state", "decided_by", "decided_at", "decision_reason"])


def demotion_confirm(*, proposal: DemotionProposal, user, reason: str) -> DemotionProposal:
    """An admin agrees: the version is retired through version_retire (same transaction, its own
    row lock and audit row) and the proposal closed. A version that is no longer ACTIVE is refused."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Confirming a demotion needs a reason."})
    with transaction.atomic():
        locked = _lock_open_proposal(proposal, user)
        version_retire(version=locked.version, user=user, reason=f"Demotion confirmed: {reason}")
        _close(locked, user=user, state=DemotionProposal.State.CONFIRMED, reason=reason)
        audit(action=AuditEvent.Action.DEMOTION_CONFIRM, actor=user, version=locked.version, reason=reason,
              after={"proposal": locked.pk, "kind": locked.kind})
    return locked


def demotion_dismiss(*, proposal: DemotionProposal, user, reason: str) -> DemotionProposal:
    """An admin disagrees: the version stays ACTIVE, the proposal is closed with the reason."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Dismissing a demotion needs a reason."})
    with transaction.atomic():
        locked = _lock_open_proposal(proposal, user)
        _close(locked, user=user, state=DemotionProposal.State.DISMISSED, reason=reason)
        audit(action=AuditEvent.Action.DEMOTION_DISMISS, actor=user, version=locked.version, reason=reason,
              after={"proposal": locked.pk, "kind": locked.kind})
    return locked
