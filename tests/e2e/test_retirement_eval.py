"""Retiring is the same operation in reverse: in a real browser (Debian's Chromium) an admin runs the
replay with the ACTIVE version removed from the version page, reads its verdict on the confirm page
before confirming, and the audit row of the retirement names the run."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from library import services
from library.demo import DEMO_USERS, seed_demo
from library.models import AuditEvent, EvalRun, ProcedureVersion, Status
from tests.conftest import make_passing_eval
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def test_admin_evaluates_retiring_from_the_version_page_and_sees_the_verdict_before_confirming(
    live_server, page, screenshot
):
    # given the demo with its mined refund candidate v2 approved (v1 retired)
    seed_demo()
    v2 = ProcedureVersion.objects.get(procedure__key="refund.over_limit", number=2, status=Status.CANDIDATE)
    make_passing_eval(v2)
    services.version_approve(
        version=v2, user=get_user_model().objects.get(username="approver"), comment="mined and replayed"
    )

    # when the admin opens v2's version page and evaluates retiring it
    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    page.goto(f"{live_server.url}/versions/{v2.pk}/")
    screenshot(page, "version-page")
    page.click("#evaluate-retiring")
    page.wait_for_load_state("networkidle")

    # then the confirm page shows the replay's verdict before anything is retired
    assert "Retire refund.over_limit v2?" in page.locator("h1").inner_text()
    page.locator("#change-eval-verdict").wait_for()
    verdict = page.locator("#change-eval-verdict").inner_text()
    assert verdict.startswith("✗ FAIL") and "refund_over_limit got worse" in verdict
    assert "refund.over_limit v2 was injected in 8 of 8" in page.locator("#selection-reach").inner_text()
    assert page.locator("table.eval-intents tr.target").count() == 1
    assert ProcedureVersion.objects.get(pk=v2.pk).status == Status.ACTIVE
    run = EvalRun.objects.get(version=v2, kind=EvalRun.Kind.RETIRE)
    assert (run.state, run.verdict) == (EvalRun.State.DONE, EvalRun.Verdict.FAIL)
    screenshot(page, "confirm-retire-with-eval")

    # and confirming anyway records the run and its verdict in the audit row
    page.fill("#reason", "Replaced by a runbook change; the failing replay is understood")
    page.click("button:has-text('Retire v2')")
    page.wait_for_load_state("networkidle")
    assert "Retired refund.over_limit v2" in page.locator(".messages").inner_text()
    event = AuditEvent.objects.filter(action=AuditEvent.Action.RETIRE, version=v2).latest("at")
    assert event.after["eval"] == {"run": run.pk, "verdict": "fail"}
