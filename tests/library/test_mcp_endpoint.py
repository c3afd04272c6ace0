"""The server's MCP endpoint in process (library/api/mcp_endpoint.py): the read path keeps one MCP
server and session manager per thread and agent, and each request still gets its own agent, token
scope and served set. (The official SDK client against a live server: test_mcp.py.)"""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from library.api.tokens import token_create
from library.models import Agent, ApiToken
from tests.conftest import make_active

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("readonly_shares_default")]

REFUND_TASK = "A customer wants a refund of 900 dollars for order 1234, above my limit."
HEADERS = {"HTTP_ACCEPT": "application/json, text/event-stream", "HTTP_MCP_PROTOCOL_VERSION": "2025-11-25"}
INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}


def call(client, agent: str, raw: str, method: str, params: dict) -> dict:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    response = client.post(
        reverse("api:mcp", kwargs={"agent": agent}),
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
        **HEADERS,
    )
    assert response.status_code == 200, response.content
    return response.json()["result"]


def test_the_kept_server_answers_each_request_for_its_own_agent_and_token(client, agent, candidate, admin_user):
    # given: two agents, one with an ACTIVE procedure, and their read tokens; and an ingest token
    make_active(candidate, admin_user)
    billing = Agent.objects.create(name="billing_agent", tools=["lookupOrder"])
    read = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read")[1]
    billing_read = token_create(agent=billing, scope=ApiToken.Scope.READ, name="read")[1]
    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest")[1]
    selected = client.get(
        reverse("api:select", kwargs={"agent": "support_agent"}),
        {"task": REFUND_TASK},
        HTTP_AUTHORIZATION=f"Bearer {read}",
    ).json()["rendered"]
    # when: their requests alternate in this one thread, twice over (the second round on the kept servers)
    for _ in range(2):
        # then: each answer is the request's own agent's, scope's and set's
        assert "support_agent" in call(client, "support_agent", read, "initialize", INITIALIZE)["instructions"]
        assert "billing_agent" in call(client, "billing_agent", billing_read, "initialize", INITIALIZE)["instructions"]
        recall = call(
            client,
            "support_agent",
            read,
            "tools/call",
            {"name": "recall_procedures", "arguments": {"task": REFUND_TASK}},
        )
        assert recall["structuredContent"]["rendered"] == selected
        assert [r["uri"] for r in call(client, "support_agent", read, "resources/list", {})["resources"]] == [
            "procmem://support_agent/procedures/refund.over_limit",
            "skill://refund-over-limit/v1",
        ]
        assert call(client, "billing_agent", billing_read, "resources/list", {})["resources"] == []
        billing_recall = call(
            client,
            "billing_agent",
            billing_read,
            "tools/call",
            {"name": "recall_procedures", "arguments": {"task": REFUND_TASK}},
        )
        assert billing_recall["structuredContent"]["injected"] == []
        tools = [tool["name"] for tool in call(client, "support_agent", ingest, "tools/list", {})["tools"]]
        assert tools == ["report_session"]
        assert [tool["name"] for tool in call(client, "support_agent", read, "tools/list", {})["tools"]] == [
            "recall_procedures"
        ]


def test_a_read_token_is_reused_for_the_recheck_interval_and_an_ingest_token_read_every_time(client, agent, settings):
    # given: the set and a read token may be reused for a minute, as the select endpoint reuses them
    settings.PROCMEM_ACTIVE_SET_RECHECK_SECONDS = 60
    read = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read")[1]
    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest")[1]
    table = ApiToken._meta.db_table

    def token_reads(raw: str) -> int:
        with CaptureQueriesContext(connection) as queries:
            call(client, "support_agent", raw, "tools/list", {})
        return sum(f'FROM "{table}"' in query["sql"] for query in queries.captured_queries)

    # when / then: the second read request looks no token up; every ingest request does
    assert [token_reads(read), token_reads(read)] == [1, 0]
    assert [token_reads(ingest), token_reads(ingest)] == [1, 1]
