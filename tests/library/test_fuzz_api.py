"""Fuzzing the JSON endpoints (Hypothesis): POST /api/v1/sessions with arbitrary JSON values —
hostile strings, huge and non-finite numbers, deep nesting — inside otherwise valid sessions and as
whole bodies, and PUT /api/v1/agents/{agent}/tools. No 500 ever; the report matches the database
(what it calls stored is stored, nothing else is); a refused body stores nothing."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from library.api.tokens import token_create
from library.models import AgentSession, ApiToken

from .test_ingest import procmem_item

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None
)

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["\x00", "a\x00", "GET Observation", "/", "", "x" * 300]),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20,
)
FIELDS = [
    "session_id",
    "intent",
    "task",
    "outcome",
    "tool_calls",
    "injected",
    "instruction_chars",
    "model",
    "ended_at",
    "reply",
    "agent",
]


def _encode(value) -> bytes:
    # Python's json writes NaN/Infinity literals, as a careless client would
    return json.dumps(value, allow_nan=True).encode()


@pytest.fixture
def ingest(agent):
    raw = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="fuzz")[1]
    client = Client(raise_request_exception=False)

    def post(body: bytes):
        return client.post(
            "/api/v1/sessions", data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {raw}"
        )

    return post


def test_sessions_with_fuzzed_fields(agent, ingest):
    counter = iter(range(10**9))

    @FUZZ
    @given(
        overrides=st.dictionaries(st.sampled_from(FIELDS), values, min_size=1, max_size=3),
        calls=st.lists(values, max_size=3),
    )
    def one(overrides, calls):
        n = next(counter)
        fuzzed = {**procmem_item(f"fz-{n}"), **overrides}
        if calls:
            fuzzed["tool_calls"] = [{"name": "lookupOrder", "args": c} if i % 2 else c for i, c in enumerate(calls)]
        batch = [procmem_item(f"ok-{n}"), fuzzed]
        before = set(AgentSession.objects.filter(agent=agent).values_list("session_id", flat=True))
        response = ingest(_encode({"sessions": batch}))
        assert response.status_code != 500, response.content
        after = set(AgentSession.objects.filter(agent=agent).values_list("session_id", flat=True))
        if response.status_code in (200, 207, 422):
            report = response.json()
            assert after - before == set(report["stored"])
            assert (
                f"ok-{n}" in report["stored"]
                or f"ok-{n}" in report["duplicate"]
                or fuzzed.get("session_id") == f"ok-{n}"
            )
        else:
            assert response.status_code in (400, 413) and after == before

    one()


def test_fuzzed_bodies(agent, ingest):
    @FUZZ
    @given(body=values)
    def one(body):
        before = AgentSession.objects.filter(agent=agent).count()
        response = ingest(_encode(body))
        assert response.status_code != 500, response.content
        if response.status_code >= 400 and response.status_code != 422:
            assert AgentSession.objects.filter(agent=agent).count() == before
            assert "error" in response.json()

    one()


def test_fuzzed_tool_lists(agent, admin_user):
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)

    @FUZZ
    @given(body=st.one_of(values, st.fixed_dictionaries({"tools": values, "reason": values})))
    def one(body):
        before = list(type(agent).objects.get(pk=agent.pk).tools)
        response = client.put(f"/api/v1/agents/{agent.name}/tools", data=_encode(body), content_type="application/json")
        assert response.status_code != 500, response.content
        if response.status_code >= 400:
            assert type(agent).objects.get(pk=agent.pk).tools == before

    one()
