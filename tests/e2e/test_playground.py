"""A reviewer types a task into the selection playground in a real browser and sees the block the
agent would receive, the ranking and why each procedure is (not) eligible."""

import re

import pytest
from playwright.sync_api import expect

from library.serving import active_set as serving
from tests.conftest import make_active
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def test_reviewer_types_a_task_and_sees_the_block(
    live_server, page, screenshot, candidate, other_procedure, admin_user, reviewer
):
    make_active(candidate, admin_user)
    make_active(other_procedure.versions.get(number=1), admin_user)
    serving.clear_cache()
    sign_in(page, live_server.url, "reviewer", "pw-reviewer")
    page.goto(f"{live_server.url}/agents/support_agent/playground/")
    screenshot(page, "playground-empty")

    page.fill("#id_task", "The customer wants a refund of 900 dollars, above my limit.")
    page.click("#playground-form button.primary")
    block = page.locator("#rendered-block")
    block.wait_for(timeout=180_000)  # the first selection loads the model in the server process
    text = block.inner_text()
    assert text.startswith("Reviewed procedures for this task")
    assert "Procedure refund.over_limit v1 (source: written by reviewers; approved by admin on" in text
    ranking = page.locator("#ranking tbody tr")
    assert ranking.count() == 2
    assert "refund.over_limit" in ranking.nth(0).inner_text() and "injected" in ranking.nth(0).inner_text()
    assert "semantic" in ranking.nth(0).inner_text()
    screenshot(page, "playground-refund")

    # the intent filter and an unrelated task
    page.fill("#id_task", "Write a haiku about autumn leaves.")
    page.select_option("#id_intent", "order_status")
    page.click("#playground-form button.primary")
    # a locator assertion polls without evaluating strings in the page (the CSP forbids eval)
    expect(page.locator("#rendered-block")).to_have_text(re.compile(r"^Nothing is injected"), timeout=60_000)
    assert page.locator("#ranking tbody tr").count() == 1 and "order.status" in page.locator("#ranking").inner_text()
    assert "no:" in page.locator("#ranking tbody tr").nth(0).inner_text()
    screenshot(page, "playground-unrelated")
