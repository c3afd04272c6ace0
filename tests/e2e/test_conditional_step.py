"""A mined procedure with a conditional step in the browser: the step "If lookupOrder returns
shipping = 'express', call refundShipping(…)." in the candidate's steps and, in the evidence, the
looked-up value that decides it with its figures. Screenshot in test-artifacts/screenshots/."""

from __future__ import annotations

import pytest

from library.demo import DEMO_USERS, seed_demo
from library.mining.mining_runs import mining_run_execute
from library.models import ProcedureVersion
from tests.e2e.conftest import sign_in
from tests.library.test_mining import _conditional_sessions

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def test_reviewer_reads_a_conditional_step(live_server, page, screenshot):
    agent = seed_demo().agent
    _conditional_sessions(agent)
    run = mining_run_execute(agent=agent)
    version = ProcedureVersion.objects.get(mining_run=run, procedure__intent__name="late_delivery")
    conditional = next(step for step in version.steps if step.startswith("If "))

    from django.urls import reverse

    sign_in(page, live_server.url, "reviewer", DEMO_USERS["reviewer"][0])
    page.goto(live_server.url + reverse("reviews:version", args=[version.pk]))
    evidence = page.locator("#evidence")
    evidence.wait_for()
    assert page.get_by_text(conditional).count() >= 1
    conditions = evidence.locator("ul.conditions li")
    assert conditions.count() == 1
    assert "lookupOrder returned shipping = 'express'" in conditions.first.inner_text()
    assert "that called refundShipping next" in conditions.first.inner_text()
    assert (
        "→ status: delayed, shipping: standard, customer.tier: gold"
        in evidence.locator("details.excerpt").first.inner_text()
    )
    screenshot(page, "conditional-step")
