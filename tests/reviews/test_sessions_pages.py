"""The sessions pages: a reviewer sees the agent's sessions from every channel, filtered, redacted
(the excerpt and the tool names, never the raw task or tool arguments), with each session's outcome
history and the candidates and mining runs it supports; others get 403 or 404."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase

from library.models import AgentSession, SessionLabel

pytestmark = pytest.mark.django_db

RAW_TASK = "Refund order ORD-4471 for anna.schmidt@example.com, card 4111 1111 1111 1111"


def session(agent, session_id, *, intent=None, channel="client", resolved=None, days_ago=1, **extra):
    return AgentSession.objects.create(
        agent=agent,
        session_id=session_id,
        intent=intent,
        channel=channel,
        resolved=resolved,
        task=RAW_TASK,
        tool_calls=[{"name": "lookupOrder", "args": {"email": "anna.schmidt@example.com"}, "ok": True}],
        skeleton=["lookupOrder"],
        redacted_excerpt=[{"role": "user", "text": "Refund order {{order_id}} for {{email}}"}],
        ended_at=timezone.now() - timedelta(days=days_ago),
        **extra,
    )


def test_the_list_filters_by_channel_intent_outcome_and_date(client, reviewer, agent, intent):
    session(agent, "hA-otel-1", intent=intent, channel="otlp", resolved=True)
    session(agent, "api-2", channel="client", resolved=False, days_ago=10)
    session(agent, "file-3", channel="file")
    client.force_login(reviewer)
    url = reverse("reviews:sessions_list", args=[agent.name])

    def ids(**query):
        response = client.get(url, query)
        assert response.status_code == 200
        return [s.session_id for s in response.context["page"]]

    assert ids() == ["hA-otel-1", "file-3", "api-2"] or set(ids()) == {"hA-otel-1", "api-2", "file-3"}
    assert ids(channel="otlp") == ["hA-otel-1"]
    assert ids(intent=intent.name) == ["hA-otel-1"] and set(ids(intent="-")) == {"api-2", "file-3"}
    assert ids(outcome="failed") == ["api-2"] and ids(outcome="unknown") == ["file-3"]
    since = (timezone.now() - timedelta(days=3)).date().isoformat()
    assert set(ids(ended_from=since)) == {"hA-otel-1", "file-3"}
    html = client.get(url).content.decode()
    assert "hA-otel-1" in html  # verbatim
    assert "anna.schmidt" not in html and "ORD-4471" not in html


def test_a_bad_filter_is_a_field_error_and_the_others_still_apply(client, reviewer, agent):
    session(agent, "api-1", channel="client")
    session(agent, "otlp-1", channel="otlp")
    client.force_login(reviewer)
    response = client.get(
        reverse("reviews:sessions_list", args=[agent.name]), {"channel": "otlp", "ended_from": "yesterday-ish"}
    )
    assert response.status_code == 200
    assert "ended_from" in response.context["form"].errors
    assert [s.session_id for s in response.context["page"]] == ["otlp-1"]
    assert "Enter a valid date" in response.content.decode()


def test_the_detail_is_redacted_and_shows_the_outcome_history_and_what_it_supports(
    client, reviewer, proposer, agent, intent
):
    from library import services
    from library.models import Source

    s = session(agent, "mined-1", intent=intent, resolved=True)
    SessionLabel.objects.create(session=s, resolved=True, rating=5.0, source="session", at=timezone.now())
    SessionLabel.objects.create(session=s, rating=4.0, source="csat_survey", at=timezone.now())
    candidate = services.procedure_propose(
        agent=agent,
        intent=intent,
        key="order.status",
        applies_when="The customer asks where the order is.",
        steps=["Look up the order with lookupOrder({{order_id}})."],
        required_tools=["lookupOrder"],
        forbidden_actions=[],
        source=Source.MANUAL,
        proposed_by=proposer,
        evidence={"sessionIds": ["mined-1", "other-2"]},
    )
    client.force_login(reviewer)
    response = client.get(reverse("reviews:session_detail", args=[agent.name, s.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Refund order {{order_id}} for {{email}}" in html and "<code>lookupOrder</code>" in html
    assert "anna.schmidt" not in html and "ORD-4471" not in html and "4111" not in html
    assert "csat_survey" in html and html.index("session</td>") < html.index("csat_survey")
    assert reverse("reviews:version", args=[candidate.pk]) in html


def test_an_outcome_that_came_with_the_session_is_its_history_not_no_outcome(client, reviewer, agent):
    # given: sessions that reported their outcome themselves and none later (the demo's all do)
    s = session(agent, "own-1", resolved=True, rating=5.0)
    silent = session(agent, "silent-2")
    client.force_login(reviewer)
    # when
    html = client.get(reverse("reviews:session_detail", args=[agent.name, s.pk])).content.decode()
    silent_html = client.get(reverse("reviews:session_detail", args=[agent.name, silent.pk])).content.decode()
    # then: the history shows the session's own report, as the stored history would
    history = html[html.index('id="session-labels"') :]
    assert "No outcome reported" not in history
    assert "<td>session</td><td>yes</td><td>—</td><td>5.0</td>" in history
    assert "No outcome reported" in silent_html
    assert not SessionLabel.objects.exists()  # a read stores nothing


def test_who_may_see_sessions(client, outsider, proposer, agent):
    s = session(agent, "s-1")
    list_url = reverse("reviews:sessions_list", args=[agent.name])
    detail_url = reverse("reviews:session_detail", args=[agent.name, s.pk])
    assert reverse("login") in client.get(list_url)["Location"]
    client.force_login(outsider)  # not a reviewer
    assert client.get(list_url).status_code in (403, 404)
    assert client.get(detail_url).status_code in (403, 404)
    client.force_login(proposer)  # a reviewer
    assert client.get(list_url).status_code == 200
    # a session of another agent is not found under this one
    assert client.get(reverse("reviews:session_detail", args=[agent.name, s.pk + 999])).status_code == 404
    assert client.post(list_url).status_code == 405  # read-only


class FilterFuzz(TestCase):
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        query=st.dictionaries(
            st.sampled_from(["channel", "intent", "outcome", "ended_from", "ended_to", "page"]),
            st.text(max_size=30),
            max_size=6,
        )
    )
    def test_any_query_string_gets_a_page_not_an_error(self, query):
        from django.contrib.auth import get_user_model

        from library.models import Agent
        from library.permissions import ensure_reviewers_group

        agent, _ = Agent.objects.get_or_create(name="fuzz_agent")
        user, created = get_user_model().objects.get_or_create(username="fuzz-reviewer")
        if created:
            user.groups.add(ensure_reviewers_group())
        self.client.force_login(user)
        response = self.client.get(reverse("reviews:sessions_list", args=[agent.name]), query)
        # a NUL or lone surrogate is the input guard's 400 (procmem_site); anything else is a page
        assert response.status_code in (200, 400), response.status_code
