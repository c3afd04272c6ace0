"""A reviewer's day in a real browser (Playwright driving Debian's Chromium), on the demo data:

- claim a candidate from the queue, find it under "assigned to me", release it;
- search for a tool name, see it highlighted, open the result;
- open a thread on a step that mentions the approver, who is notified and follows the link to it.

Screenshots of every page land in test-artifacts/screenshots/.
"""

from __future__ import annotations

import re

import pytest

from library.demo import DEMO_USERS, seed_demo
from reviews.models import CandidateClaim, Notification, NotificationKind, Thread
from tests.e2e.conftest import sign_in
from tests.e2e.test_review_flow import refund_candidate

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def _row(page, key: str):
    rows = page.locator("[data-queue-row]")
    return rows.filter(has_text=key).first


def test_claim_and_release_from_the_queue(live_server, page, screenshot):
    seed_demo()
    candidate = refund_candidate()
    base = live_server.url
    sign_in(page, base, "reviewer", DEMO_USERS["reviewer"][0])
    page.goto(f"{base}/queue/")
    row = _row(page, "refund.over_limit")
    row.locator(f'[data-claim="{candidate.pk}"]').click()
    page.wait_for_load_state("networkidle")
    assert "is claimed by you" in page.locator("#flash").inner_text()
    row = _row(page, "refund.over_limit")
    assert row.locator(".claimed-me").inner_text() == "you"
    assert CandidateClaim.objects.get(version=candidate).assignee.username == "reviewer"
    screenshot(page, "01-claimed")

    page.select_option("#filter-assigned", "me")
    page.wait_for_url(re.compile(r"assigned=me"))
    page.wait_for_load_state("networkidle")
    keys = page.locator("[data-queue-row] a.open").all_inner_texts()
    assert keys and all("refund.over_limit" in k for k in keys)
    screenshot(page, "02-assigned-to-me")

    page.locator(f'[data-release="{candidate.pk}"]').click()
    page.wait_for_load_state("networkidle")
    assert "back in the queue" in page.locator("#flash").inner_text()
    assert page.url.endswith("assigned=me")  # back where the reviewer was
    assert page.locator("[data-queue-row]").count() == 0
    assert not CandidateClaim.objects.exists()
    page.goto(f"{base}/queue/?assigned=none")
    assert _row(page, "refund.over_limit").count() == 1
    screenshot(page, "03-released")


def test_search_and_open(live_server, page, screenshot):
    seed_demo()
    candidate = refund_candidate()
    base = live_server.url
    sign_in(page, base, "reviewer", DEMO_USERS["reviewer"][0])
    page.goto(f"{base}/queue/")
    page.fill("#queue-search", "createApproval")
    page.locator("form.search-box button[type=submit]").click()
    page.wait_for_url(re.compile(r"/search/\?"))
    assert "status=CANDIDATE" in page.url
    hit = page.locator(f'[data-hit="{candidate.pk}"]')
    assert hit.count() == 1
    marks = hit.locator("mark").all_inner_texts()
    assert "createApproval" in marks
    screenshot(page, "01-results")

    page.fill("#search-q", "refunds over the limit")
    page.select_option("select[name=status]", "")
    page.click("#search-submit")
    page.wait_for_load_state("networkidle")
    opened = page.locator("[data-hit] a.open").all_inner_texts()
    assert any(k.startswith("refund.over_limit") for k in opened) and not any(k.startswith("order.") for k in opened)
    screenshot(page, "02-words")
    page.locator(f'[data-hit="{candidate.pk}"] a.open').click()
    page.wait_for_url(re.compile(rf"/versions/{candidate.pk}/$"))
    assert "refund.over_limit" in page.locator("h1").inner_text()
    screenshot(page, "03-opened")


def test_a_thread_on_a_step_with_a_mention_notifies(live_server, page, browser, screenshot):
    seed_demo()
    candidate = refund_candidate()
    base = live_server.url
    sign_in(page, base, "reviewer", DEMO_USERS["reviewer"][0])
    page.goto(f"{base}/versions/{candidate.pk}/")
    page.select_option("#thread-anchor", "step:3")
    page.fill("#comment-body", "@approver should createApproval come before the return-window check?")
    page.locator("#new-thread button[type=submit]").click()
    thread_item = page.locator("li.thread").filter(has_text="should createApproval come before")
    thread_item.wait_for()
    assert "step 3" in thread_item.locator(".anchor").inner_text()
    assert "open" in thread_item.locator(".anchor").inner_text()
    thread = Thread.objects.get(version=candidate, step=3)
    screenshot(page, "01-thread-on-step")

    # the approver is notified and follows the link to the thread
    other = browser.new_context(viewport={"width": 1360, "height": 900})
    approver_page = other.new_page()
    approver_page.set_default_timeout(15_000)
    try:
        sign_in(approver_page, base, "approver", DEMO_USERS["approver"][0])
        assert Notification.objects.filter(user__username="approver", kind=NotificationKind.MENTION).count() == 1
        assert approver_page.locator(".bell .badge").count() == 1
        approver_page.goto(f"{base}/notifications/")
        note = approver_page.locator("text=reviewer mentioned you on refund.over_limit").first
        assert note.count() == 1
        screenshot(approver_page, "02-notified")
        approver_page.goto(f"{base}/versions/{candidate.pk}/#thread-{thread.pk}")
        assert approver_page.locator(f"#thread-{thread.pk}").is_visible()
        assert "1 unresolved thread" in approver_page.locator(".open-threads").inner_text()
        approver_page.fill(f"#reply-{thread.pk}", "Yes: the approval request comes first. @reviewer")
        approver_page.locator(f"#thread-{thread.pk} form.reply button").click()
        approver_page.locator(f"#thread-{thread.pk} li").nth(1).wait_for()
        approver_page.locator(f'[data-resolve="{thread.pk}"]').click()
        approver_page.locator(f"#thread-{thread.pk}.resolved").wait_for()
        assert approver_page.locator(".open-threads").count() == 0  # the decision panel followed
        screenshot(approver_page, "03-resolved")
    finally:
        other.close()
    thread.refresh_from_db()
    assert thread.resolved_by.username == "approver"
    assert Notification.objects.filter(user__username="reviewer", kind=NotificationKind.MENTION).count() == 1
