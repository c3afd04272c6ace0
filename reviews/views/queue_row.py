"""One row of the review queue's table: what it shows, worked out once per row (`present_rows`),
and its HTML (`row_html`).

The row is built here, not by including a row template 50 times a page: each include resolved
about 25 variables and a dozen conditions, and the 50 of them were most of the queue's rendering
and its largest constant cost after the queries (issue 30: the queue at 100,000 candidates cost
4.4x the empty page). Django's admin builds its change list rows the same way
(`admin_list.items_for_result`). Every value is escaped as the template's autoescape escaped it;
the markup is the template's, byte for byte (compared on 137 queue pages, 6,276 rows, when it
moved here; tests/reviews/test_queue_row.py checks the escaping, the claim cell, the eval pill).
"""

from __future__ import annotations

import html
from typing import Callable

from django.urls import reverse
from django.utils import timezone
from django.utils.formats import localize
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

MINUTE = "%Y-%m-%d %H:%M"  # the template's date:"Y-m-d H:i", without its per-call formatter (4x slower)
EVAL_PILLS = {"passing": "pill pill-pass", "queued": "pill pill-running", "running": "pill pill-running", "verdict": "pill pill-fail"}


def url_for_pk(name: str) -> Callable[[int], str]:
    """`reverse(name, kwargs={"pk": pk})` for many primary keys: reversed once, with a marker in
    place of the key (a page of rows reverses two URLs per row otherwise)."""
    marker = "987654321"
    prefix, suffix = reverse(name, kwargs={"pk": int(marker)}).split(marker)
    return lambda pk: f"{prefix}{pk}{suffix}"


def present_rows(rows, *, user, can_review: bool, now) -> None:
    """What each row of the table shows (rows of reviews.queue_rows), worked out here once per
    row: its URLs, the claim cell, the eval pill, the dates as text; then the row's HTML (`v.html`)."""
    version_url, claim_url, release_url = url_for_pk("reviews:version"), url_for_pk("reviews:version_claim"), url_for_pk("reviews:version_release")
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
        v.waited = timesince(v.created_at, now)
        v.html = row_html(v, can_review=can_review)


def row_html(v, *, can_review: bool) -> SafeString:
    """The row's <tr>, from what `present_rows` worked out. Every value written or stored by
    someone goes through `_e` (Django's escape, without its lazy-string wrapper: format_html's
    per-argument overhead was most of building 50 rows); numbers shown as the template showed them
    (`localize`); ids are integers."""
    key, number = _e(v.procedure.key), _e(localize(v.number))
    select = (
        f'<td class="sel"><input type="checkbox" name="versions" value="{v.pk:d}" aria-label="Select {key} v{number}"></td>'
        if can_review else ""
    )
    flag = '<span class="flag small" title="quarantined by the policy screen">⚠ quarantined</span>' if v.quarantined else ""
    comments = (
        f'<span class="muted small" title="comments on this version">💬 {_e(localize(v.comment_count))}</span>' if v.comment_count else ""
    )
    proposer = f'<div class="muted">by {_e(v.proposer)}</div>' if v.proposer else ""
    age = v.age
    pill = f' <span class="pill age-pill age-{_e(age.level)}">{_e(age.label)}</span>' if age.level != "fresh" else ""
    return mark_safe(  # noqa: S308 — every value above is escaped or an integer
        f'<tr data-queue-row class="{"is-quarantined" if v.quarantined else ""}">\n'
        f"  {select}\n"
        f'  <td><a class="open" href="{_e(v.url)}"><strong>{key}</strong> v{number}</a>\n'
        f"    {flag}\n"
        f"    {comments}\n"
        f'    <div class="muted small clamp">{_e(v.applies_when)}</div></td>\n'
        f'  <td>{_e(v.agent_name)}<div class="muted small">{_e(v.intent_name)}</div></td>\n'
        f'  <td class="num">{_support(v)}</td>\n'
        f'  <td><span class="{_e(v.eval_class)}">{_e(v.eval_label)}</span></td>\n'
        f'  <td class="small">{_e(v.source_label)}{proposer}</td>\n'
        f'  <td class="small claim-cell">{_claim(v)}</td>\n'
        f'  <td class="small" title="{_e(v.created_title)} UTC; review target {_e(localize(age.target_hours))} h">'
        f'<span class="age age-{_e(age.level)}" data-age="{_e(age.level)}">{_e(v.waited)}</span>{pill}</td>\n'
        "</tr>\n"
    )


def _e(value) -> str:
    """django.utils.html.escape's text (it is `html.escape(str(value))`), as the template's
    autoescape wrote it."""
    return html.escape(str(value))


def _support(v) -> str:
    if not v.support:
        return '<span class="muted">—</span>'
    resolved = f'<span class="muted small"> of {_e(localize(v.resolved))}</span>' if v.resolved else ""
    return f'<span title="sessions that support it">{_e(localize(v.support))}</span>{resolved}'


def _claim(v) -> str:
    if v.claimed:
        release = (
            f'<button type="submit" form="claim-form" formaction="{_e(v.release_url)}" class="linklike small" data-release="{v.pk:d}">release</button>'
            if v.release_url else ""
        )
        me = " claimed-me" if v.claimed_by_me else ""
        return f'<span class="claimed{me}" title="until {_e(v.claimed_until)} UTC">{_e(v.claimed_by)}</span>\n      {release}\n    '
    if v.claim_url:
        return f'<button type="submit" form="claim-form" formaction="{_e(v.claim_url)}" class="small" data-claim="{v.pk:d}">Claim</button>'
    return '<span class="muted">—</span>'
