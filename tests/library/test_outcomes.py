"""Outcomes that arrive later (library/ingest/outcomes.py): POST /api/v1/sessions/outcomes, the label
history and its audit, the agent's label rule, mining leaving out sessions without a final label,
manage.py import_outcomes and the client's report_outcome."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from library.agents.settings import agent_settings_update
from library.api.tokens import token_create
from library.ingest.formats import parse_procmem
from library.ingest.store import sessions_store
from library.mining.mining_runs import mining_run_execute
from library.models import AgentSession, ApiToken, AuditEvent, SessionLabel

from .test_mining import STATUS_WAY, WRONG_WAY

pytestmark = pytest.mark.django_db
URL = "/api/v1/sessions/outcomes"


@pytest.fixture
def ingest_token(agent):
    return token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="outcomes")[1]


def post(client, token, body, content_type="application/json"):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.post(
        URL, data=data, content_type=content_type, **({"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {})
    )


def store(agent, prefix, n, *, skeleton=STATUS_WAY, resolved=None, days_ago=8, intent="order_status"):
    ended = timezone.now() - timedelta(days=days_ago)
    items = [
        {
            "session_id": f"{prefix}-{i}",
            "task_key": f"{prefix}-task-{i}",
            "intent": intent,
            "task": f"Hi, I'm Carla Diaz, carla{i}@example.com",
            "outcome": None if resolved is None else {"resolved": resolved, "escalated": False},
            "tool_calls": [{"name": t, "args": {"order_id": f"ORD-{1000 + i}"}, "ok": True} for t in skeleton],
            "ended_at": (ended + timedelta(minutes=i)).isoformat(),
        }
        for i in range(n)
    ]
    sessions_store(agent=agent, sessions=[parse_procmem(item) for item in items])


def test_outcomes_update_labels_keep_the_history_and_name_unknown_ids(client, agent, ingest_token):
    store(agent, "s", 2)
    response = post(
        client,
        ingest_token,
        {
            "outcomes": [
                {
                    "session_id": "s-0",
                    "resolved": True,
                    "rating": 5,
                    "at": timezone.now().isoformat(),
                    "source": "csat_survey",
                },
                {"session_id": "s-1", "closed_by_customer": True, "source": "helpdesk"},
                {"session_id": "nope-7", "resolved": False},
            ]
        },
    )
    assert response.status_code == 207, response.json()
    answer = response.json()
    assert answer["applied"] == ["s-0", "s-1"] and answer["unknown"] == ["nope-7"] and answer["refused"] == []
    s0, s1 = AgentSession.objects.get(session_id="s-0"), AgentSession.objects.get(session_id="s-1")
    assert (s0.resolved, s0.rating) == (True, 5.0)
    assert s1.resolved is True  # closed by the customer counts as resolved (the default rule)
    # the history: what the session said first, then the outcome
    assert [(label.source, label.resolved) for label in s0.labels.all()] == [("session", None), ("csat_survey", True)]
    audit = AuditEvent.objects.get(action=AuditEvent.Action.OUTCOMES, agent=agent)
    assert audit.before["s-0"]["resolved"] is None and audit.after["s-0"]["resolved"] is True
    assert audit.actor_label.startswith("token pm_")
    # a resend changes nothing
    again = post(client, ingest_token, [{"session_id": "s-1", "closed_by_customer": True, "source": "helpdesk"}])
    assert again.status_code == 200 and again.json()["duplicate"] == ["s-1"]
    assert SessionLabel.objects.filter(session=s1).count() == 2


def test_bad_outcomes_are_refused_by_field_and_tokens_are_checked(client, agent, ingest_token):
    store(agent, "s", 1)
    read = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read")[1]
    assert post(client, None, [{"session_id": "s-0", "resolved": True}]).status_code == 401
    assert post(client, read, [{"session_id": "s-0", "resolved": True}]).status_code == 403
    response = post(
        client,
        ingest_token,
        [
            {"session_id": "s-0", "resolved": "yes"},
            {"session_id": "s-0", "mood": "happy", "resolved": True},
            {"session_id": "s-0"},
            {"resolved": True},
            {"session_id": "s-0", "resolved": True, "at": "2999-01-01T00:00:00Z"},
            "text",
        ],
    )
    assert response.status_code == 422
    fields = [r["errors"][0]["field"] for r in response.json()["refused"]]
    assert fields == ["resolved", "mood", "(item)", "session_id", "at", "(item)"]
    assert post(client, ingest_token, b"{nope").status_code == 400
    assert post(client, ingest_token, []).status_code == 400
    assert not SessionLabel.objects.exists() and AgentSession.objects.get().resolved is None


@hyp_settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    body=st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12)),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(
                st.sampled_from(["outcomes", "session_id", "resolved", "rating", "complaint", "at", "source", "x"]),
                inner,
                max_size=4,
            ),
        ),
        max_leaves=12,
    )
)
def test_fuzzed_outcomes_never_fail_and_change_nothing_unless_applied(client, agent, ingest_token, body):
    if not AgentSession.objects.exists():
        store(agent, "s", 1)
    before = list(AgentSession.objects.values("resolved", "escalated", "rating"))
    response = post(client, ingest_token, body)
    assert response.status_code in (200, 207, 400, 422), response.content
    if response.status_code in (400, 422) or not response.json().get("applied"):
        assert list(AgentSession.objects.values("resolved", "escalated", "rating")) == before


def test_a_complaint_window_holds_sessions_out_of_mining_until_it_closes(client, agent, ingest_token):
    agent = agent_settings_update(agent=agent, user=None, actor_label="test", changes={"complaint_window_days": 7})
    store(agent, "fresh", 3, resolved=True, days_ago=2)
    store(agent, "old", 3, resolved=True, days_ago=9)
    assert AgentSession.objects.filter(label_pending_until__gt=timezone.now()).count() == 3
    run = mining_run_execute(agent=agent, support_threshold=2)
    assert run.counts["awaitingLabel"] == 3 and run.counts["sessions"] == 3
    [waiting] = [e for e in run.report if e["status"] == "not mined: no final label"]
    assert "fresh-0, fresh-1, fresh-2" in waiting["reason"]
    # a complaint inside the window fails the session at once, and its label is final
    post(client, ingest_token, [{"session_id": "fresh-1", "complaint": True}])
    complained = AgentSession.objects.get(session_id="fresh-1")
    assert complained.resolved is False and complained.label_pending_until is None
    # switching the window off makes every label final
    agent_settings_update(agent=agent, user=None, actor_label="test", changes={"complaint_window_days": 0})
    assert not AgentSession.objects.filter(label_pending_until__isnull=False).exists()
    assert AgentSession.objects.get(session_id="fresh-1").resolved is True  # complaints change nothing without a window


def test_outcomes_sent_a_week_later_change_the_next_mining_run(client, agent, ingest_token):
    # given: sessions that ended 8 days ago without an outcome, and failed ones of another order
    store(agent, "later", 8, days_ago=8)
    store(agent, "failed", 8, skeleton=WRONG_WAY, resolved=False, days_ago=8)
    first = mining_run_execute(agent=agent, support_threshold=3)
    assert first.counts["withoutOutcome"] == 8 and first.counts["resolved"] == 0 and first.counts["candidates"] == 0
    [waiting] = [e for e in first.report if e["status"] == "not mined: no final label"]
    assert "later-7" in waiting["reason"]
    # when: their outcomes arrive a week after the sessions
    response = post(
        client,
        ingest_token,
        [{"session_id": f"later-{i}", "resolved": True, "source": "ticket closed"} for i in range(8)],
    )
    assert response.status_code == 200
    # then: the next run counts them, and mines the order they followed
    second = mining_run_execute(agent=agent, support_threshold=3)
    assert second.counts["withoutOutcome"] == 0 and second.counts["resolved"] + second.counts["heldBack"] >= 8
    assert second.counts["resolved"] > 0 and second.counts["candidates"] == 1
    assert not [e for e in second.report if e["status"] == "not mined: no final label"]


def test_the_rating_threshold_and_the_rule_on_the_settings_page(client, agent, ingest_token, admin_user):
    store(agent, "s", 2)
    agent_settings_update(agent=agent, user=admin_user, changes={"min_rating": 4.0})
    post(client, ingest_token, [{"session_id": "s-0", "rating": 5}, {"session_id": "s-1", "rating": 2}])
    assert list(AgentSession.objects.order_by("session_id").values_list("resolved", flat=True)) == [True, False]
    client.force_login(admin_user)
    page = client.get(reverse("reviews:agent_settings", args=[agent.name])).content.decode()
    assert "a rating of at least 4.0 counts as resolved" in page
    assert "Where the sessions came from" in page and "Before channels were recorded" in page


def test_import_outcomes_reads_csv_and_jsonl_and_names_unknown_ids(agent, tmp_path, capsys):
    store(agent, "s", 3)
    csv_file = tmp_path / "outcomes.csv"
    csv_file.write_text(
        "session_id,resolved,rating,complaint,at,source\ns-0,true,5,,2026-11-30T10:00:00Z,survey\ns-1,no,,,,\n"
    )
    call_command("import_outcomes", str(csv_file), "--agent", agent.name)
    assert "2 applied, 0 duplicate, 0 unknown, 0 refused" in capsys.readouterr().out
    jsonl = tmp_path / "outcomes.jsonl"
    jsonl.write_text('{"session_id": "s-2", "escalated": true}\n{"session_id": "zz-9", "resolved": true}\nnot json\n')
    with pytest.raises(CommandError, match="1 applied, 0 duplicate, 1 unknown, 1 refused"):
        call_command("import_outcomes", str(jsonl), "--agent", agent.name)
    assert "zz-9" in capsys.readouterr().err
    values = dict(AgentSession.objects.values_list("session_id", "resolved"))
    assert values == {"s-0": True, "s-1": False, "s-2": None}
    assert AgentSession.objects.get(session_id="s-2").escalated is True
    assert SessionLabel.objects.filter(session__session_id="s-0", source="survey", via="file:outcomes.csv").exists()
