"""Staging first, then a staged rollout, in a real browser (Debian's Chromium): the admin gives the
demo agent a staging environment on its settings page; the approver approves the mined candidate
refund.over_limit v2 on its eval against staging's set, and it goes to staging while production
keeps v1; on the promote page the admin runs the promotion eval (production's set with v2 in place
of v1), reads its verdict, and promotes v2 to 20 % of production; agents fetch with their session ids and report sessions with the arm they got; the
rollout page compares the two arms; the admin completes the rollout and production serves v2 to
every session."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request

import pytest

from library.api.tokens import token_create
from library.demo import DEMO_USERS, seed_demo
from library.models import Agent, EvalRun, ProcedureVersion, Rollout, Status
from tests.conftest import make_passing_eval
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def _get(base_url: str, token: str, **params) -> tuple[dict, str]:
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    request = urllib.request.Request(
        f"{base_url}/api/v1/agents/support_agent/procedures{query}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read()), response.headers["ETag"]


def _report(base_url: str, token: str, sessions: list[dict]) -> None:
    request = urllib.request.Request(
        f"{base_url}/api/v1/sessions",
        data=json.dumps(sessions).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200, response.read()


def _served(data: dict) -> dict[str, int]:
    return {p["id"]: p["version"] for p in data["procedures"]}


@pytest.fixture
def demo_tokens():
    seed_demo()
    agent = Agent.objects.get(name="support_agent")
    v2 = ProcedureVersion.objects.get(procedure__key="refund.over_limit", number=2, status=Status.CANDIDATE)
    read = token_create(agent=agent, scope="read", name="e2e read")[1]
    ingest = token_create(agent=agent, scope="ingest", name="e2e ingest")[1]
    return v2, read, ingest


def test_staging_then_a_rollout_to_a_fifth_then_complete(live_server, page, screenshot, demo_tokens):
    v2, read, ingest = demo_tokens
    base = live_server.url

    # --- the admin gives the agent a staging environment ----------------------------------------
    sign_in(page, base, "admin", DEMO_USERS["admin"][0])
    page.goto(f"{base}/agents/support_agent/settings/")
    page.fill("#id_environments", "staging")
    page.fill("#id_reason", "a staging deployment of the support agent")
    page.click("#agent-settings button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert page.locator("#id_environments").input_value() == "staging"
    page.click("text=Sign out")
    run = make_passing_eval(v2)  # v2's approval eval, against staging's set (where approving releases it)
    assert run.environment == "staging"

    # --- the approver approves v2: it goes to staging, production keeps v1 ----------------------
    sign_in(page, base, "approver", DEMO_USERS["approver"][0])
    page.goto(f"{base}/versions/{v2.pk}/")
    page.click("#approve-button")
    page.wait_for_selector("#approve-confirm")
    page.check("#approve-confirm-check")
    page.fill("#approve-comment", "Eval passed; staging first.")
    page.click("#approve-submit")
    page.wait_for_selector("#approved-notice")
    notice = page.locator("#approved-notice").inner_text()
    assert (
        "approved, not yet in production" in notice
        and "Served in staging" in notice
        and "Production serves v1" in notice
    )
    screenshot(page, "01-approved-in-staging")
    production, production_etag = _get(base, read)
    staging, staging_etag = _get(base, read, environment="staging")
    assert _served(production)["refund.over_limit"] == 1 and _served(staging)["refund.over_limit"] == 2
    assert staging["environment"] == "staging" and staging_etag != production_etag
    page.click("text=Sign out")

    # --- the admin promotes v2 to 20 % of production ---------------------------------------------
    sign_in(page, base, "admin", DEMO_USERS["admin"][0])
    page.goto(f"{base}/ops/agents/support_agent/procedures/refund.over_limit/")
    assert "released here" in page.locator("#env-staging").inner_text()
    screenshot(page, "02-environments")
    page.click("#environments >> text=Promote v2…")
    # production needs its own eval: the promote page runs it and shows the verdict
    assert (
        "No passing eval of this exact content against production's set yet"
        in page.locator("#promotion-blockers").inner_text()
    )
    page.click("#start-promotion-eval")
    page.wait_for_load_state("networkidle")
    page.locator("#promotion-eval-verdict").wait_for()
    assert page.locator("#promotion-eval-verdict").inner_text().startswith("✓ PASS")
    assert "refund.over_limit v2 was injected in 8 of 8" in page.locator("#selection-reach").inner_text()
    assert page.locator("#promotion-ready").is_visible()
    promotion = EvalRun.objects.get(version=v2, kind=EvalRun.Kind.PROMOTION)
    assert (promotion.environment, promotion.verdict) == ("production", EvalRun.Verdict.PASS)
    screenshot(page, "03-promotion-eval")
    page.select_option("#environment", "production")
    page.fill("#share", "20")
    page.fill("#reason", "A week in staging without escalations; a fifth of production first.")
    screenshot(page, "03b-confirm-promote")
    page.click("button:has-text('Promote v2')")
    page.wait_for_selector("#arms")
    assert "to 20 %" in page.locator("h1").inner_text()
    rollout = Rollout.objects.get()
    assert (rollout.state, rollout.share, rollout.started_by.username) == ("running", 20, "admin")

    # --- agents fetch with their session ids and report the arm they got ------------------------
    reports, arms = [], {"rollout": 0, "control": 0}
    for n in range(80):
        session = f"e2e-{n}"
        served, _ = _get(base, read, session=session)
        (record,) = [p for p in served["procedures"] if p["id"] == "refund.over_limit"]
        assert served["arms"]["refund.over_limit"] == record["arm"] and record["version"] == (
            2 if record["arm"] == "rollout" else 1
        )
        arms[record["arm"]] += 1
        reports.append(
            {
                "session_id": session,
                "intent": "refund_over_limit",
                "task": "refund above the limit",
                "outcome": {"resolved": n % 5 != 0 if record["arm"] == "rollout" else n % 2 == 0},
                "tool_calls": [{"name": "lookupOrder"}, {"name": "checkReturnWindow"}, {"name": "createApproval"}],
                "injected": [{"id": record["id"], "version": record["version"], "arm": record["arm"]}],
            }
        )
    assert arms["rollout"] > 0 and arms["control"] > arms["rollout"]
    _report(base, ingest, reports)

    # --- the rollout page compares the two arms ---------------------------------------------------
    page.reload()
    rollout_row = page.locator("#arm-rollout").inner_text()
    control_row = page.locator("#arm-control").inner_text()
    assert f"\t{arms['rollout']}\t" in rollout_row and "v2" in rollout_row
    assert f"\t{arms['control']}\t" in control_row and "v1" in control_row
    assert "Fisher's exact test between the arms: p = " in page.locator("#arms").inner_text()
    screenshot(page, "04-rollout-arms")

    # --- the admin completes the rollout ------------------------------------------------------------
    page.fill("#complete-reason", "The rollout arm resolves more; no new escalations.")
    page.click("button:has-text('Complete: v2 for every session')")
    page.wait_for_load_state("networkidle")
    assert "Rollout completed" in page.locator(".messages").inner_text()
    assert "Completed" in page.locator("h1").inner_text()
    screenshot(page, "05-rollout-completed")
    v2.refresh_from_db()
    assert v2.status == Status.ACTIVE
    after, _ = _get(base, read, session="e2e-1")
    assert _served(after)["refund.over_limit"] == 2 and "arms" not in after
    assert _served(_get(base, read, environment="staging")[0])["refund.over_limit"] == 2
