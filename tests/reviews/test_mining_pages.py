"""An agent's capture settings (on the agent settings page) and its mining runs with their reports."""

from __future__ import annotations

import pytest
from django.urls import reverse

from library.ingest.formats import parse_procmem
from library.ingest.store import sessions_store
from library.mining.mining_runs import mining_run_execute
from library.models import AuditEvent, MiningRun, Source, Status

pytestmark = pytest.mark.django_db

FORM = {
    "min_tool_calls": 2,
    "support_threshold": 5,
    "significance_level": 0.01,
    "backtest_share": 0.2,
    "auto_capture_enabled": "on",
}


def _settings_form(agent, **changes):
    """The whole agent settings form as it stands, with `changes`."""
    data = {
        "tools": "\n".join(agent.tools),
        "procedural_memory_enabled": "on",
        "injection_cap": agent.injection_cap,
        "review_target_hours": agent.review_target_hours,
        "pattern-TOTAL_FORMS": "0",  # no redaction pattern rows (the page's formset)
        "pattern-INITIAL_FORMS": "0",
        "family_rule-TOTAL_FORMS": "0",  # nor task family rule rows (its other formset)
        "family_rule-INITIAL_FORMS": "0",
        **FORM,
        **changes,
    }
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
    assert (
        agent.auto_capture_enabled,
        agent.min_tool_calls,
        agent.support_threshold,
        agent.significance_level,
        agent.backtest_share,
    ) == (True, 2, 5, 0.01, 0.2)
    assert AuditEvent.objects.get(action=AuditEvent.Action.SETTINGS, agent=agent).actor == admin_user


def test_capture_settings_refuse_bad_values_on_the_page(client, agent, admin_user):
    client.force_login(admin_user)
    page = client.post(reverse("reviews:agent_settings", args=[agent.name]), _settings_form(agent, backtest_share=0.9))
    assert page.status_code == 400 and "Ensure this value is less than or equal to 0.5" in page.content.decode()


def _run(agent):
    items = [
        {
            "session_id": f"{label}-{i}",
            "task_key": f"{label}-{i}",
            "intent": "order_status",
            "task": "Where is my order?",
            "outcome": {"resolved": label == "ok"},
            "ended_at": f"2026-11-01T10:{i:02d}:00Z",
            "tool_calls": [
                {"name": t, "args": {}, "ok": True}
                for t in (
                    ["lookupOrder", "checkReturnWindow", "replyTemplates"]
                    if label == "ok"
                    else ["replyTemplates", "lookupOrder", "checkReturnWindow"]
                )
            ],
        }
        for label in ("ok", "bad")
        for i in range(8)
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
    # the figures in words, not the report's keys
    assert "with too few tool calls" in page and "tooFewToolCalls" not in page and "resolvedByEscalation" not in page
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


def _reported_run(agent):
    """Resolved and failed sessions that call the same tools in the same order: the group is tested,
    not credible, and reported (not proposed)."""
    items = [
        {
            "session_id": f"{label}-{i}",
            "task_key": f"{label}-{i}",
            "intent": "order_status",
            "task": "Where is my order?",
            "outcome": {"resolved": label == "ok"},
            "ended_at": f"2026-11-01T10:{i:02d}:00Z",
            "tool_calls": [
                {"name": t, "args": {}, "ok": True} for t in ["lookupOrder", "checkReturnWindow", "replyTemplates"]
            ],
        }
        for label in ("ok", "bad")
        for i in range(8)
    ]
    sessions_store(agent=agent, sessions=[parse_procmem(item) for item in items])
    run = mining_run_execute(agent=agent, support_threshold=3)
    assert [e["status"] for e in run.report if e["intent"] == "order_status"] == ["no significant contrast"]
    return run


def test_a_reviewer_proposes_a_reported_group_with_a_reason_and_it_becomes_a_candidate(client, agent, reviewer):
    run = _reported_run(agent)
    url = reverse("reviews:mining_run_propose", args=[run.pk])
    client.force_login(reviewer)
    page = client.get(reverse("reviews:mining_run", args=[run.pk])).content.decode()
    assert url in page and "Propose it anyway as a candidate" in page
    # no reason: refused, nothing written, the page says why
    answer = client.post(url, {"intent": "order_status", "reason": "  "}, follow=True)
    assert "needs a reason" in answer.content.decode() and not run.versions.exists()
    # with a reason: a CANDIDATE of this run, proposed by the reviewer, the reason on its evidence
    answer = client.post(url, {"intent": "order_status", "reason": "the backtest holds; let the eval decide"})
    [version] = run.versions.all()
    assert answer.status_code == 302 and answer["Location"] == reverse("reviews:version", args=[version.pk])
    assert version.status == Status.CANDIDATE and version.proposed_by == reviewer and version.source == Source.MINED
    despite = version.evidence["proposedDespite"]
    assert despite["by"] == "reviewer" and despite["reason"] == "the backtest holds; let the eval decide"
    assert version.evidence["skeletonTest"]["credible"] is False and version.evidence["miningRunId"] == run.pk
    assert AuditEvent.objects.filter(action=AuditEvent.Action.PROPOSE, version=version, actor=reviewer).exists()
    detail = client.get(reverse("reviews:version", args=[version.pk])).content.decode()
    assert 'id="evidence-proposed-despite"' in detail and "let the eval decide" in detail
    # the run's report links the candidate; proposing twice is refused with the reason
    run.refresh_from_db()
    [entry] = [e for e in run.report if e["intent"] == "order_status"]
    assert entry["version"]["pk"] == version.pk and entry["proposedDespite"]["by"] == "reviewer"
    again = client.post(url, {"intent": "order_status", "reason": "again"}, follow=True).content.decode()
    assert "already proposed as" in again and run.versions.count() == 1
    # an intent the run did not report
    other = client.post(url, {"intent": "refund_over_limit", "reason": "why not"}, follow=True).content.decode()
    assert "reported no unproposed group for the intent" in other


def test_proposing_a_reported_group_is_refused_to_whoever_may_not_review_it(client, agent, reviewer, outsider):
    run = _reported_run(agent)
    url = reverse("reviews:mining_run_propose", args=[run.pk])
    form = {"intent": "order_status", "reason": "because"}
    assert client.post(url, form).status_code == 302  # to sign in
    client.force_login(outsider)  # signed in, no reviewer role, sees no agent
    assert client.post(url, form).status_code in (403, 404)
    client.force_login(reviewer)
    assert client.get(url).status_code == 405
    assert client.post(reverse("reviews:mining_run_propose", args=[run.pk + 100]), form).status_code == 404
    assert not run.versions.exists()


def test_a_reported_group_that_a_live_version_covers_is_not_proposed_again(client, agent, reviewer, admin_user):
    run = _reported_run(agent)
    url = reverse("reviews:mining_run_propose", args=[run.pk])
    client.force_login(admin_user)
    client.post(url, {"intent": "order_status", "reason": "first"})
    # a second run reports the same group again; the first candidate covers it
    second = mining_run_execute(agent=agent, support_threshold=3)
    client.force_login(reviewer)
    page = client.post(
        reverse("reviews:mining_run_propose", args=[second.pk]),
        {"intent": "order_status", "reason": "second"},
        follow=True,
    )
    assert "covered by" in page.content.decode() and not second.versions.exists()


def test_a_comparison_with_an_empty_side_says_what_is_missing_not_0_of_0(client, reviewer):
    """The demo's run read "vs 0 of 0 others succeeded; risk ratio n/a" and "vs 0 of 0 failed tasks;
    lift n/a" where every session of an intent follows its tool order."""
    from library.demo import seed_demo

    # given: the demo's mining run, whose order_status and refund_within_limit have no other sessions
    agent = seed_demo().agent
    run = MiningRun.objects.get(agent=agent)
    client.force_login(reviewer)
    # when
    page = " ".join(client.get(reverse("reviews:mining_run", args=[run.pk])).content.decode().split())
    # then
    assert "0 of 0" not in page and "n/a" not in page
    assert "sessions that follow it succeeded; no other session of the same tasks to compare with" in page
    assert "23 of 23 resolved tasks follow it; no failed task to compare with" in page
    assert "followers succeeded, no other held-back session to compare with — inconclusive" in page
    # a comparison with both sides keeps its figures
    assert "118 of 118 sessions that follow it vs 22 of 82 others succeeded; risk ratio 3.73" in page
