"""The agent settings page and its service: admins of the agent change tools, switches, the
injection cap, the support threshold and redaction patterns, each change audited; everyone else
gets 403 (reviewers) or 404 (outsiders); bad values are named and nothing is half-saved."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse
from guardian.shortcuts import assign_perm

from library.agents.settings import agent_settings_update
from library.models import Agent, AgentSession, AgentToolChange, AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent_admin(agent, reviewers_group):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("agent_admin", password="pw")
    assign_perm("library.manage_agent", user, agent)
    return user


def _form(agent, **changes):
    data = {
        "tools": "\n".join(agent.tools),
        "procedural_memory_enabled": "on" if agent.procedural_memory_enabled else "",
        "auto_capture_enabled": "on" if agent.auto_capture_enabled else "",
        "injection_cap": agent.injection_cap,
        "support_threshold": agent.support_threshold,
        "min_tool_calls": agent.min_tool_calls,
        "significance_level": agent.significance_level,
        "backtest_share": agent.backtest_share,
        "review_target_hours": agent.review_target_hours,
        "complaint_window_days": agent.complaint_window_days,
        "closed_by_customer_resolves": "on" if agent.closed_by_customer_resolves else "",
        "min_rating": "" if agent.min_rating is None else agent.min_rating,
        "reason": "",
    }
    patterns = changes.pop("patterns", agent.redaction_patterns or [])
    data.update(_pattern_rows(patterns))
    data.update(_family_rule_rows(changes.pop("family_rules", agent.coding_family_rules or [])))
    data.update(changes)
    return {k: v for k, v in data.items() if v != ""}


def _pattern_rows(patterns) -> dict:
    """The redaction patterns as the page posts them: one formset row per pattern."""
    rows = {"pattern-TOTAL_FORMS": str(len(patterns)), "pattern-INITIAL_FORMS": "0"}
    for index, pattern in enumerate(patterns):
        rows[f"pattern-{index}-label"] = pattern.get("label", "")
        rows[f"pattern-{index}-regex"] = pattern.get("regex", "")
    return rows


def _family_rule_rows(rules) -> dict:
    """The task family rules as the page posts them: one formset row per rule."""
    rows = {"family_rule-TOTAL_FORMS": str(len(rules)), "family_rule-INITIAL_FORMS": "0"}
    for index, rule in enumerate(rules):
        rows[f"family_rule-{index}-prefix"] = rule.get("prefix", "")
        rows[f"family_rule-{index}-family"] = rule.get("family", "")
    return rows


def test_service_saves_and_audits_before_and_after(agent, agent_admin):
    agent_settings_update(
        agent=agent,
        user=agent_admin,
        reason="pilot",
        changes={
            "injection_cap": 1,
            "procedural_memory_enabled": False,
            "redaction_patterns": [{"label": "ticket", "regex": r"\bT-\d+\b"}],
        },
    )
    agent.refresh_from_db()
    assert (agent.injection_cap, agent.procedural_memory_enabled) == (1, False)
    event = AuditEvent.objects.get(action=AuditEvent.Action.SETTINGS, agent=agent)
    assert event.reason == "pilot" and event.actor == agent_admin
    assert event.before == {"injection_cap": 2, "procedural_memory_enabled": True, "redaction_patterns": []}
    assert event.after["injection_cap"] == 1 and event.after["redaction_patterns"][0]["label"] == "ticket"


def test_the_review_target_is_a_setting(agent, agent_admin):
    agent_settings_update(agent=agent, user=agent_admin, changes={"review_target_hours": 8}, reason="faster reviews")
    agent.refresh_from_db()
    assert agent.review_target_hours == 8
    event = AuditEvent.objects.get(action=AuditEvent.Action.SETTINGS, agent=agent)
    assert (event.before, event.after) == ({"review_target_hours": 72}, {"review_target_hours": 8})


def test_no_change_writes_no_audit_row(agent, agent_admin):
    agent_settings_update(agent=agent, user=agent_admin, changes={"injection_cap": agent.injection_cap})
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.SETTINGS).exists()


@pytest.mark.parametrize(
    "changes,field",
    [
        ({"injection_cap": 21}, "injection_cap"),
        ({"injection_cap": -1}, "injection_cap"),
        ({"support_threshold": 0}, "support_threshold"),
        ({"review_target_hours": 0}, "review_target_hours"),
        ({"review_target_hours": "72"}, "review_target_hours"),
        ({"redaction_patterns": [{"label": "x", "regex": "(unclosed"}]}, "redaction_patterns"),
        ({"redaction_patterns": [{"regex": "x"}]}, "redaction_patterns"),
        ({"redaction_patterns": "ORD-"}, "redaction_patterns"),
        ({"procedural_memory_enabled": "yes"}, "procedural_memory_enabled"),
        ({"eval_url": "http://x"}, "eval_url"),
    ],
)
def test_bad_values_are_named_and_nothing_changes(agent, agent_admin, changes, field):
    with pytest.raises(ValidationError) as exc:
        agent_settings_update(agent=agent, user=agent_admin, changes=changes)
    assert field in exc.value.message_dict
    fresh = Agent.objects.get(pk=agent.pk)
    assert (fresh.injection_cap, fresh.support_threshold, fresh.redaction_patterns) == (2, 20, [])


def test_service_refuses_a_reviewer(agent, reviewer):
    with pytest.raises(PermissionDenied):
        agent_settings_update(agent=agent, user=reviewer, changes={"injection_cap": 1})


@pytest.mark.parametrize("who,expected", [("reviewer", 403), ("outsider", 404)])
def test_page_refuses_who_does_not_manage_the_agent(client, agent, reviewer, outsider, who, expected):
    client.force_login({"reviewer": reviewer, "outsider": outsider}[who])
    url = reverse("reviews:agent_settings", args=[agent.name])
    assert client.get(url).status_code == expected
    assert client.post(url, _form(agent, injection_cap=1)).status_code == expected
    rules = [{"prefix": "django/db/migrations", "family": "migrations"}]
    assert client.post(url, _form(agent, family_rules=rules)).status_code == expected
    fresh = Agent.objects.get(pk=agent.pk)
    assert (fresh.injection_cap, fresh.coding_family_rules) == (2, [])


def test_admin_changes_tools_and_settings_in_one_submit(client, agent, agent_admin):
    client.force_login(agent_admin)
    url = reverse("reviews:agent_settings", args=[agent.name])
    page = client.get(url)
    assert page.status_code == 200 and "Eval runner" in page.content.decode()
    response = client.post(
        url,
        _form(
            agent,
            tools="lookupOrder\nreplyTemplates",
            injection_cap=1,
            auto_capture_enabled="",
            patterns=[{"label": "ticket", "regex": r"T-\d+"}],
            reason="trim",
        ),
    )
    assert response.status_code == 302
    agent.refresh_from_db()
    assert (
        agent.tools == ["lookupOrder", "replyTemplates"] and agent.injection_cap == 1 and not agent.auto_capture_enabled
    )
    assert agent.redaction_patterns == [{"label": "ticket", "regex": r"T-\d+"}]
    assert AgentToolChange.objects.filter(agent=agent).count() == 1
    actions = list(AuditEvent.objects.filter(agent=agent).values_list("action", flat=True).order_by("id"))
    assert actions[-2:] == [AuditEvent.Action.TOOLS_CHANGE, AuditEvent.Action.SETTINGS]


@pytest.mark.parametrize("regex", ["(a+)+$", "(\\w*\\s?)*@", "(?:ab|c+)*x"])
def test_a_pattern_that_can_take_exponential_time_is_refused(client, agent, agent_admin, regex):
    # it would run on every ingested session of the agent, inside the request: "a" * 40 + "!" took days
    client.force_login(agent_admin)
    response = client.post(
        reverse("reviews:agent_settings", args=[agent.name]),
        _form(agent, patterns=[{"label": "x", "regex": regex}]),
    )
    assert response.status_code == 400 and "exponential time" in response.content.decode()
    agent.refresh_from_db()
    assert agent.redaction_patterns == []


def test_a_bad_pattern_saves_nothing_not_even_the_tools(client, agent, agent_admin):
    client.force_login(agent_admin)
    response = client.post(
        reverse("reviews:agent_settings", args=[agent.name]),
        _form(agent, tools="lookupOrder", patterns=[{"label": "x", "regex": "("}]),
    )
    assert response.status_code == 400 and "Not a valid regular expression" in response.content.decode()
    agent.refresh_from_db()
    assert len(agent.tools) == 4 and not AgentToolChange.objects.exists()


def test_the_label_rule_is_set_on_the_page_and_derives_the_labels_again(client, agent, agent_admin):
    from datetime import timedelta

    from django.utils import timezone

    from library.ingest.formats import parse_procmem
    from library.ingest.store import sessions_store

    sessions_store(
        agent=agent,
        sessions=[
            parse_procmem(
                {
                    "session_id": "s-1",
                    "task": "hello",
                    "outcome": {"resolved": True},
                    "ended_at": (timezone.now() - timedelta(days=1)).isoformat(),
                }
            )
        ],
        channel="otlp",
    )
    client.force_login(agent_admin)
    url = reverse("reviews:agent_settings", args=[agent.name])
    response = client.post(url, _form(agent, complaint_window_days=7, reason="complaints come within a week"))
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.complaint_window_days == 7
    assert AgentSession.objects.get(session_id="s-1").label_pending_until > timezone.now()
    page = client.get(url).content.decode()
    assert "A complaint within 7 days of a session" in page
    assert "OpenTelemetry traces (OTLP)" in page  # where the sessions came from


def test_the_coding_family_settings_are_on_the_page(client, agent, agent_admin):
    """The task-family rules and the traces a family needs were settable only by `manage.py
    agent_settings`; the page shows and changes them like every other capture setting, the rules as
    rows of fields (a raw JSON text area before), stored as the list the miner reads."""
    client.force_login(agent_admin)
    url = reverse("reviews:agent_settings", args=[agent.name])
    page = client.get(url).content.decode()
    assert 'name="coding_min_traces"' in page and 'name="family_rule-0-prefix"' in page
    assert 'name="coding_family_rules"' not in page
    rules = [{"prefix": "/django/db/migrations/", "family": "migrations"}, {"prefix": "django/db", "family": "db"}]
    response = client.post(url, _form(agent, coding_min_traces=7, family_rules=rules, reason="group migrations"))
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.coding_min_traces == 7
    # stored as before: the list of {prefix, family}, the prefix without its surrounding slashes
    assert agent.coding_family_rules == [
        {"prefix": "django/db/migrations", "family": "migrations"},
        {"prefix": "django/db", "family": "db"},
    ]
    event = AuditEvent.objects.filter(action=AuditEvent.Action.SETTINGS, agent=agent).latest("id")
    assert event.after["coding_min_traces"] == 7 and event.reason == "group migrations"
    page = client.get(url).content.decode()  # shown back as stored, one row each and an empty one
    assert 'name="family_rule-0-prefix" value="django/db/migrations"' in page
    assert 'name="family_rule-1-family" value="db"' in page and 'name="family_rule-2-prefix"' in page
    # left empty, the number keeps its value; a removed rule and an emptied row are gone
    form = _form(agent, injection_cap=1, family_rules=[*agent.coding_family_rules, {"prefix": "", "family": ""}])
    form["family_rule-0-DELETE"] = "on"
    assert client.post(url, form).status_code == 302
    agent.refresh_from_db()
    assert (agent.coding_min_traces, agent.coding_family_rules, agent.injection_cap) == (
        7,
        [{"prefix": "django/db", "family": "db"}],
        1,
    )
    assert client.post(url, _form(agent, family_rules=[])).status_code == 302
    agent.refresh_from_db()
    assert agent.coding_family_rules == []


@pytest.mark.parametrize(
    "changes,field,message",
    [
        (
            {"family_rules": [{"prefix": "", "family": "x"}]},
            "family_rule-0-prefix",
            "Rule 1, path prefix: write the path",
        ),
        (
            {"family_rules": [{"prefix": "a", "family": "b"}, {"prefix": "django/db", "family": ""}]},
            "family_rule-1-family",
            "Rule 2, family: name the family",
        ),
        (
            {"family_rules": [{"prefix": "a b", "family": "c"}]},
            "family_rule-0-prefix",
            "Rule 1, path prefix: “a b” is not a relative path of letters, digits and _ . / - of at most 200 characters.",
        ),
        (
            {"family_rules": [{"prefix": "a", "family": "f" * 101}]},
            "family_rule-0-family",
            "of at most 100 characters",
        ),
        (
            {"family_rules": [{"prefix": "django/db", "family": "db"}, {"prefix": "django/db/", "family": "x"}]},
            "family_rule-1-prefix",
            "Rule 2, path prefix: rule 1 already has the prefix django/db.",
        ),
        ({"coding_min_traces": 0}, "coding_min_traces", "greater than or equal to 1"),
    ],
)
def test_bad_coding_settings_are_named_and_nothing_changes(client, agent, agent_admin, changes, field, message):
    client.force_login(agent_admin)
    before = (agent.coding_min_traces, agent.coding_family_rules, agent.injection_cap)
    response = client.post(
        reverse("reviews:agent_settings", args=[agent.name]), _form(agent, injection_cap=1, **changes)
    )
    assert response.status_code == 400
    html = response.content.decode()
    if field.startswith("family_rule"):
        # beside its own field, and only there
        error = re.search(rf'<div class="error" id="id_{field}-error">([^<]+)</div>', html)
        assert error and message in error.group(1), html[html.find("family-rules") :][:2000]
        assert html.count('<div class="error" id="id_family_rule-') == 1
    else:
        assert message in html
    agent.refresh_from_db()
    assert (agent.coding_min_traces, agent.coding_family_rules, agent.injection_cap) == before


def test_redaction_patterns_are_rows_with_an_error_beside_the_field_and_json_only_to_export(client, agent, agent_admin):
    # given an agent with one pattern
    agent.redaction_patterns = [{"label": "ticket", "regex": r"\bT-\d+\b"}]
    agent.save(update_fields=["redaction_patterns"])
    client.force_login(agent_admin)
    url = reverse("reviews:agent_settings", args=[agent.name])
    page = client.get(url).content.decode()
    # the page edits it as fields, one row per pattern plus an empty one; JSON is shown to export
    assert 'name="pattern-0-label" value="ticket"' in page and 'name="pattern-1-regex"' in page
    assert 'name="redaction_patterns"' not in page
    assert '<pre id="redaction-patterns-json">[\n  {\n    &quot;label&quot;: &quot;ticket&quot;' in page
    for section in ("settings-serving", "settings-tools", "settings-mining", "settings-labels", "settings-limits"):
        assert f'id="{section}"' in page
    # when a second row has a label but a broken regex, and a third a regex without a label
    patterns = [
        {"label": "ticket", "regex": r"\bT-\d+\b"},
        {"label": "invoice", "regex": "INV-(\\d+"},
        {"label": "", "regex": r"\bC-\d+\b"},
    ]
    response = client.post(url, _form(agent, patterns=patterns, injection_cap=1))
    # then each error stands beside its own field and nothing is saved
    assert response.status_code == 400
    html = response.content.decode()
    regex_error = re.search(r'<div class="error" id="id_pattern-1-regex-error">([^<]+)</div>', html)
    label_error = re.search(r'<div class="error" id="id_pattern-2-label-error">([^<]+)</div>', html)
    assert regex_error and regex_error.group(1).startswith("Not a valid regular expression: missing ), unterminated")
    assert label_error and "required" in label_error.group(1)
    assert 'id="id_pattern-0-label-error"' not in html and 'id="id_pattern-0-regex-error"' not in html
    agent.refresh_from_db()
    assert agent.injection_cap == 2 and agent.redaction_patterns == [{"label": "ticket", "regex": r"\bT-\d+\b"}]
    # and with the rows fixed, and the first removed, the list is saved in order
    fixed = _form(
        agent,
        patterns=[
            *patterns[:1],
            {"label": "invoice", "regex": r"INV-\d+"},
            {"label": "customer", "regex": r"\bC-\d+\b"},
        ],
    )
    fixed["pattern-0-DELETE"] = "on"
    assert client.post(url, fixed).status_code == 302
    agent.refresh_from_db()
    assert agent.redaction_patterns == [
        {"label": "invoice", "regex": r"INV-\d+"},
        {"label": "customer", "regex": r"\bC-\d+\b"},
    ]
