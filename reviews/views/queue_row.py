"""One row of the review queue's table: what it reads, in one query over a page's ids
(`queue_rows`; reviews.selectors.queue_page picks the ids), what it shows, worked out once per row
(`present_rows`), and its HTML (`row_html`).

The row is built here, not by including a row template 50 times a page: each include resolved
about 25 variables and a dozen conditions, and the 50 of them were most of the queue's rendering
and its largest constant cost after the queries (issue 30: the queue at 100,000 candidates cost
4.4x the empty page). Django's admin builds its change list rows the same way
(`admin_list.items_for_result`: each cell through format_html). Every value goes through
format_html, so it is escaped as the template's autoescape escaped it; the markup is the
template's, byte for byte (compared on 137 queue pages, 6,276 rows, when it moved here;
tests/reviews/test_queue_row.py puts '<script>' in every field a row shows).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db.models import F, JSONField, OuterRef, Subquery
from django.db.models.fields.json import KeyTransform
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import localize
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

from library.models import EvalRun, ProcedureVersion
from reviews.models import Comment
from reviews.selectors import SubqueryCount, evidence_support, passing_eval_exists

# what a row shows (present_rows below), not the content, the evidence (a mined version's
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


MINUTE = "%Y-%m-%d %H:%M"  # the template's date:"Y-m-d H:i", without its per-call formatter (4x slower)
EVAL_PILLS = {
    "passing": "pill pill-pass",
    "queued": "pill pill-running",
    "running": "pill pill-running",
    "verdict": "pill pill-fail",
}


def url_for_pk(name: str) -> Callable[[int], str]:
    """`reverse(name, kwargs={"pk": pk})` for many primary keys: reversed once, with a marker in
    place of the key (a page of rows reverses two URLs per row otherwise)."""
    marker = "987654321"
    prefix, suffix = reverse(name, kwargs={"pk": int(marker)}).split(marker)
    return lambda pk: f"{prefix}{pk}{suffix}"


def present_rows(rows, *, user, can_review: bool, now) -> None:
    """What each row of the table shows (rows of `queue_rows`), worked out here once per
    row: its URLs, the claim cell, the eval pill, the dates as text; then the row's HTML (`v.html`)."""
    version_url, claim_url, release_url = (
        url_for_pk("reviews:version"),
        url_for_pk("reviews:version_claim"),
        url_for_pk("reviews:version_release"),
    )
    for v in rows:
        v.url = version_url(v.pk)
        if v.has_passing_eval:
            v.eval_class, v.eval_label = EVAL_PILLS["passing"], "✓ passing"
        elif v.eval_state in ("queued", "running"):
            v.eval_class, v.eval_label = EVAL_PILLS[v.eval_state], f"⟳ {v.eval_state}"
        elif v.eval_verdict:
            v.eval_class, v.eval_label = EVAL_PILLS["verdict"], f"✗ {v.eval_verdict}"
        elif v.eval_state:
            v.eval_class, v.eval_label = "pill", v.eval_state
        else:
            v.eval_class, v.eval_label = "muted", "none"
        v.source_label = v.get_source_display()
        v.proposer = v.proposer_name or ""
        # a claim past its expiry is no claim (the next claim replaces the row)
        v.claimed = v.claim_expires_at is not None and v.claim_expires_at > now
        v.claimed_by_me = v.claimed and v.claim_assignee_id == user.pk
        v.claimed_by = ("you" if v.claimed_by_me else v.claim_assignee_name) if v.claimed else ""
        v.claimed_until = timezone.localtime(v.claim_expires_at).strftime(MINUTE) if v.claimed else ""
        v.release_url = release_url(v.pk) if can_review and v.claimed_by_me else ""
        v.claim_url = claim_url(v.pk) if can_review and not v.claimed else ""
        v.created_title = timezone.localtime(v.created_at).strftime(MINUTE)
        # timesince says "0 minutes" for the first minute (the demo's freshly mined candidate)
        v.waited = "just now" if now - v.created_at < timedelta(minutes=1) else timesince(v.created_at, now)
        v.html = row_html(v, can_review=can_review)


def row_html(v, *, can_review: bool) -> SafeString:
    """The row's <tr>, from what `present_rows` worked out. Numbers as the template showed them
    (`localize`); everything else escaped by format_html."""
    procedure = v.procedure
    parts = [
        format_html('<tr data-queue-row class="{}">\n  ', "is-quarantined" if v.quarantined else ""),
        format_html(
            '<td class="sel"><input type="checkbox" name="versions" value="{}" aria-label="Select {} v{}"></td>',
            localize(v.pk),
            procedure.key,
            localize(v.number),
        )
        if can_review
        else "",
        format_html(
            '\n  <td><a class="open" href="{}"><strong>{}</strong> v{}</a>\n    ',
            v.url,
            procedure.key,
            localize(v.number),
        ),
        '<span class="flag small" title="quarantined by the policy screen">⚠ quarantined</span>'
        if v.quarantined
        else "",
        "\n    ",
        format_html(
            '<span class="muted small" title="comments on this version">💬 {}</span>', localize(v.comment_count)
        )
        if v.comment_count
        else "",
        format_html(
            '\n    <div class="muted small clamp">{}</div></td>\n  <td>{}<div class="muted small">{}</div></td>\n  <td class="num">',
            v.applies_when,
            v.agent_name,
            v.intent_name,
        ),
        _support(v),
        format_html(
            '</td>\n  <td><span class="{}">{}</span></td>\n  <td class="small">{}',
            v.eval_class,
            v.eval_label,
            v.source_label,
        ),
        format_html('<div class="muted">by {}</div>', v.proposer) if v.proposer else "",
        '</td>\n  <td class="small claim-cell">',
        _claim(v),
        format_html(
            '</td>\n  <td class="small" title="{} UTC; review target {} h"><span class="age age-{}" data-age="{}">{}</span>',
            v.created_title,
            localize(v.age.target_hours),
            v.age.level,
            v.age.level,
            v.waited,
        ),
        format_html(' <span class="pill age-pill age-{}">{}</span>', v.age.level, v.age.label)
        if v.age.level != "fresh"
        else "",
        "</td>\n</tr>\n",
    ]
    return mark_safe("".join(parts))  # noqa: S308 — the literals above and format_html's escaped pieces


def _support(v) -> str:
    # in words: "—" and a bare "118 of 140" left a reviewer to guess what was counted
    if not v.support:
        return '<span class="muted" title="no mined evidence: written by hand, imported or captured">none</span>'
    html = format_html('<span title="resolved tasks or sessions that follow it">{}</span>', localize(v.support))
    if v.resolved:
        html += format_html('<span class="muted small"> of {} resolved</span>', localize(v.resolved))
    return html


def _claim(v) -> str:
    if v.claimed:
        html = format_html(
            '<span class="claimed{}" title="until {} UTC">{}</span>\n      ',
            " claimed-me" if v.claimed_by_me else "",
            v.claimed_until,
            v.claimed_by,
        )
        if v.release_url:
            html += format_html(
                '<button type="submit" form="claim-form" formaction="{}" class="linklike small" data-release="{}">release</button>',
                v.release_url,
                localize(v.pk),
            )
        return html + "\n    "
    if v.claim_url:
        return format_html(
            '<button type="submit" form="claim-form" formaction="{}" class="small" data-claim="{}">Claim</button>',
            v.claim_url,
            localize(v.pk),
        )
    return '<span class="muted">—</span>'
