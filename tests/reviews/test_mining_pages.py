"""An agent's capture settings (on the agent settings page) and its mining runs with their reports."""

from __future__ import annotations

import pytest
from django.urls import reverse

from library.ingest.formats import parse_procmem
from library.ingest.store import sessions_store
from library.mining.runs import mining_run_execute
from library.models import AuditEvent

pytestmark = pytest.mark.django_db

FORM = {"min_tool_calls": 2, "support_threshold": 5, "significance_level": 0.01, "backtest_share": 0.2, "auto_capture_enabled": "on"}


def _settings_form(agent, **changes):
    """The whole agent settings form as it stands, with `changes`."""
    data = {"tools": "\n".join(agent.tools), "procedural_memory_enabled": "on", "injection_cap": agent.injection_cap,
            "review_target_hours": agent.review_target_hours, "redaction_patterns": "[]", **FORM, **changes}
    return data


def test_the_old_capture_settings_address_leads_to_the_one_settings_page(client, agent, reviewer, admin_user):
    url = reverse("reviews:agent_capture_settings", args=[agent.name])
    assert client.get(url).status_code == 302 and "login" in client.get(url)["Location"]
    client.force_login(reviewer)
    assert client.get(url)["Location"] == reverse("reviews:mining_runs", args=[agent.name])
    assert client.post(url, FORM).status_code == 405
    client.force_login(admin_user)
    assert client.get(reverse("reviews:agent_capture_settings", args=["nobody"])).status_code == 404
    assert client.get(url)["Location"] == reverse("reviews:agent_settings", args=[agent.name]) + "#agent-settings"


def test_capture_settings_are_changed_on_the_agent_settings_page(client, agent, reviewer, admin_user):
    url = reverse("reviews:agent_settings", args=[agent.name])
    client.force_login(reviewer)
    assert client.post(url, _settings_form(agent)).status_code == 403
    agent.refresh_from_db()
    assert not agent.auto_capture_enabled
    runs = client.get(reverse("reviews:mining_runs", args=[agent.name])).content.decode()
    assert "automatic capture off" in runs and "support threshold 20" in runs
    client.force_login(admin_user)
    assert client.post(url, _settings_form(agent)).status_code == 302
    agent.refresh_from_db()
    assert (agent.auto_capture_enabled, agent.min_tool_calls, agent.support_threshold, agent.significance_level, agent.backtest_share) == (True, 2, 5, 0.01, 0.2)
    assert AuditEvent.objects.get(action=AuditEvent.Action.SETTINGS, agent=agent).actor == admin_user


def test_capture_settings_refuse_bad_values_on_the_page(client, agent, admin_user):
    client.force_login(admin_user)
    page = client.post(reverse("reviews:agent_settings", args=[agent.name]), _settings_form(agent, backtest_share=0.9))
    assert page.status_code == 400 and "Ensure this value is less than or equal to 0.5" in page.content.decode()


def _run(agent):
    items = [
        {"session_id": f"{label}-{i}", "task_key": f"{label}-{i}", "intent": "order_status", "task": "Where is my order?",
         "outcome": {"resolved": label == "ok"}, "ended_at": f"2026-11-01T10:{i:02d}:00Z",
         "tool_calls": [{"name": t, "args": {}, "ok": True} for t in (["lookupOrder", "checkReturnWindow", "replyTemplates"] if label == "ok" else ["replyTemplates", "lookupOrder", "checkReturnWindow"])]}
        for label in ("ok", "bad") for i in range(8)
    ]
    sessions_store(agent=agent, sessions=[parse_procmem(item) for item in items])
    return mining_run_execute(agent=agent, support_threshold=3)


def test_run_report_names_every_intent_and_links_the_candidate(client, agent, reviewer):
    run = _run(agent)
    client.force_login(reviewer)
    runs = client.get(reverse("reviews:mining_runs", args=[agent.name])).content.decode()
    assert f"#{run.pk}" in runs
    page = client.get(reverse("reviews:mining_run", args=[run.pk])).content.decode()
    assert "order_status" in page and "refund_over_limit" in page and "no resolved session" in page
    [version] = run.versions.all()
    assert reverse("reviews:version", args=[version.pk]) in page and "backtest on 4 held-back sessions" in page
    # the candidate page links the run and shows the backtest
    detail = client.get(reverse("reviews:version", args=[version.pk])).content.decode()
    assert reverse("reviews:mining_run", args=[run.pk]) in detail and "Backtest on held-back sessions" in detail


def test_run_pages_need_sign_in_and_an_existing_run(client, agent, reviewer):
    run = _run(agent)
    assert client.get(reverse("reviews:mining_run", args=[run.pk])).status_code == 302
    client.force_login(reviewer)
    assert client.get(reverse("reviews:mining_run", args=[run.pk + 100])).status_code == 404
    assert client.get(reverse("reviews:mining_runs", args=["nobody"])).status_code == 404
