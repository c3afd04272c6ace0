"""Rate limits under concurrent load on a live server (gunicorn, two worker processes) with the
counters in Redis: exactly the limit passes, per token and per client address (shared by every token
of the agent), the rest get 429 with Retry-After and store nothing."""

from __future__ import annotations

import concurrent.futures
import json
import os
import uuid

import pytest

from library.agents.settings import agent_settings_update
from library.api.tokens import token_create
from library.models import ApiToken
from tests.conftest import _missing, _redis_answers, make_active, redis_url

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def redis_limited_server(request, monkeypatch):
    """A live server counting in the Redis of REDIS_URL under keys of this test alone (a prefix unique
    to the run), so parallel runs on one Redis do not count each other's requests; the test deletes
    its own keys only."""
    import redis

    if not _redis_answers(redis_url()):
        _missing(f"this test needs Redis at {redis_url()}")
    prefix = f"procmem-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("PROCMEM_RATE_LIMIT_STORAGE", redis_url())
    monkeypatch.setenv("PROCMEM_RATE_LIMIT_KEY_PREFIX", prefix)
    yield request.getfixturevalue("gunicorn_server")
    connection = redis.Redis.from_url(redis_url())
    keys = list(connection.scan_iter(match=f"{prefix}:*"))
    if keys:
        connection.delete(*keys)


def test_the_counters_are_under_the_runs_own_prefix(redis_limited_server, agent, admin_user):
    import redis
    import requests

    # given: a request counted by the live server
    raw = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]
    requests.get(
        f"{redis_limited_server}/api/v1/agents/{agent.name}/procedures",
        headers={"Authorization": f"Bearer {raw}"},
        timeout=60,
    )
    # then: its counters are under this run's prefix (and the fixture deletes exactly those)
    prefix = os.environ["PROCMEM_RATE_LIMIT_KEY_PREFIX"]
    assert list(redis.Redis.from_url(redis_url()).scan_iter(match=f"{prefix}:*"))


def test_under_concurrent_load_exactly_the_limit_passes(redis_limited_server, agent, admin_user, candidate):
    import requests

    # given: 20 reads of the active set a minute per token, two gunicorn workers with four threads
    # each (the set, not select: select's first call in a fresh worker loads the embedding model)
    make_active(candidate, admin_user)
    agent_settings_update(
        agent=agent, user=admin_user, changes={"api_rate_limits": {"active_set": {"token": "20/minute"}}}
    )
    raw = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]
    url = f"{redis_limited_server}/api/v1/agents/{agent.name}/procedures"

    def call(i):
        response = requests.get(url, headers={"Authorization": f"Bearer {raw}"}, timeout=60)
        return response.status_code, response.headers.get("Retry-After")

    # when: 60 requests, 12 at a time
    with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(call, range(60)))
    # then: the count is shared by both processes, so exactly 20 pass
    statuses = [status for status, _ in results]
    assert statuses.count(200) == 20, statuses
    assert statuses.count(429) == 40
    assert all(retry and 1 <= int(retry) <= 60 for status, retry in results if status == 429)


def test_under_concurrent_load_the_address_limit_is_shared_by_every_token_and_refused_batches_store_nothing(
    redis_limited_server, agent, admin_user
):
    import requests

    from library.models import AgentSession

    # given: 10 session reports a minute from one address, three ingest tokens of the agent
    agent_settings_update(agent=agent, user=admin_user, changes={"api_rate_limits": {"ingest": {"ip": "10/minute"}}})
    tokens = [
        token_create(agent=agent, scope=ApiToken.Scope.INGEST, name=f"ingest-{i}", user=admin_user)[1] for i in range(3)
    ]
    url = f"{redis_limited_server}/api/v1/sessions"

    def report(i):
        session = {
            "session_id": f"load-{i}",
            "task": "where is my order",
            "tool_calls": [{"name": "lookupOrder"}],
            "outcome": {"resolved": True},
        }
        response = requests.post(
            url, json={"sessions": [session]}, headers={"Authorization": f"Bearer {tokens[i % 3]}"}, timeout=60
        )
        return response.status_code, response.headers.get("Retry-After")

    # when: 36 reports, 12 at a time, spread over the three tokens
    with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(report, range(36)))
    # then: exactly 10 were taken, whichever token sent them, and only theirs are stored
    statuses = [status for status, _ in results]
    assert sum(1 for s in statuses if s in (200, 201, 202)) == 10, statuses
    assert statuses.count(429) == 26
    assert all(retry and 1 <= int(retry) <= 60 for status, retry in results if status == 429)
    assert AgentSession.objects.filter(agent=agent, session_id__startswith="load-").count() == 10


@pytest.fixture
def auth_limited_server(request, monkeypatch):
    monkeypatch.setenv("PROCMEM_RATE_LIMIT_AUTH_FAILURES", "10/minute")
    return request.getfixturevalue("redis_limited_server")


def test_under_concurrent_load_bad_tokens_get_exactly_the_failed_authentication_limit_on_every_endpoint(
    auth_limited_server, agent, admin_user
):
    import requests

    # given: 10 failed authentications a minute per address, shared by every agent endpoint
    base = auth_limited_server
    calls = [
        ("GET", f"{base}/api/v1/agents/{agent.name}/select?task=refund", None, {}),
        ("GET", f"{base}/api/v1/agents/{agent.name}/procedures", None, {}),
        ("POST", f"{base}/api/v1/sessions", b'{"sessions": []}', {"Content-Type": "application/json"}),
        (
            "POST",
            f"{base}/api/v1/agents/{agent.name}/mcp",
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
            {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        ),
        ("POST", f"{base}/api/otlp/v1/traces", b"{}", {"Content-Type": "application/json"}),
    ]

    def flood(i):
        method, url, body, headers = calls[i % len(calls)]
        bad = {} if i % 3 == 0 else {"Authorization": f"Bearer pm_flood-{i}"}  # missing or unknown
        response = requests.request(method, url, data=body, headers={**headers, **bad}, timeout=60)
        return response.status_code, response.headers.get("Retry-After")

    # when: 60 bad requests, 12 at a time, over five endpoints
    with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(flood, range(60)))
    # then: both worker processes share one count: exactly 10 were looked at, the rest refused
    statuses = [status for status, _ in results]
    assert statuses.count(401) == 10, statuses
    assert statuses.count(429) == 50
    assert all(retry and 1 <= int(retry) <= 60 for status, retry in results if status == 429)
    # and the address is refused before any lookup, even with a good token, for the window
    good = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]
    refused = requests.get(calls[1][1], headers={"Authorization": f"Bearer {good}"}, timeout=60)
    assert refused.status_code == 429 and refused.json()["error"]["scope"] == "auth_failures"


def test_the_mcp_endpoint_counts_each_request_of_a_real_mcp_client_against_its_tokens_limit(
    redis_limited_server, agent, admin_user, candidate
):
    import anyio
    import requests
    from mcp import Client, MCPError

    from tests.library.test_mcp import http_client

    # given: 8 requests a minute per read token (MCP with a read token counts against select)
    make_active(candidate, admin_user)
    agent_settings_update(agent=agent, user=admin_user, changes={"api_rate_limits": {"select": {"token": "8/minute"}}})
    read = token_create(agent=agent, scope=ApiToken.Scope.READ, name="mcp read", user=admin_user)[1]
    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="mcp ingest", user=admin_user)[1]
    answers: list = []
    sent: list[tuple[str, int]] = []  # (JSON-RPC method, HTTP status) of each request the client sent

    async def record(response) -> None:
        sent.append((json.loads(response.request.content or b"{}").get("method", ""), response.status_code))

    async def recall_ten_times() -> None:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {read}"}, timeout=120, event_hooks={"response": [record]}
        )
        transport = streamable_http_client(f"{redis_limited_server}/api/v1/agents/{agent.name}/mcp", http_client=http)
        async with Client(transport, read_timeout_seconds=120) as client:
            for _ in range(10):
                answers.append(
                    await client.call_tool("recall_procedures", {"task": "refund 900 dollars", "intent": None})
                )

    # when: the official SDK's client recalls ten times in one session
    with pytest.raises(BaseExceptionGroup) as failed:
        anyio.run(recall_ten_times)
    # then: every request of the session counts (server/discover, or initialize and its notification,
    # and whatever else this SDK version sends besides the calls), so the first eight pass and the
    # ninth is refused; every recall among the eight was answered, and the refused one is reported to
    # the client as an error
    assert [status for _, status in sent[:8]] == [status for _, status in sent[:8] if status in (200, 202)]
    assert sent[8][1] == 429 and len(sent) == 9, sent
    recalls = [method for method, _ in sent[:8]].count("tools/call")
    assert recalls >= 4, sent
    assert len(answers) == recalls and all(not answer.is_error for answer in answers)
    assert failed.group_contains(MCPError)
    refused = requests.post(
        f"{redis_limited_server}/api/v1/agents/{agent.name}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {read}", "Accept": "application/json, text/event-stream"},
        timeout=60,
    )
    assert refused.status_code == 429 and 1 <= int(refused.headers["Retry-After"]) <= 60
    # a JSON-RPC error whose data keeps the agent API error's fields
    refusal = refused.json()["error"]["data"]
    assert refusal["status"] == 429 and refusal["scope"] == "token" and refusal["limit"] == "8/minute"

    # and an ingest token of the agent counts against ingest, not select: its session goes on
    async def ingest_tools() -> list[str]:
        async with http_client(redis_limited_server, ingest) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    assert anyio.run(ingest_tools) == ["report_session"]
