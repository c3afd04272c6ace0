"""An admin removes a tool in a real browser: the page shows what is refused at once, and the
banner counts it on every page until the tool is back."""

import pytest

from library.serving import active_set as serving
from tests.conftest import make_active
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def test_admin_removes_a_tool_and_sees_the_refusal(live_server, page, screenshot, candidate, admin_user):
    make_active(candidate, admin_user)
    serving.clear_cache()
    sign_in(page, live_server.url, "admin", "pw-admin")
    page.goto(f"{live_server.url}/agents/support_agent/tools/")
    assert page.locator(".banner-warning").count() == 0
    screenshot(page, "tools-before")

    page.fill("#id_tools", "lookupOrder\ncheckReturnWindow\nreplyTemplates")
    page.fill("#id_reason", "createApproval moved to the billing agent")
    page.click("form.tool-form button.primary")
    assert "1 ACTIVE procedure is refused at load" in page.locator(".messages").inner_text()
    assert "refund.over_limit v1" in page.locator("#refused").inner_text()
    assert "1 ACTIVE procedure is refused at load" in page.locator(".banner-warning").inner_text()
    screenshot(page, "tools-after-removal")

    page.click(".banner-warning a")
    assert "/refused-at-load/" in page.url and "createApproval" in page.locator("table").inner_text()
    screenshot(page, "refused-overview")

    page.goto(f"{live_server.url}/agents/support_agent/tools/")
    page.fill("#id_tools", "lookupOrder\ncheckReturnWindow\ncreateApproval\nreplyTemplates")
    page.click("form.tool-form button.primary")
    assert page.locator(".banner-warning").count() == 0
    assert "none refused" in page.locator("main").inner_text()
