"""Rate limits of the agent API: per token and per client address, for select, the active set,
ingest and OTLP traces, and failed authentications per address on every agent endpoint; an exceeded
limit is a 429 with Retry-After (JSON; OTLP's own status message for OTLP); the limits are agent
settings, validated, audited and shown on the settings page. Under concurrent load on a live
server: test_rate_limits_server.py."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from guardian.shortcuts import assign_perm
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from library.agents.rate_limits import DEFAULT_LIMITS, ENDPOINTS, clean_rate_limits, effective_limits
from library.agents.settings import agent_settings_update
from library.api.tokens import token_create
from library.models import AgentSession, ApiToken, AuditEvent
from tests.conftest import make_active

pytestmark = pytest.mark.usefixtures("readonly_shares_default")


def bearer(raw: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def _token(agent, admin_user, scope=ApiToken.Scope.READ, name="read"):
    return token_create(agent=agent, scope=scope, name=name, user=admin_user)[1]


def _limit(agent, admin_user, limits):
    return agent_settings_update(
        agent=agent, user=admin_user, changes={"api_rate_limits": limits}, reason="test limits"
    )


def select_url(agent="support_agent"):
    return reverse("api:select", kwargs={"agent": agent})


@pytest.mark.django_db
def test_select_over_the_token_limit_is_a_429_with_retry_after(client, agent, admin_user, candidate):
    # given: 3 selects a minute per token
    make_active(candidate, admin_user)
    _limit(agent, admin_user, {"select": {"token": "3/minute"}})
    raw = _token(agent, admin_user)
    # when
    statuses = [
        client.get(select_url(), {"task": "refund over the limit"}, **bearer(raw)).status_code for _ in range(5)
    ]
    refused = client.get(select_url(), {"task": "refund over the limit"}, **bearer(raw))
    # then
    assert statuses == [200, 200, 200, 429, 429]
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    error = refused.json()["error"]
    assert error["code"] == "rate_limited" and error["scope"] == "token" and error["limit"] == "3/minute"
    assert "Select: more than 3/minute per token" in error["message"]
    # another token of the same agent still has its own count; the active set is another class
    other = _token(agent, admin_user, name="other")
    assert client.get(select_url(), {"task": "refund"}, **bearer(other)).status_code == 200
    assert client.get(reverse("api:active_set", kwargs={"agent": agent.name}), **bearer(raw)).status_code == 200


@pytest.mark.django_db
def test_the_address_limit_counts_every_token_of_the_agent(client, agent, admin_user):
    _limit(agent, admin_user, {"active_set": {"ip": "2/minute"}})
    tokens = [_token(agent, admin_user, name=f"t{i}") for i in range(3)]
    url = reverse("api:active_set", kwargs={"agent": agent.name})
    statuses = [client.get(url, **bearer(raw)).status_code for raw in tokens]
    assert statuses == [200, 200, 429]
    # another address is counted apart
    assert client.get(url, REMOTE_ADDR="10.0.0.9", **bearer(tokens[2])).status_code == 200


@pytest.mark.django_db
def test_ingest_is_limited_and_a_refused_batch_stores_nothing(client, agent, admin_user):
    _limit(agent, admin_user, {"ingest": {"token": "1/minute"}})
    raw = _token(agent, admin_user, scope=ApiToken.Scope.INGEST, name="ingest")
    body = json.dumps(
        {
            "sessions": [
                {
                    "session_id": "s-1",
                    "task": "where is my order",
                    "tool_calls": [{"name": "lookupOrder"}],
                    "outcome": {"resolved": True},
                }
            ]
        }
    )
    first = client.post(reverse("api:sessions"), body, content_type="application/json", **bearer(raw))
    assert first.status_code in (200, 201, 202), first.content
    stored = AgentSession.objects.filter(agent=agent).count()
    second = client.post(
        reverse("api:sessions"), body.replace("s-1", "s-2"), content_type="application/json", **bearer(raw)
    )
    assert second.status_code == 429 and "Retry-After" in second
    assert AgentSession.objects.filter(agent=agent).count() == stored


@pytest.mark.django_db
def test_limits_can_be_switched_off(client, agent, admin_user, settings):
    settings.PROCMEM_RATE_LIMITS = False
    _limit(agent, admin_user, {"active_set": {"token": "1/minute"}})
    raw = _token(agent, admin_user)
    url = reverse("api:active_set", kwargs={"agent": agent.name})
    assert [client.get(url, **bearer(raw)).status_code for _ in range(3)] == [200, 200, 200]


@pytest.mark.django_db
def test_a_bad_limit_is_refused_naming_the_entry_and_nothing_changes(agent, admin_user):
    with pytest.raises(ValidationError) as refused:
        _limit(agent, admin_user, {"select": {"token": "lots"}})
    assert "select.token" in str(refused.value) and "lots" in str(refused.value)
    with pytest.raises(ValidationError, match="unknown endpoint 'search'"):
        _limit(agent, admin_user, {"search": {"token": "1/minute"}})
    agent.refresh_from_db()
    assert agent.api_rate_limits == {}
    assert effective_limits(agent) == DEFAULT_LIMITS


@pytest.mark.django_db
def test_a_change_is_audited_with_before_and_after(agent, admin_user):
    _limit(agent, admin_user, {"select": {"token": "100/minute", "ip": ""}})
    event = AuditEvent.objects.filter(agent=agent, action=AuditEvent.Action.SETTINGS).latest("pk")
    assert event.before == {"api_rate_limits": {}}
    assert event.after == {"api_rate_limits": {"select": {"token": "100/minute"}}}


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.sampled_from([*ENDPOINTS, "token", "ip", "x"]), children, max_size=4)
        ),
        max_leaves=10,
    )
)
@hypothesis_settings(max_examples=300, deadline=None)
def test_any_json_is_either_clean_limits_or_a_value_error(value):
    try:
        cleaned = clean_rate_limits(value)
    except ValueError as exc:
        assert str(exc)
        return
    assert set(cleaned) <= set(ENDPOINTS)
    assert all(set(v) <= {"token", "ip"} and v for v in cleaned.values())


# ------------------------------------------------------------------------------------ the settings page


@pytest.fixture
def agent_admin(agent, reviewers_group):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("limits_admin", password="pw")
    assign_perm("library.manage_agent", user, agent)
    return user


def _form(agent, **changes):
    data = {
        "tools": "\n".join(agent.tools),
        "procedural_memory_enabled": "on",
        "injection_cap": agent.injection_cap,
        "support_threshold": agent.support_threshold,
        "min_tool_calls": agent.min_tool_calls,
        "significance_level": agent.significance_level,
        "backtest_share": agent.backtest_share,
        "review_target_hours": agent.review_target_hours,
        "pattern-TOTAL_FORMS": "0",  # no redaction pattern rows (the page's formset)
        "pattern-INITIAL_FORMS": "0",
        "family_rule-TOTAL_FORMS": "0",  # nor task family rule rows (its other formset)
        "family_rule-INITIAL_FORMS": "0",
    }
    data.update(changes)
    return data


@pytest.mark.django_db
def test_the_settings_page_shows_and_changes_the_limits(client, agent, agent_admin):
    client.force_login(agent_admin)
    url = reverse("reviews:agent_settings", args=[agent.name])
    page = client.get(url).content.decode()
    assert "API limits in force" in page and DEFAULT_LIMITS["select"]["token"] in page
    response = client.post(url, _form(agent, limit_select_token="120/minute"))
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.api_rate_limits == {"select": {"token": "120/minute"}}
    page = client.get(url).content.decode()
    assert 'value="120/minute"' in page
    refused = client.post(url, _form(agent, limit_ingest_ip="fast"))
    assert refused.status_code == 400 and "is not a rate" in refused.content.decode()
    agent.refresh_from_db()
    assert agent.api_rate_limits == {"select": {"token": "120/minute"}}


@pytest.mark.django_db
@pytest.mark.parametrize("who, expected", [("reviewer", 403), ("outsider", 404)])
def test_who_does_not_manage_the_agent_cannot_change_limits(client, agent, reviewer, outsider, who, expected):
    client.force_login({"reviewer": reviewer, "outsider": outsider}[who])
    response = client.post(
        reverse("reviews:agent_settings", args=[agent.name]), _form(agent, limit_select_token="1/minute")
    )
    assert response.status_code == expected
    agent.refresh_from_db()
    assert agent.api_rate_limits == {}


@pytest.mark.django_db
@pytest.mark.parametrize("content_type", ["application/x-protobuf", "application/json"])
def test_otlp_over_the_limit_is_an_otlp_429_with_retry_after_and_stores_nothing(
    client, agent, admin_user, settings, content_type
):
    from google.rpc import code_pb2

    from library.models import OtlpSpan
    from tests.library.otel_agent import otlp_json, otlp_protobuf, recorded_spans

    # given: one OTLP export a minute per token
    settings.PROCMEM_OTLP_QUIET_SECONDS = 0
    _limit(agent, admin_user, {"otlp": {"token": "1/minute"}})
    raw = _token(agent, admin_user, scope=ApiToken.Scope.INGEST, name="otel")
    encode = otlp_protobuf if content_type == "application/x-protobuf" else otlp_json

    def export():
        return client.generic(
            "POST", reverse("api:otlp_traces"), encode(recorded_spans()), content_type=content_type, **bearer(raw)
        )

    # when
    assert export().status_code == 200
    stored = (AgentSession.objects.filter(agent=agent).count(), OtlpSpan.objects.count())
    refused = export()
    # then: the exporter's own error shape (a google.rpc.Status in the request's encoding), retryable
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    assert refused["Content-Type"] == content_type
    status = _otlp_status(refused, content_type)
    assert status.code == code_pb2.RESOURCE_EXHAUSTED and "rate limit" in status.message
    assert (AgentSession.objects.filter(agent=agent).count(), OtlpSpan.objects.count()) == stored


@pytest.mark.django_db
@pytest.mark.parametrize("scope, limited", [(ApiToken.Scope.READ, "select"), (ApiToken.Scope.INGEST, "ingest")])
def test_the_mcp_endpoint_counts_against_the_limit_of_what_the_token_may_do(client, agent, admin_user, scope, limited):
    # given: 2 requests a minute per token for the class the token's scope uses (live, with the
    # official MCP client: test_rate_limits_server.py)
    _limit(agent, admin_user, {limited: {"token": "2/minute"}})
    raw = _token(agent, admin_user, scope=scope, name="mcp")
    url = reverse("api:mcp", kwargs={"agent": agent.name})
    # when
    answers = [
        client.post(url, MCP_LIST, content_type="application/json", **MCP_HEADERS, **bearer(raw)) for _ in range(3)
    ]
    # then
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    error = answers[2].json()["error"]  # a JSON-RPC error; the agent API's error fields are its data
    assert error["code"] == -32029 and error["data"]["code"] == "rate_limited"
    assert error["data"]["scope"] == "token" and error["data"]["limit"] == "2/minute"
    assert 1 <= int(answers[2]["Retry-After"]) <= 60


# ---------------------------------------------------------------- failed authentication, per address

MCP_LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
MCP_HEADERS = {"HTTP_ACCEPT": "application/json, text/event-stream"}


def _agent_call(client, endpoint: str, headers: dict):
    """One request to an agent endpoint with `headers` (the Authorization, or none)."""
    if endpoint == "select":
        return client.get(select_url(), {"task": "refund"}, **headers)
    if endpoint == "active_set":
        return client.get(reverse("api:active_set", kwargs={"agent": "support_agent"}), **headers)
    if endpoint == "ingest":
        session = {
            "session_id": "auth-1",
            "task": "where is my order",
            "tool_calls": [{"name": "lookupOrder"}],
            "outcome": {"resolved": True},
        }
        return client.post(
            reverse("api:sessions"), json.dumps({"sessions": [session]}), content_type="application/json", **headers
        )
    if endpoint == "mcp":
        return client.post(
            reverse("api:mcp", kwargs={"agent": "support_agent"}),
            MCP_LIST,
            content_type="application/json",
            **MCP_HEADERS,
            **headers,
        )
    from tests.library.otel_agent import otlp_json, recorded_spans

    return client.generic(
        "POST", reverse("api:otlp_traces"), otlp_json(recorded_spans()), content_type="application/json", **headers
    )


def _bad_headers(kind: str, agent, admin_user) -> dict:
    if kind == "missing":
        return {}
    if kind == "unknown":
        return bearer("pm_not-a-token-of-anyone")
    from library.api.tokens import token_revoke

    token, raw = token_create(agent=agent, scope=ApiToken.Scope.READ, name="revoked", user=admin_user)
    token_revoke(token=token, user=admin_user)
    return bearer(raw)


@pytest.mark.django_db
@pytest.mark.parametrize("endpoint", ["select", "active_set", "ingest", "mcp", "otlp"])
@pytest.mark.parametrize("kind", ["missing", "unknown", "revoked"])
def test_failed_authentications_are_limited_per_address_before_any_token_lookup(
    client, agent, admin_user, settings, endpoint, kind, django_assert_num_queries
):
    # given: 3 failed authentications a minute per client address
    settings.PROCMEM_RATE_LIMIT_AUTH_FAILURES = "3/minute"
    headers = _bad_headers(kind, agent, admin_user)
    scope = ApiToken.Scope.INGEST if endpoint in ("ingest", "otlp") else ApiToken.Scope.READ
    good = _token(agent, admin_user, scope=scope, name="good")
    # when
    statuses = [_agent_call(client, endpoint, headers).status_code for _ in range(5)]
    # then: three 401s, then 429 with Retry-After, answered without looking the token up
    assert statuses == [401, 401, 401, 429, 429]
    with django_assert_num_queries(0):
        refused = _agent_call(client, endpoint, bearer(good))  # a good token from that address too
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    if endpoint != "otlp":
        error = refused.json()["error"]
        if endpoint == "mcp":  # a JSON-RPC error: the agent API's error fields are its data
            error = error["data"]
        assert error["code"] == "rate_limited" and error["scope"] == "auth_failures" and error["limit"] == "3/minute"
    # another address is counted apart, and its good token passes
    assert _agent_call(client, endpoint, {**bearer(good), "REMOTE_ADDR": "10.0.0.7"}).status_code in (200, 202)


@pytest.mark.django_db
@pytest.mark.parametrize("content_type", ["application/x-protobuf", "application/json"])
def test_otlp_over_the_failed_authentications_is_an_otlp_429(client, settings, content_type):
    from google.rpc import code_pb2

    from tests.library.otel_agent import otlp_json, otlp_protobuf, recorded_spans

    settings.PROCMEM_RATE_LIMIT_AUTH_FAILURES = "1/minute"
    encode = otlp_protobuf if content_type == "application/x-protobuf" else otlp_json

    def export():
        return client.generic(
            "POST",
            reverse("api:otlp_traces"),
            encode(recorded_spans()),
            content_type=content_type,
            **bearer("pm_wrong"),
        )

    assert export().status_code == 401
    refused = export()
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    assert refused["Content-Type"] == content_type
    status = _otlp_status(refused, content_type)
    assert status.code == code_pb2.RESOURCE_EXHAUSTED and "failed authentications" in status.message


@pytest.mark.django_db
def test_good_tokens_and_wrong_agents_do_not_use_up_the_failed_authentications(client, agent, admin_user, settings):
    from library.models import Agent

    settings.PROCMEM_RATE_LIMIT_AUTH_FAILURES = "2/minute"
    raw = _token(agent, admin_user)
    url = reverse("api:active_set", kwargs={"agent": agent.name})
    assert [client.get(url, **bearer(raw)).status_code for _ in range(5)] == [200] * 5
    # a valid token of another agent is a 403, not a failed authentication: it is the token's own limit's
    stranger = _token(Agent.objects.create(name="other_agent", tools=[]), admin_user, name="stranger")
    assert [client.get(url, **bearer(stranger)).status_code for _ in range(3)] == [403] * 3
    assert [client.get(url, **bearer("pm_wrong")).status_code for _ in range(3)] == [401, 401, 429]


@pytest.mark.django_db
def test_the_failed_authentication_limit_is_off_with_the_other_limits(client, settings):
    settings.PROCMEM_RATE_LIMITS = False
    settings.PROCMEM_RATE_LIMIT_AUTH_FAILURES = "1/minute"
    assert [client.get(select_url(), {"task": "x"}, **bearer("pm_wrong")).status_code for _ in range(3)] == [401] * 3


def _otlp_status(response, content_type: str):
    """The google.rpc.Status of an OTLP error answer, in the request's encoding."""
    from google.protobuf import json_format
    from google.rpc import status_pb2

    status = status_pb2.Status()
    if content_type == "application/x-protobuf":
        status.ParseFromString(response.content)
    else:
        json_format.Parse(response.content, status)
    return status
