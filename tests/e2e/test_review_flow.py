"""The review flow in a real browser (Playwright driving Debian's Chromium), on the demo data:

reviewer: sign in → queue (keys j/k/?, Enter) → the refund candidate → diff and evidence → an eval
run and its result arriving by htmx polling → approve is disabled with the reasons, and a forged
POST is refused with 403; approver: sign in → approve with the explicit confirmation → the page
shows v2 ACTIVE and v1 RETIRED → the procedure page → the agent JSON serves v2.

Screenshots of every page land in test-artifacts/screenshots/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from library.demo import DEMO_USERS, seed_demo
from library.models import EvalRun, ProcedureVersion, Source, Status
from tests.e2e.conftest import sign_in

# The agent JSON is read through the read-only alias (library/serving/active_set.py).
pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def refund_candidate() -> ProcedureVersion:
    """The mined refund.over_limit candidate of the demo data; where the seed has not mined it, the
    test proposes the same record with the numbers of docs/design.md."""
    from library import services
    from library.models import Agent

    existing = ProcedureVersion.objects.filter(procedure__key="refund.over_limit", status=Status.CANDIDATE).first()
    if existing is not None:
        return existing
    agent = Agent.objects.get(name="support_agent")
    return services.procedure_propose(
        agent=agent,
        intent=agent.intents.get(name="refund_over_limit"),
        key="refund.over_limit",
        applies_when="The customer asks for money back for an expensive order of hundreds of EUR, more than the agent may refund on its own.",
        steps=[
            "Look up the order with lookupOrder({{order_id}}).",
            "Check the return window with checkReturnWindow({{order_id}}).",
            "Create an approval request with createApproval({{order_id}}).",
            "Tell the customer the expected wait with replyTemplates('approval_pending').",
        ],
        required_tools=["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"],
        forbidden_actions=[
            "Do not refund an order outside its return window.",
            "Do not promise a refund date before approval.",
        ],
        source=Source.MINED,
        actor_label="miner",
        skeleton=["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"],
        evidence={"support": 118, "resolved": 140, "failed": 60, "failedWithSkeleton": 9},
    )


@pytest.fixture
def eval_worker(request):
    """On PostgreSQL a real Celery worker process on Redis runs the eval (the page then watches it
    arrive by polling); SQLite's in-memory test database cannot be shared with another process,
    so there the tasks run eagerly inside the request."""
    from django.db import connection

    if connection.vendor == "postgresql":
        return request.getfixturevalue("celery_worker_process")
    return None


def test_review_and_approve_in_the_browser(live_server, page, screenshot, eval_worker):
    from library import embeddings

    seed_demo()
    candidate = refund_candidate()
    embeddings.embed_one("warm the model before the first page needs it")
    base = live_server.url

    # --- the reviewer -------------------------------------------------------------------------
    sign_in(page, base, "reviewer", DEMO_USERS["reviewer"][0])
    page.goto(f"{base}/queue/")
    assert page.locator(".role").inner_text().lower() == "reviewer"
    assert page.locator("h1").inner_text() == "Candidates waiting for review"
    assert page.locator("tbody.quarantined [data-queue-row]").count() >= 1  # quarantined first
    screenshot(page, "01-queue")

    # keyboard: ? shows the keys; j/k move; Enter opens
    page.keyboard.press("?")
    assert page.locator("#keys-help").is_visible()
    screenshot(page, "02-keys-help")
    page.keyboard.press("Escape")
    assert not page.locator("#keys-help").is_visible()
    rows = page.locator("[data-queue-row]")
    target = next(i for i in range(rows.count()) if "refund.over_limit" in rows.nth(i).inner_text())
    for _ in range(target + 1):
        page.keyboard.press("j")
    page.keyboard.press("k")
    page.keyboard.press("j")
    current = page.locator("[data-queue-row].is-current")
    assert "refund.over_limit" in current.inner_text()
    page.keyboard.press("x")  # selects it for bulk reject
    assert current.locator("input[name=versions]").is_checked()
    page.keyboard.press("x")
    assert not current.locator("input[name=versions]").is_checked()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/versions/{candidate.pk}/$"))

    # the candidate page: diff against ACTIVE v1, evidence
    assert "Comparing v2 with v1" in page.locator(".compare-line").inner_text()
    steps = page.locator('[data-field="steps"]')
    assert steps.locator("tr.row-added").count() + steps.locator("tr.row-changed").count() >= 1
    assert "createApproval" in steps.locator("ins").all_inner_texts()[0] + " ".join(
        steps.locator("td.new").all_inner_texts()
    )
    assert "118 of 140" in page.locator("#evidence").inner_text()
    assert "9 of 60" in page.locator("#evidence").inner_text()
    screenshot(page, "03-candidate")

    # an eval run, its progress polled by htmx, its verdict arriving
    page.evaluate("window.__samePage = true")  # gone if anything reloaded the page
    page.click("#start-eval")
    page.wait_for_selector("#eval progress, #eval .verdict")
    if page.locator("#eval progress").count():
        screenshot(page, "04-eval-running")
    # the worker loads the default backend's two models (MiniLM and the multilingual USE) first
    page.wait_for_selector("#eval .verdict", timeout=600_000)
    assert "PASS" in page.locator("#eval .verdict").inner_text()
    assert page.evaluate("window.__samePage") is True  # arrived by htmx, not by a reload
    run = EvalRun.objects.filter(version=candidate).latest("created_at")
    assert (run.state, run.verdict, run.cases_done) == (EvalRun.State.DONE, EvalRun.Verdict.PASS, run.cases_total)
    assert page.locator("#eval .eval-table tr.target").count() == 1
    screenshot(page, "05-eval-done")

    # the reviewer cannot approve: disabled, with the reason next to it
    assert page.locator("#approve-button").is_disabled()
    assert "You do not hold the approve permission" in page.locator("#approve-blockers").inner_text()
    # a forged POST is refused by the server
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    forged = page.request.post(
        f"{base}/versions/{candidate.pk}/approve/",
        form={"confirm": "on"},
        headers={"X-CSRFToken": token, "Referer": page.url},
    )
    assert forged.status == 403
    candidate.refresh_from_db()
    assert candidate.status == Status.CANDIDATE
    screenshot(page, "06-approve-disabled")

    # --- the approver ---------------------------------------------------------------------------
    page.click("text=Sign out")
    page.wait_for_url(re.compile(r"/accounts/login/"))
    sign_in(page, base, "approver", DEMO_USERS["approver"][0])
    assert page.locator(".role").inner_text().lower() == "approver"
    page.goto(f"{base}/queue/?mine=1")
    waiting = page.locator("[data-queue-row]").all_inner_texts()
    assert any("refund.over_limit" in row for row in waiting)
    assert not any("address.change" in row for row in waiting)  # not theirs to approve
    screenshot(page, "07-queue-for-my-approval")
    page.click(f"a.open[href='/versions/{candidate.pk}/']")
    page.click("#approve-button")
    page.wait_for_selector("#approve-confirm")
    screenshot(page, "08-approve-confirm")
    # the confirmation is required: the browser will not submit without the tick
    page.click("#approve-submit")
    candidate.refresh_from_db()
    assert candidate.status == Status.CANDIDATE
    page.check("#approve-confirm-check")
    page.fill("#approve-comment", "Eval passed; approval before the reply is what the failures lacked.")
    page.click("#approve-submit")
    page.wait_for_selector(".notice-ok")
    notice = page.locator(".notice-ok").inner_text()
    assert "v2 is the ACTIVE version: approved by approver" in notice
    assert "v1 was RETIRED by this approval" in notice
    screenshot(page, "09-approved")
    candidate.refresh_from_db()
    assert (candidate.status, candidate.approved_by.username) == (Status.ACTIVE, "approver")

    # the procedure page: v2 ACTIVE, v1 RETIRED, the audit log
    page.goto(f"{base}/procedures/{candidate.procedure_id}/")
    assert "ACTIVE v2" in page.locator("h1").inner_text()
    statuses = page.locator("table.versions tbody tr").all_inner_texts()
    assert "ACTIVE" in statuses[0] and "RETIRED" in statuses[1]
    assert "Approved" in page.locator("table.audit").inner_text()
    screenshot(page, "10-procedure")

    # the agent JSON serves the new version
    from library.api.tokens import token_create

    _, raw = token_create(agent=candidate.procedure.agent, scope="read", name="e2e")
    page.set_extra_http_headers({"Authorization": f"Bearer {raw}"})
    response = page.goto(f"{base}/api/v1/agents/support_agent/procedures")
    assert response.status == 200
    served = {p["id"]: p for p in response.json()["procedures"]}
    assert (served["refund.over_limit"]["version"], served["refund.over_limit"]["status"]) == (2, "ACTIVE")
    assert served["refund.over_limit"]["approvedBy"] == "approver"
    assert "createApproval" in served["refund.over_limit"]["requiredTools"]
    screenshot(page, "11-agent-json")


def test_write_a_procedure_by_hand_then_edit_it(live_server, page, screenshot):
    """The day-one path: a reviewer writes down the team's procedure; it lands in the queue; an edit
    makes a new version and says the old eval no longer counts."""
    seed_demo()
    base = live_server.url
    sign_in(page, base, "reviewer", DEMO_USERS["reviewer"][0])
    page.click("text=Write a procedure >> nth=0")
    page.select_option("#id_agent", "support_agent")  # htmx swaps in the form for this agent
    page.wait_for_selector("#id_key")
    assert page.locator("input[name=required_tools]").count() == 4
    page.select_option("#id_intent", label="refund_within_limit")
    page.fill("#id_key", "refund.damaged_item")
    page.fill("#id_applies_when", "The customer reports that an item arrived damaged.")
    page.fill(
        "#id_steps",
        "Look up the order with lookupOrder({{order_id}}).\nAsk for a photo of the damage <script>alert(1)</script>.\nReply with replyTemplates('damage_received').",
    )
    page.check("input[value=lookupOrder]")
    page.check("input[value=replyTemplates]")
    page.fill("#id_forbidden_actions", "Do not promise a replacement before the photo is checked.")
    screenshot(page, "01-write-by-hand")
    page.click("button:has-text('Propose')")
    page.wait_for_selector(".version-head")
    assert "refund.damaged_item" in page.locator("h1").inner_text()
    assert "<script>alert(1)</script>" in page.locator('[data-field="steps"]').inner_text()  # shown as text
    assert "waits in the queue" in page.locator("#flash").inner_text()
    screenshot(page, "02-proposed")

    page.click("text=Edit (makes v2)")
    assert "The old eval no longer counts" in page.locator(".notice-warn").inner_text()
    page.fill(
        "#id_steps",
        "Look up the order with lookupOrder({{order_id}}).\nAsk for a photo of the damage.\nReply with replyTemplates('damage_received').",
    )
    page.fill("#id_reason", "removed markup")
    screenshot(page, "03-edit")
    page.click("button:has-text('Save as a new version')")
    page.wait_for_selector(".version-head")
    assert "v2" in page.locator("h1").inner_text()
    assert "Comparing v2 with v1" in page.locator(".compare-line").inner_text()
    screenshot(page, "04-edited")

    page.goto(f"{base}/queue/")
    keys = page.locator("[data-queue-row] a.open").all_inner_texts()
    assert any("refund.damaged_item v2" in k for k in keys) and not any("refund.damaged_item v1" in k for k in keys)


def test_queue_filters_and_pages_by_htmx(live_server, page, screenshot):
    """Filters and pages swap the queue body in place and push the URL, so back/forward and a
    shared link show the same queue."""
    from library.models import Agent
    from tests.reviews.conftest import bulk_candidates

    seed_demo()
    agent = Agent.objects.get(name="support_agent")
    bulk_candidates(agent, agent.intents.get(name="order_status"), 70, quarantined_every=35)
    base = live_server.url
    sign_in(page, base, "reviewer", DEMO_USERS["reviewer"][0])
    page.goto(f"{base}/queue/")
    assert "page 1 of 2" in page.locator(".count-line").inner_text()
    screenshot(page, "01-queue-many")
    page.select_option("select[name=intent]", "order_status")
    page.wait_for_url(re.compile(r"intent=order_status"))
    expect(page.locator(".count-line")).to_have_text(re.compile(r"^70 candidates"))
    assert page.locator("tbody.quarantined [data-queue-row]").count() == 2
    page.select_option("select[name=sort]", "evidence")
    page.wait_for_url(re.compile(r"sort=evidence"))
    page.click("a[rel=next]")
    page.wait_for_url(re.compile(r"page=2"))
    expect(page.locator(".count-line")).to_contain_text("page 2 of 2")
    assert "intent=order_status" in page.url and "sort=evidence" in page.url
    assert page.locator("select[name=intent]").input_value() == "order_status"
    screenshot(page, "02-queue-filtered-page-2")
    page.go_back()
    expect(page.locator(".count-line")).to_contain_text("page 1 of 2")
