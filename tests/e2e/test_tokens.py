"""API tokens in a real browser (Debian's Chromium): an agent admin creates a read token on the
tokens page (shown once), an agent uses it against the agent API, the list shows when it was last
used, the admin revokes it and the API refuses it from then on."""

from __future__ import annotations

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from library.demo import DEMO_USERS, seed_demo
from library.models import ApiToken, AuditEvent
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def _active_set(page, base: str, token: str):
    """The agent's call, made from the browser's request context (no cookies of the admin's session
    count for the agent API: only the bearer token)."""
    return page.context.request.get(
        f"{base}/api/v1/agents/support_agent/procedures", headers={"Authorization": f"Bearer {token}"}
    )


def test_token_created_used_and_revoked(live_server, page, screenshot):
    seed_demo()
    base = live_server.url
    sign_in(page, base, "admin", DEMO_USERS["admin"][0])
    page.click("nav.mainnav >> text=Operations")
    page.click("text=support_agent")
    page.click("nav.tabs >> text=API tokens")
    expect(page.locator("h1")).to_have_text("API tokens of support_agent")

    # --- created, and shown once ----------------------------------------------------------------
    page.fill("#id_name", "prod reader")
    page.select_option("#id_scope", "read")
    page.fill("#id_expires_in_days", "30")
    page.click("button:has-text('Create token')")
    expect(page.locator("#new-token")).to_contain_text("Copy it now")
    raw = page.locator("[data-testid=raw-token]").inner_text().strip()
    assert raw.startswith("pm_")
    row = page.locator("#tokens tbody tr").filter(has_text="prod reader")
    expect(row).to_contain_text(raw[:10] + "…")
    expect(row).to_contain_text("live")
    expect(row.locator("td").nth(6)).to_have_text("never")  # last used
    screenshot(page, "01-created-shown-once")
    tokens_url = f"{base}/agents/support_agent/tokens/"
    page.goto(tokens_url)  # opened again, the page shows the token's prefix, never the token
    expect(page.locator("#new-token")).to_have_count(0)
    assert raw not in page.content() and raw[:10] in page.content()
    assert ApiToken.objects.filter(name="prod reader").count() == 1

    # --- used by an agent: the list says when ---------------------------------------------------
    response = _active_set(page, base, raw)
    assert response.status == 200, response.text()
    assert "procedures" in response.json()
    page.goto(tokens_url)
    row = page.locator("#tokens tbody tr").filter(has_text="prod reader")
    expect(row.locator("td").nth(6)).not_to_have_text("never")
    token = ApiToken.objects.get(name="prod reader")
    assert token.last_used_at is not None
    expect(row.locator("td").nth(6)).to_have_text(timezone.localtime(token.last_used_at).strftime("%Y-%m-%d %H:%M"))
    screenshot(page, "02-last-used")

    # --- revoked: the API refuses it at once --------------------------------------------------------
    page.once("dialog", lambda dialog: dialog.accept())  # the revoke form asks to confirm
    row.locator("button:has-text('Revoke')").click()
    page.wait_for_load_state("networkidle")
    expect(page.locator("#flash")).to_contain_text("Revoked")
    row = page.locator("#tokens tbody tr").filter(has_text="prod reader")
    expect(row.locator("td").nth(3)).to_have_text("revoked")
    expect(row.locator("button:has-text('Revoke')")).to_have_count(0)
    screenshot(page, "03-revoked")
    refused = _active_set(page, base, raw)
    assert refused.status in (401, 403), refused.status
    assert refused.json()["error"]["code"]
    assert AuditEvent.objects.filter(
        action=AuditEvent.Action.TOKEN_CREATE, after__token=token.prefix, actor__username="admin"
    ).exists()
    assert AuditEvent.objects.filter(
        action=AuditEvent.Action.TOKEN_REVOKE, before__token=token.prefix, actor__username="admin"
    ).exists()


def test_a_revoke_the_admin_cancels_keeps_the_token(live_server, page):
    seed_demo()
    base = live_server.url
    sign_in(page, base, "admin", DEMO_USERS["admin"][0])
    page.goto(f"{base}/agents/support_agent/tokens/")
    page.fill("#id_name", "kept")
    page.select_option("#id_scope", "read")
    page.click("button:has-text('Create token')")
    raw = page.locator("[data-testid=raw-token]").inner_text().strip()
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.locator("#tokens tbody tr").filter(has_text="kept").locator("button:has-text('Revoke')").click()
    expect(page.locator("#tokens tbody tr").filter(has_text="kept").locator("td").nth(3)).to_have_text("live")
    assert ApiToken.objects.get(name="kept").revoked_at is None
    assert _active_set(page, base, raw).status == 200
