"""Webhooks in a real browser (Debian's Chromium): an agent admin adds a webhook pointing at a
receiver on 127.0.0.1, copies the secret shown once, sends a test and sees it delivered with a
signature the receiver verifies; an approval reaches the receiver too; a receiver that fails twice
is retried until it answers, and one that keeps failing is given up, each attempt in the log.

Tasks run eagerly in the live server's thread (test settings), so retries follow each other at once
instead of after their countdown; tests/reviews/test_webhooks_worker.py checks the real countdowns
on a real worker."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings

from library import services
from library.demo import DEMO_USERS, seed_demo
from library.models import ProcedureVersion, Status
from reviews.models import WebhookDelivery
from reviews.webhooks import signature_valid
from tests.conftest import make_passing_eval
from tests.e2e.conftest import sign_in
from tests.webhook_receiver import Receiver

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def _add_webhook(page, base: str, name: str, url: str, events: list[str]) -> str:
    page.goto(f"{base}/agents/support_agent/webhooks/")
    page.fill("#id_name", name)
    page.fill("#id_url", url)
    for event in events:
        page.check(f"#webhook-new input[name=events][value='{event}']")
    page.click("button:has-text('Add webhook')")
    page.wait_for_selector("#secret-value")
    return page.locator("#secret-value").inner_text().strip()


@override_settings(PROCMEM_WEBHOOK_MAX_ATTEMPTS=4)
def test_webhook_delivered_signed_then_a_failing_receiver_retried(live_server, page, screenshot):
    seed_demo()
    base = live_server.url
    sign_in(page, base, "admin", DEMO_USERS["admin"][0])
    page.click("nav.mainnav >> text=Operations")
    page.click("text=support_agent")
    page.click("nav.tabs >> text=Webhooks")
    screenshot(page, "01-webhooks-empty")

    with (
        Receiver(port=8121) as good,
        Receiver(port=8122, statuses=[500, 503, 200]) as flaky,
        Receiver(port=8123, statuses=[500]) as down,
    ):
        # --- a webhook to a receiver that answers -----------------------------------------------
        secret = _add_webhook(page, base, "team chat", good.url, ["version.approved", "eval.finished"])
        assert secret.startswith("whsec_")
        screenshot(page, "02-secret-shown-once")
        page.click("#send-test")
        page.wait_for_load_state("networkidle")
        row = page.locator("#deliveries tbody tr").first
        assert row.get_attribute("data-status") == "succeeded" and "200" in row.inner_text()
        assert len(good.received) == 1
        got = good.received[0]
        assert got.headers["x-procmem-event"] == "webhook.test"
        assert signature_valid(
            secret=secret,
            timestamp_header=got.headers["x-procmem-timestamp"],
            signature_header=got.headers["x-procmem-signature"],
            body=got.body,
        )
        assert secret not in page.content()  # shown once only
        screenshot(page, "03-test-delivered")

        # an approval (by the approver, elsewhere) reaches the receiver, signed
        v2 = ProcedureVersion.objects.get(procedure__key="refund.over_limit", number=2, status=Status.CANDIDATE)
        make_passing_eval(v2)
        services.version_approve(version=v2, user=get_user_model().objects.get(username="approver"), comment="replayed")
        approved = json.loads(good.received[-1].body)
        assert approved["event"] == "version.approved" and approved["data"]["version"] == 2
        assert signature_valid(
            secret=secret,
            timestamp_header=good.received[-1].headers["x-procmem-timestamp"],
            signature_header=good.received[-1].headers["x-procmem-signature"],
            body=good.received[-1].body,
        )
        page.reload()
        assert page.locator("#deliveries tbody tr[data-event='version.approved'][data-status='succeeded']").count() == 1

        # --- a receiver that fails twice, then answers -------------------------------------------
        _add_webhook(page, base, "flaky pager", flaky.url, ["metric.warning"])
        page.click("#send-test")
        page.wait_for_load_state("networkidle")
        row = page.locator("#deliveries tbody tr").first
        assert row.get_attribute("data-status") == "succeeded"
        assert row.locator(".attempts").inner_text() == "3"
        assert len(flaky.received) == 3 and len({r.headers["x-procmem-delivery"] for r in flaky.received}) == 1
        screenshot(page, "04-flaky-retried")

        # --- a receiver that keeps failing: given up after the last attempt ----------------------
        _add_webhook(page, base, "broken", down.url, ["version.retired"])
        page.click("#send-test")
        page.wait_for_load_state("networkidle")
        row = page.locator("#deliveries tbody tr").first
        assert row.get_attribute("data-status") == "failed" and "500" in row.inner_text()
        assert row.locator(".attempts").inner_text() == "4" and len(down.received) == 4
        screenshot(page, "05-failing-given-up")

    page.click("text=Webhooks")
    listing = page.locator("#webhooks").inner_text()
    assert "team chat" in listing and "flaky pager" in listing and "broken" in listing
    screenshot(page, "06-webhook-list")
    assert WebhookDelivery.objects.count() == 4  # three tests and the approval
