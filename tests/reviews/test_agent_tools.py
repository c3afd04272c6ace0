"""The tool-list page: who may see and change it, what a change does (history, audit, refusals
shown at once, one alert), and the refused-at-load overview the banner links to."""

from __future__ import annotations

import pytest
from django.core import mail
from django.urls import reverse
from guardian.shortcuts import assign_perm

from library.models import AuditEvent, LoadRefusal
from tests.conftest import _user, make_active

pytestmark = pytest.mark.usefixtures("readonly_shares_default")


def page_url(name: str = "support_agent") -> str:
    return reverse("reviews:agent_tools", kwargs={"agent": name})


def test_anonymous_is_sent_to_login(client, agent):
    response = client.get(page_url())
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert client.post(page_url(), {"tools": "x"}).status_code == 302
    assert client.get(reverse("reviews:refused_at_load")).status_code == 302


def test_who_may_change_the_tool_list(client, agent, reviewer, admin_user):
    client.force_login(reviewer)
    assert client.get(page_url()).status_code == 403
    assert client.post(page_url(), {"tools": "lookupOrder"}).status_code == 403
    agent.refresh_from_db()
    assert "createApproval" in agent.tools
    assert client.get(page_url("no_such_agent")).status_code == 404

    manager = _user("agent_admin")
    assign_perm("library.manage_agent", manager, agent)
    client.force_login(manager)
    assert client.get(page_url()).status_code == 200
    client.force_login(admin_user)
    assert client.get(page_url()).status_code == 200


def test_saving_a_tool_list_refuses_at_once_and_alerts_once(
    client, agent, candidate, admin_user, django_capture_on_commit_callbacks
):
    make_active(candidate, admin_user)
    client.force_login(admin_user)
    page = client.get(page_url())
    assert "createApproval" in page.content.decode() and "none refused" in page.content.decode()
    mail.outbox.clear()

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            page_url(),
            {"tools": "lookupOrder\ncheckReturnWindow, replyTemplates\n\n", "reason": "approvals moved"},
            follow=True,
        )
    assert response.status_code == 200
    html = response.content.decode()
    assert "1 ACTIVE procedure is refused at load" in html
    assert 'id="refused"' in html and "refund.over_limit v1" in html
    agent.refresh_from_db()
    assert agent.tools == ["lookupOrder", "checkReturnWindow", "replyTemplates"]
    change = agent.tool_changes.first()
    assert change.reason == "approvals moved" and change.removed == ["createApproval"]
    assert AuditEvent.objects.filter(action=AuditEvent.Action.TOOLS_CHANGE, actor=admin_user).count() == 1
    assert LoadRefusal.objects.filter(version=candidate).count() == 1 and len(mail.outbox) == 1

    # reloading the page does not raise the alert again; the banner and the overview show it
    with django_capture_on_commit_callbacks(execute=True):
        page = client.get(page_url())
    assert len(mail.outbox) == 1 and LoadRefusal.objects.count() == 1
    assert page.context["nav"].refused_at_load == 1
    overview = client.get(reverse("reviews:refused_at_load"))
    assert "refund.over_limit v1" in overview.content.decode() and "createApproval" in overview.content.decode()


def test_invalid_tool_list_is_refused_with_the_reason(client, agent, admin_user):
    client.force_login(admin_user)
    response = client.post(page_url(), {"tools": "lookupOrder\nlookupOrder"}, follow=True)
    assert "lists a tool twice" in response.content.decode()
    agent.refresh_from_db()
    assert agent.tools.count("lookupOrder") == 1
