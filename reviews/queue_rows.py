"""The rows of one page of the review queue: what each row of the table shows, read in one query
over the page's ids (reviews.selectors.queue_page picks them)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import F, JSONField, OuterRef, Subquery
from django.db.models.fields.json import KeyTransform
from django.utils import timezone

from library.models import EvalRun, ProcedureVersion
from reviews.models import Comment
from reviews.selectors import SubqueryCount, evidence_support, passing_eval_exists

# what a row shows (reviews/views/queue_row.py), not the content, the evidence (a mined version's
# lists its sessions), the agent's settings or the people's profiles
QUEUE_ROW_FIELDS = (
    "procedure__key",
    "procedure__agent",
    "procedure__intent",
    "number",
    "quarantined",
    "applies_when",
    "source",
    "created_at",
)


def queue_rows(pks: list[int]) -> list[ProcedureVersion]:
    """The rows of one queue page, in the order of `pks`: each version with its procedure, and as
    columns of the same row the rest of what the table shows — the agent's and intent's names,
    the proposer and the claim, the evidence's support and resolved counts, the latest eval run
    of the current content and whether one passed, the number of comments. One query: before,
    a model instance for each related row (agent, intent, people, claim: 200 a page) and a query
    each for the eval runs and the comment counts were about a fifth of the queue's time."""
    username = get_user_model().USERNAME_FIELD
    runs = EvalRun.objects.filter(version=OuterRef("pk"), content_hash=OuterRef("content_hash")).order_by(
        "-created_at", "-id"
    )
    rows = (
        ProcedureVersion.objects.filter(pk__in=pks)
        .select_related("procedure")
        .only(*QUEUE_ROW_FIELDS)
        .annotate(
            support=evidence_support(),
            resolved=KeyTransform("resolved", "evidence", output_field=JSONField()),
            agent_name=F("procedure__agent__name"),
            intent_name=F("procedure__intent__name"),
            review_target_hours=F("procedure__agent__review_target_hours"),
            proposer_name=F(f"proposed_by__{username}"),
            claim_assignee_id=F("claim__assignee_id"),
            claim_assignee_name=F(f"claim__assignee__{username}"),
            claim_expires_at=F("claim__expires_at"),
            # a run of older content no longer counts
            eval_state=Subquery(runs.values("state")[:1]),
            eval_verdict=Subquery(runs.values("verdict")[:1]),
            has_passing_eval=passing_eval_exists(),
            comment_count=SubqueryCount(Comment.objects.filter(version=OuterRef("pk"))),
        )
        .order_by()  # put in the order of `pks` below
    )
    by_pk = {row.pk: row for row in rows}
    now = timezone.now()
    for row in by_pk.values():
        row.age = _age(row.created_at, row.review_target_hours, now)
    return [by_pk[pk] for pk in pks if pk in by_pk]


@dataclass(frozen=True)
class AgeBadge:
    """How long a candidate has waited against its agent's review target: "fresh" under half the
    target, "due" from half, "overdue" past it."""

    level: str
    hours: float
    target_hours: int

    @property
    def label(self) -> str:
        return {"fresh": "fresh", "due": "due soon", "overdue": "overdue"}[self.level]


def age_badge(version: ProcedureVersion, now) -> AgeBadge:
    return _age(version.created_at, version.procedure.agent.review_target_hours, now)


def _age(created_at, review_target_hours: int, now) -> AgeBadge:
    target = max(1, review_target_hours)
    hours = max(0.0, (now - created_at).total_seconds() / 3600)
    level = "overdue" if hours >= target else "due" if hours >= target / 2 else "fresh"
    return AgeBadge(level, hours, target)
