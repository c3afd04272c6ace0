"""Operating the library in a real browser (Debian's Chromium): an admin retires and rolls back and
the agent JSON follows; an admin grants an approver right, reads the metrics (with the model
change marked) and exports the audit log."""

from __future__ import annotations

import json
import urllib.request
from datetime import datetime, time, timedelta

import pytest
from django.utils import timezone

from library import services
from library.demo import DEMO_USERS, seed_demo
from library.models import Agent, AgentSession, ProcedureVersion, Status
from reviews.metrics.rollup import metrics_refresh
from tests.conftest import make_passing_eval
from tests.e2e.conftest import sign_in

# The agent API reads through the "readonly" alias (a second connection to the same database).
pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def _agent_json(base_url: str, token: str) -> tuple[dict, str]:
    request = urllib.request.Request(
        f"{base_url}/api/v1/agents/support_agent/procedures", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read()), response.headers["ETag"]


def _served(data: dict) -> dict[str, int]:
    return {p["id"]: p["version"] for p in data["procedures"]}


@pytest.fixture
def demo_with_two_versions():
    """The demo data with its mined candidate refund.over_limit v2 approved (by the approver, after
    a passing eval), so v1 is RETIRED and can be rolled back to. Returns a read token."""
    from django.contrib.auth import get_user_model

    from library.api.tokens import token_create

    seed_demo()
    v2 = ProcedureVersion.objects.get(procedure__key="refund.over_limit", number=2, status=Status.CANDIDATE)
    make_passing_eval(v2)
    services.version_approve(
        version=v2, user=get_user_model().objects.get(username="approver"), comment="mined and replayed"
    )
    _token, raw = token_create(agent=Agent.objects.get(name="support_agent"), scope="read", name="e2e")
    return raw


def test_admin_retires_and_rolls_back_and_the_agent_json_follows(live_server, page, screenshot, demo_with_two_versions):
    token = demo_with_two_versions
    before, etag_before = _agent_json(live_server.url, token)
    assert _served(before)["refund.over_limit"] == 2

    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    page.click("nav.mainnav >> text=Operations")
    page.click("text=support_agent")
    assert page.locator("#served tr[data-key='refund.over_limit']").inner_text().count("v2") == 1
    screenshot(page, "active-set")
    page.click("#served >> text=refund.over_limit")
    screenshot(page, "versions")

    # retire v2: the confirmation asks for a reason
    page.click("#v2 >> text=Retire…")
    assert "Retire refund.over_limit v2?" in page.locator("h1").inner_text()
    page.click("button:has-text('Retire v2')")
    assert page.locator("#reason:invalid").count() == 1  # required: the browser refuses an empty reason
    page.fill("#reason", "Agents asked for approval on refunds that did not need one")
    screenshot(page, "confirm-retire")
    page.click("button:has-text('Retire v2')")
    page.wait_for_load_state("networkidle")
    assert "Retired refund.over_limit v2" in page.locator(".messages").inner_text()
    assert page.locator("#v2 .status").inner_text() == "Retired"

    retired, etag_retired = _agent_json(live_server.url, token)
    assert "refund.over_limit" not in _served(retired)
    assert etag_retired != etag_before

    # roll back to v1: the confirmation shows what changes
    page.click("#v1 >> text=Roll back to v1…")
    assert "Roll back refund.over_limit to v1?" in page.locator("h1").inner_text()
    assert page.locator(".okbox").count() == 1
    page.fill("#reason", "v1 worked well enough; v2 needs another look")
    screenshot(page, "confirm-rollback")
    page.click("button:has-text('Roll back to v1')")
    page.wait_for_load_state("networkidle")
    assert page.locator("#v1 .status").inner_text() == "Active"
    screenshot(page, "after-rollback")

    rolled, etag_rolled = _agent_json(live_server.url, token)
    assert _served(rolled)["refund.over_limit"] == 1
    assert etag_rolled not in {etag_before, etag_retired}
    assert ProcedureVersion.objects.get(procedure__key="refund.over_limit", status=Status.ACTIVE).number == 1

    # both changes are in the audit log with their reasons
    page.goto(f"{live_server.url}/ops/audit/?procedure=refund.over_limit")
    log = page.locator("#audit-results").inner_text()
    assert "Rolled back" in log and "v1 worked well enough" in log
    assert "Retired" in log and "did not need one" in log
    screenshot(page, "audit")


def _seed_sessions(agent: Agent) -> None:
    """Three weeks of sessions: the agent switched from demo-model-1 to demo-model-2 nine days ago,
    after which refund.over_limit v1 resolves far less often."""
    intents = {i.name: i for i in agent.intents.all()}
    versions = {
        v.procedure.key: v
        for v in ProcedureVersion.objects.filter(procedure__agent=agent, status=Status.ACTIVE).select_related(
            "procedure"
        )
    }
    rows = []
    today = timezone.localdate()
    for days_ago in range(20, -1, -1):
        day = today - timedelta(days=days_ago)
        model = "demo-model-2" if days_ago <= 8 else "demo-model-1"
        for i in range(40):
            key = ["refund.over_limit", "order.status", "refund.within_limit"][i % 3]
            version = versions[key]
            bare = i % 5 == 0
            good = (i % 10) < (4 if (model == "demo-model-2" and key == "refund.over_limit") else 8)
            rows.append(
                AgentSession(
                    agent=agent,
                    session_id=f"e2e-{days_ago}-{i}",
                    intent=intents[version.procedure.intent.name],
                    resolved=good,
                    escalated=False,
                    model=model,
                    injected=[] if bare else [{"id": key, "version": version.number}],
                    instruction_chars=None if bare else 900 + 37 * (i % 11),
                    ended_at=timezone.make_aware(datetime.combine(day, time(9 + i % 8))),
                )
            )
    AgentSession.objects.bulk_create(rows)
    metrics_refresh(agent=agent)


def test_admin_grants_a_right_reads_metrics_and_exports_the_audit_log(live_server, page, screenshot):
    seed_demo()
    agent = Agent.objects.get(name="support_agent")
    _seed_sessions(agent)
    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])

    page.goto(f"{live_server.url}/ops/agents/support_agent/approvers/")
    page.select_option("#grant-form select[name=scope]", "order.status")
    page.fill("#grant-form input[name=grantee]", "reviewer")
    page.fill("#grant-form input[name=reason]", "covers order questions now")
    page.click("button:has-text('Grant')")
    page.wait_for_load_state("networkidle")
    assert "Granted: reviewer may approve order.status" in page.locator(".messages").inner_text()
    assert "reviewer" in page.locator("#named-approvers tr[data-key='order.status']").inner_text()
    screenshot(page, "approvers")

    page.click("nav.tabs >> text=Metrics")
    row = page.locator("#version-figures tr[data-key='refund.over_limit']")
    assert row.count() == 1 and "%" in row.inner_text()
    assert page.locator("svg .model-change").count() == 1
    assert page.locator("#quality-figures").count() == 1 and page.locator("svg.interval-chart").count() == 2
    screenshot(page, "metrics")
    row.locator("a").first.click()
    page.wait_for_load_state("networkidle")
    assert page.locator("svg.chart").count() == 5  # four charts and the quality of use per day
    assert "Adherence" in page.locator("#version-quality-figures").inner_text()
    assert "demo-model-1 → demo-model-2" in page.locator("main").inner_text()
    screenshot(page, "version-metrics")

    page.goto(f"{live_server.url}/ops/audit/")
    page.select_option("select[name=action]", "grant")
    page.wait_for_url("**/ops/audit/?*action=grant*")  # htmx swapped the results and pushed the URL
    page.wait_for_load_state("networkidle")
    assert page.locator("#audit-results tbody tr").count() == 1
    with page.expect_download() as download:
        page.click("text=Export these rows as CSV")
    content = open(download.value.path(), encoding="utf-8").read()
    assert content.splitlines()[0] == "at,action,who,agent,procedure,version,reason,before,after"
    assert "covers order questions now" in content and content.count("\n") == 2
    screenshot(page, "audit-filtered")

    page.goto(f"{live_server.url}/notifications/preferences/")
    page.check("#metric_warning-email")
    page.click("button:has-text('Save')")
    page.wait_for_load_state("networkidle")
    assert page.locator("#metric_warning-email").is_checked()
    screenshot(page, "preferences")
