"""What a review pass of the demo found in Chromium on four pages: a "Mark read" link wrapped onto
two lines, the rollback page's eval heading touching the lists above it, the "Applies when"
disclosure arrow hanging in the card's padding, and settings labels repeating their section's name."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from library.demo import DEMO_USERS, seed_demo
from library.models import ProcedureVersion
from reviews.models import Notification, NotificationKind
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def _admin(page, live_server) -> None:
    seed_demo()
    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    page.set_viewport_size({"width": 1366, "height": 768})


def test_mark_read_stays_on_one_line_at_1366(live_server, page, screenshot):
    _admin(page, live_server)
    admin = get_user_model().objects.get(username="admin")
    for _ in range(2):
        Notification.objects.create(
            user=admin,
            kind=NotificationKind.NEW_CANDIDATES,
            message="refund.over_limit v2 waits for review: the mined candidate adds createApproval before the "
            "refund is promised, from 118 of 140 resolved and 9 of 60 failed sessions of the intent.",
            url="/queue/",
        )
    page.goto(f"{live_server.url}/notifications/")
    screenshot(page, "notifications")
    rows = page.evaluate(
        """() => [...document.querySelectorAll("tbody tr")].filter((tr) => tr.querySelector("button")).map((tr) => {
             const buttons = [...tr.lastElementChild.querySelectorAll("button")];
             return {tops: buttons.map((b) => Math.round(b.getBoundingClientRect().top)),
                     lines: buttons.map((b) => { const r = document.createRange(); r.selectNodeContents(b);
                                                 return r.getClientRects().length; })};
           })"""
    )
    assert len(rows) >= 2, rows
    for row in rows:
        assert len(set(row["tops"])) == 1, row  # "Open" and "Mark read" side by side
        assert row["lines"] == [1] * len(row["lines"]), row  # and neither broken onto two lines


def test_the_rollback_pages_eval_heading_keeps_its_distance(live_server, page, screenshot):
    _admin(page, live_server)
    retired = ProcedureVersion.objects.get(procedure__key="order.status", number=1)
    page.goto(f"{live_server.url}/ops/versions/{retired.pk}/rollback/")
    screenshot(page, "rollback")
    gap = page.evaluate(
        """() => { const h = document.querySelector("#change-eval-title"), lists = document.querySelector(".grid2");
             return h.getBoundingClientRect().top - lists.getBoundingClientRect().bottom; }"""
    )
    assert gap >= 16, gap


def test_the_applies_when_arrow_sits_beside_its_text(live_server, page, screenshot):
    _admin(page, live_server)
    candidate = ProcedureVersion.objects.get(procedure__key="refund.over_limit", number=2)
    page.goto(f"{live_server.url}/versions/{candidate.pk}/")
    screenshot(page, "version")
    boxes = page.evaluate(
        """() => [...document.querySelectorAll("details.field-unchanged > summary")].map((s) => {
             const card = s.closest(".card") || s.closest("section") || document.body, style = getComputedStyle(card);
             return {field: s.parentElement.dataset.field, summary: s.getBoundingClientRect().left,
                     text: s.querySelector("h3").getBoundingClientRect().left,
                     content: card.getBoundingClientRect().left + parseFloat(style.paddingLeft) + parseFloat(style.borderLeftWidth)};
           })"""
    )
    assert any(box["field"] == "appliesWhen" for box in boxes), boxes
    for box in boxes:
        assert box["summary"] >= box["content"] - 1, box  # the summary (and its arrow) inside the content box
        assert box["text"] - box["summary"] >= 8, box  # the arrow takes its room before the text


def test_the_settings_sections_say_their_name_once(live_server, page, screenshot):
    _admin(page, live_server)
    page.goto(f"{live_server.url}/agents/support_agent/settings/")
    screenshot(page, "settings")
    for section, prefix in (("#settings-limits", "API limit"), ("#settings-coding", "Coding agents")):
        texts = page.locator(f"{section} .field > label, {section} .field > .muted").all_inner_texts()
        assert texts, section
        assert not [text for text in texts if text.startswith(prefix)], texts
