"""Erasing a version in a real browser (Debian's Chromium): the admin erases the ACTIVE
refund.over_limit v2 with a ground and a reason, the versions page shows the tombstone, and the
agent JSON no longer serves the version (its ETag changed)."""

from __future__ import annotations

import pytest

from library.demo import DEMO_USERS
from library.models import ProcedureVersion, Status, VersionTombstone
from tests.e2e.conftest import sign_in
from tests.e2e.test_operations import _agent_json, _served, demo_with_two_versions  # noqa: F401 (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def test_admin_erases_a_version_and_the_agent_json_drops_it(live_server, page, screenshot, demo_with_two_versions):  # noqa: F811
    token = demo_with_two_versions
    before, etag_before = _agent_json(live_server.url, token)
    assert _served(before)["refund.over_limit"] == 2
    v2 = ProcedureVersion.objects.get(procedure__key="refund.over_limit", number=2)

    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    page.goto(f"{live_server.url}/ops/agents/support_agent/procedures/refund.over_limit/")
    page.click("#v2 >> text=Erase…")
    assert "Erase refund.over_limit v2?" in page.locator("h1").inner_text()
    page.select_option("#ground", "personal_data")
    page.fill("#reason", "Data-subject request DSR-2026-114")
    screenshot(page, "confirm-erase")
    page.click("button:has-text('Erase v2')")
    page.wait_for_load_state("networkidle")
    assert "Erased refund.over_limit v2" in page.locator(".messages").inner_text()
    assert "checked: 0 copies left" in page.locator(".messages").inner_text()
    row = page.locator("#v2").inner_text()
    assert "Erased" in row and "DSR-2026-114" in row and "Personal-data request" in row
    screenshot(page, "erased-tombstone")
    # the erase page now reports what the erasure did to the copies of the text
    page.goto(f"{live_server.url}/ops/versions/{v2.pk}/erase/")
    result = page.locator(".erasure-result").inner_text()
    assert "0 copies found" in result and "[erased with tombstone" in result
    screenshot(page, "erasure-result")

    after, etag_after = _agent_json(live_server.url, token)
    assert "refund.over_limit" not in _served(after)
    assert etag_after != etag_before
    v2.refresh_from_db()
    assert v2.status == Status.ERASED and v2.steps == []
    assert VersionTombstone.objects.get(version=v2).erased_by.username == "admin"


def test_admin_erases_a_staged_version_and_the_staging_json_drops_it(
    live_server, page, screenshot, demo_with_two_versions
):  # noqa: F811
    """With staging: an approved v3 waits in staging (production serves v2); erasing it drops it from
    the staging JSON at once (staging serves the production version again), production unchanged."""
    from django.contrib.auth import get_user_model

    from library import services
    from library.models import Agent, ProcedureRelease
    from tests.conftest import make_passing_eval
    from tests.e2e.test_promotion import _get

    token = demo_with_two_versions
    agent = Agent.objects.get(name="support_agent")
    agent.environments = ["staging"]
    agent.save(update_fields=["environments"])
    users = get_user_model().objects
    v2 = ProcedureVersion.objects.get(procedure__key="refund.over_limit", number=2)
    v3 = services.version_revise(
        version=v2,
        user=users.get(username="reviewer"),
        applies_when=v2.applies_when,
        steps=[
            *v2.steps[:-1],
            "Tell the customer the expected wait with replyTemplates({{order_id}}, 'approval_pending').",
        ],
        required_tools=v2.required_tools,
        forbidden_actions=v2.forbidden_actions,
    )
    make_passing_eval(v3)
    services.version_approve(
        version=v3, user=users.get(username="approver"), comment="staging first", acknowledge_conflicts=True
    )
    staging, staging_etag = _get(live_server.url, token, environment="staging")
    assert _served(staging)["refund.over_limit"] == 3

    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    page.goto(f"{live_server.url}/ops/agents/support_agent/procedures/refund.over_limit/")
    page.click("#v3 >> text=Erase…")
    page.select_option("#ground", "poisoned")
    page.fill("#reason", "Poisoned step found in staging")
    page.click("button:has-text('Erase v3')")
    page.wait_for_load_state("networkidle")
    assert "the production version" in page.locator("#env-staging").inner_text()
    screenshot(page, "staged-erased")

    after, etag_after = _get(live_server.url, token, environment="staging")
    assert _served(after)["refund.over_limit"] == 2 and etag_after != staging_etag
    assert _served(_agent_json(live_server.url, token)[0])["refund.over_limit"] == 2
    assert not ProcedureRelease.objects.exists()
    v3.refresh_from_db()
    assert v3.status == Status.ERASED
