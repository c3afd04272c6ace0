"""Writes of the review workspace that are not lifecycle changes (those are library.services):
comments, and a bulk rejection that goes through `version_reject` for each version."""

from __future__ import annotations

from typing import Sequence

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.dispatch import receiver

from library import signals as library_signals

from library.models import AuditEvent, ProcedureVersion
from library.permissions import user_is_reviewer
from library.services import audit, version_reject

from .models import Comment

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
