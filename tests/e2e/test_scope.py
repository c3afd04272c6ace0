"""Scope in a real browser (Debian's Chromium): an admin creates a namespace and grants a right on
it, sets a procedure's roles, priority and confidence on its page, and the agent JSON follows (new
fields, a new ETag, the role's set without it)."""

from __future__ import annotations

import json
import urllib.request

import pytest
from playwright.sync_api import expect

from library.api.tokens import token_create
from library.demo import DEMO_USERS, seed_demo
from library.models import Agent, ApiToken, Procedure
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def _agent_json(base_url: str, token: str, query: str = "") -> tuple[dict, str]:
    request = urllib.request.Request(
        f"{base_url}/api/v1/agents/support_agent/procedures{query}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read()), response.headers["ETag"]


def test_admin_sets_scope_and_namespace_rights_and_the_agent_json_follows(live_server, page, screenshot):
    seed_demo()
    agent = Agent.objects.get(name="support_agent")
    token = token_create(agent=agent, scope=ApiToken.Scope.READ, name="e2e", user=None)[1]
    before, etag_before = _agent_json(live_server.url, token)
    served = {p["id"]: p for p in before["procedures"]}
    assert served["refund.over_limit"]["priority"] == 0 and before["namespace"] == "default"

    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    # the namespaces page: create one, grant review on it
    page.goto(f"{live_server.url}/ops/namespaces/")
    page.fill("#namespace-create-form input[name=name]", "team-billing")
    page.fill("#namespace-create-form input[name=description]", "The billing team")
    page.click("#namespace-create-form button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Namespace team-billing created.")
    page.select_option("#namespace-grant-form select[name=namespace]", "team-billing")
    page.select_option("#namespace-grant-form select[name=right]", "review")
    page.fill("#namespace-grant-form input[name=grantee]", "reviewer")
    page.click("#namespace-grant-form button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("reviewer now holds review on every procedure in team-billing.")
    expect(page.locator("#namespaces tr[data-namespace='team-billing']")).to_contain_text("review: reviewer")
    screenshot(page, "namespaces")

    # the procedure page: roles, priority and confidence
    procedure = Procedure.objects.get(agent=agent, key="refund.over_limit")
    page.goto(f"{live_server.url}/procedures/{procedure.pk}/")
    page.click("#scope summary")
    page.fill("#scope-form input[name=roles]", "billing, supervisor")
    page.fill("#scope-form input[name=priority]", "5")
    page.select_option("#scope-form select[name=confidence]", "high")
    page.fill("#scope-form input[name=reason]", "only billing handles refunds above the limit")
    page.click("#scope-form button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("roles billing, supervisor, priority 5, confidence high")
    expect(page.locator("#scope dl")).to_contain_text("billing, supervisor")
    screenshot(page, "procedure-scope")

    after, etag_after = _agent_json(live_server.url, token)
    assert etag_after != etag_before
    record = {p["id"]: p for p in after["procedures"]}["refund.over_limit"]
    assert (record["roles"], record["priority"], record["confidence"]) == (["billing", "supervisor"], 5, "high")
    shipping, _ = _agent_json(live_server.url, token, "?role=shipping")
    assert "refund.over_limit" not in {p["id"] for p in shipping["procedures"]} and shipping["role"] == "shipping"
