"""What the top bar shows: the user's role and counts of what waits for them."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Exists, IntegerField, Value

from library.models import LoadRefusal, ProcedureVersion, Status
from library.permissions import agents_managed_by, holds_any_approve_right, user_is_reviewer
from library.serving.load_refusals import unresolved_refusals
from reviews.models import Notification
from reviews.selectors import CappedCount, SubqueryCount, waiting_for_approver


@dataclass(frozen=True)
class Navigation:
    """waiting_for_review and waiting_for_me stop at reviews.selectors.COUNT_CAP + 1 (shown as
    "1,000+" by the count_label filter) rather than count a large queue on every page."""

    role: str
    waiting_for_review: int
    unread_notifications: int
    # candidates this user could decide as approver (permission held, not proposer nor last editor)
    waiting_for_me: int = 0
    can_review: bool = False
    refused_at_load: int = 0  # ACTIVE versions agents do not receive: their tools are missing


def role_of(user) -> str:
    if user.is_superuser:
        return "admin"
    if holds_any_approve_right(user):
        return "approver"
    if user_is_reviewer(user):
        return "reviewer"
    return "viewer"


def navigation_for(user) -> Navigation:
    """Every page pays for this: the approve rights (one query, library.permissions.approve_scope),
    the user's model permissions (Django's two) and the four counts in one query."""
    role = role_of(user)
    can_review = user_is_reviewer(user)
    counts = _counts(user, waiting=can_review, for_me=role in {"approver", "admin"})  # scope is cached
    return Navigation(
        role=role,
        waiting_for_review=counts["waiting"],
        unread_notifications=counts["unread"],
        waiting_for_me=counts["for_me"],
        can_review=can_review,
        refused_at_load=refused_count(user, any_refusal=counts["any_refusal"]),
    )


def _counts(user, *, waiting: bool, for_me: bool) -> dict:
    """Candidates waiting (capped), waiting for this approver (capped), unread notifications and
    whether any refusal at load exists, as subqueries of one statement (anchored on the user's row:
    the ORM has no SELECT without FROM). A zero stands for a count the role does not show."""

    zero = Value(0, output_field=IntegerField())
    row = (
        get_user_model()
        .objects.filter(pk=user.pk)
        .values(
            waiting=CappedCount(ProcedureVersion.objects.filter(status=Status.CANDIDATE)) if waiting else zero,
            for_me=CappedCount(waiting_for_approver(user)) if for_me else zero,
            unread=SubqueryCount(Notification.objects.filter(user=user, read_at__isnull=True)),
            any_refusal=Exists(LoadRefusal.objects.all()),
        )
        .first()
    )
    return row or {"waiting": 0, "for_me": 0, "unread": 0, "any_refusal": False}


def refused_count(user, *, any_refusal: bool | None = None) -> int:
    """Unresolved refusals at load on the agents this user manages (superusers: all agents).
    `any_refusal`: whether any refusal exists, when the caller already asked."""

    if any_refusal is None:
        any_refusal = LoadRefusal.objects.exists()
    if not any_refusal:  # the common case
        return 0
    return len(unresolved_refusals(agents=agents_managed_by(user)))
