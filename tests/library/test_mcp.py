"""procmem over MCP, driven by the official MCP client SDK against a live server (gunicorn):
`procmem-mcp` started over stdio, and the server's own streamable HTTP endpoint. Both list the
tools, answer recall_procedures with exactly the select endpoint's block, and list one resource per
ACTIVE procedure; `procmem-mcp` still answers from the last good set once the server is stopped."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

import anyio
import pytest
import requests
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from library.api.tokens import token_create
from library.models import AgentSession, ApiToken
from tests.conftest import REPO, make_active

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

REFUND_TASK = "A customer wants a refund of 900 dollars for order 1234, above my limit."
STATUS_TASK = "Where is my order? It has not arrived yet."


def procmem_mcp() -> str:
    """The `procmem-mcp` console script of this interpreter's environment."""
    script = Path(sys.executable).with_name("procmem-mcp")
    found = str(script) if script.exists() else shutil.which("procmem-mcp")
    assert found, "procmem-mcp is not installed: pip install -e './clients/python[mcp]'"
    return found


@pytest.fixture
def served(agent, candidate, other_procedure, admin_user):
    make_active(candidate, admin_user)
    make_active(other_procedure.versions.get(number=1), admin_user)
    read = token_create(agent=agent, scope=ApiToken.Scope.READ, name="mcp read", user=admin_user)[1]
    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="mcp ingest", user=admin_user)[1]
    return agent, read, ingest


def selected_block(base: str, token: str, task: str) -> dict:
    response = requests.get(
        f"{base}/api/v1/agents/support_agent/select",
        params={"task": task},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    return response.json()


def stdio_parameters(base: str, read: str, ingest: str | None = None) -> StdioServerParameters:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(REPO / "clients" / "python"), os.environ.get("PYTHONPATH", "")])
        ),
        "HF_HUB_OFFLINE": "1",
        "PROCMEM_URL": base,
        "PROCMEM_AGENT": "support_agent",
        "PROCMEM_TOKEN": read,
        **({"PROCMEM_INGEST_TOKEN": ingest} if ingest else {}),
    }
    if os.environ.get("EMBEDDING_MODEL_PATH"):
        env["EMBEDDING_MODEL_PATH"] = os.environ["EMBEDDING_MODEL_PATH"]
    # --refresh-interval 0: every recall revalidates the set (a 304 while it is unchanged), so the
    # answer after the server stops is the cache's, and says so
    return StdioServerParameters(command=procmem_mcp(), args=["--refresh-interval", "0"], env=env)


def test_procmem_mcp_over_stdio_recalls_the_select_block_and_survives_the_server_stopping(gunicorn_process, served):
    agent, read, ingest = served
    base = gunicorn_process.url
    refund = selected_block(base, read, REFUND_TASK)
    status = selected_block(base, read, STATUS_TASK)
    assert refund["injected"][0]["id"] == "refund.over_limit" and refund["rendered"]
    answers: dict = {}

    async def session() -> None:
        async with Client(stdio_parameters(base, read, ingest), read_timeout_seconds=120) as client:
            answers["tools"] = {tool.name: tool for tool in (await client.list_tools()).tools}
            answers["refund"] = await client.call_tool("recall_procedures", {"task": REFUND_TASK})
            answers["status"] = await client.call_tool("recall_procedures", {"task": STATUS_TASK})
            answers["resources"] = (await client.list_resources()).resources
            answers["read"] = await client.read_resource(answers["resources"][0].uri)
            answers["bad"] = await client.call_tool("recall_procedures", {"task": "  "})
            answers["report"] = await client.call_tool(
                "report_session",
                {
                    "session_id": "mcp-1",
                    "task": REFUND_TASK,
                    "resolved": True,
                    "tool_calls": [{"name": "lookupOrder", "args": {"order_id": "1234"}}],
                    "injected": answers["refund"].structured_content["injected"],
                },
            )
            # the server goes down: the last good set answers, and the answer says it is stale
            await anyio.to_thread.run_sync(gunicorn_process.stop)
            answers["stale"] = await client.call_tool("recall_procedures", {"task": REFUND_TASK})

    anyio.run(session)

    tools = answers["tools"]
    assert set(tools) == {"recall_procedures", "report_session"}
    assert tools["recall_procedures"].input_schema["required"] == ["task"]
    for name, expected in (("refund", refund), ("status", status)):
        result = answers[name]
        assert not result.is_error
        assert (
            result.structured_content["rendered"] == expected["rendered"]
        )  # byte for byte the select endpoint's block
        assert result.content[0].text == expected["rendered"]
        assert result.structured_content["injected"] == [
            {"id": p["id"], "version": p["version"]} for p in expected["injected"]
        ]
        assert result.structured_content["stale"] is False
    procedures = [r for r in answers["resources"] if str(r.uri).startswith("procmem://")]
    assert sorted(resource.name for resource in procedures) == ["order.status", "refund.over_limit"]
    assert sorted(str(r.uri) for r in answers["resources"] if str(r.uri).startswith("skill://")) == [
        "skill://order-status/v1",
        "skill://refund-over-limit/v1",
    ]
    first = answers["resources"][0]
    assert str(first.uri) == f"procmem://support_agent/procedures/{first.name}"
    assert (
        answers["read"]
        .contents[0]
        .text.startswith(f"Procedure {first.name} v1 (source: written by reviewers; approved by admin")
    )
    assert answers["bad"].is_error and "task must be a non-empty string" in answers["bad"].content[0].text
    assert not answers["report"].is_error, answers["report"].content[0].text
    assert answers["report"].structured_content["counts"]["stored"] == 1
    stored = AgentSession.objects.get(agent=agent, session_id="mcp-1")
    assert [(i["id"], i["version"]) for i in stored.injected] == [(p["id"], p["version"]) for p in refund["injected"]]

    stale = answers["stale"]
    assert not stale.is_error
    assert stale.structured_content["rendered"] == refund["rendered"]
    assert stale.structured_content["stale"] is True
    assert "last good set" in stale.structured_content["note"]


def test_procmem_mcp_without_an_ingest_token_offers_no_report_tool(gunicorn_server, served):
    _, read, _ = served

    async def session() -> list[str]:
        async with Client(stdio_parameters(gunicorn_server, read), read_timeout_seconds=120) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            refused = await client.call_tool("report_session", {"session_id": "x", "task": "t", "resolved": True})
            assert refused.is_error and "offers: recall_procedures" in refused.content[0].text
            return names

    assert anyio.run(session) == ["recall_procedures"]


def http_client(base: str, token: str) -> Client:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
    return Client(
        streamable_http_client(f"{base}/api/v1/agents/support_agent/mcp", http_client=http), read_timeout_seconds=120
    )


def test_the_servers_mcp_endpoint_answers_remote_clients_behind_token_auth(gunicorn_server, served):
    agent, read, ingest = served
    refund = selected_block(gunicorn_server, read, REFUND_TASK)
    answers: dict = {}

    async def sessions() -> None:
        async with http_client(gunicorn_server, read) as client:
            answers["read_tools"] = [tool.name for tool in (await client.list_tools()).tools]
            answers["refund"] = await client.call_tool("recall_procedures", {"task": REFUND_TASK, "intent": None})
            listed = (await client.list_resources()).resources
            answers["resources"] = sorted(r.name for r in listed if str(r.uri).startswith("procmem://"))
            answers["skills"] = {str(r.uri): r for r in listed if str(r.uri).startswith("skill://")}
            answers["skill_md"] = {
                uri: (await client.read_resource(uri)).contents[0] for uri in sorted(answers["skills"])
            }
            answers["not_offered"] = await client.call_tool(
                "report_session", {"session_id": "h-1", "task": "t", "resolved": True}
            )
        async with http_client(gunicorn_server, ingest) as client:
            answers["ingest_tools"] = [tool.name for tool in (await client.list_tools()).tools]
            answers["report"] = await client.call_tool(
                "report_session",
                {
                    "session_id": "http-1",
                    "task": REFUND_TASK,
                    "resolved": False,
                    "injected": answers["refund"].structured_content["injected"],
                },
            )

    anyio.run(sessions)
    assert answers["read_tools"] == ["recall_procedures"]
    assert answers["refund"].structured_content["rendered"] == refund["rendered"]
    assert answers["refund"].content[0].text == refund["rendered"]
    assert answers["refund"].structured_content["setEtag"] == refund["setEtag"]
    assert answers["resources"] == ["order.status", "refund.over_limit"]
    # the served skills as resources: each SKILL.md byte for byte what the well-known URL serves
    index = requests.get(
        f"{gunicorn_server}/.well-known/agent-skills/index.json",
        headers={"Authorization": f"Bearer {read}"},
        timeout=60,
    ).json()
    assert sorted(answers["skills"]) == sorted(
        f"skill://{entry['name']}/v{entry['procmemVersion']}" for entry in index["skills"]
    )
    for entry in index["skills"]:
        uri = f"skill://{entry['name']}/v{entry['procmemVersion']}"
        assert answers["skills"][uri].description == entry["description"]
        content = answers["skill_md"][uri]
        assert content.mime_type == "text/markdown"
        assert "sha256:" + hashlib.sha256(content.text.encode("utf-8")).hexdigest() == entry["digest"]
    assert answers["not_offered"].is_error
    assert answers["ingest_tools"] == ["report_session"]
    assert answers["report"].structured_content["counts"]["stored"] == 1
    assert AgentSession.objects.get(agent=agent, session_id="http-1").resolved is False


def test_the_servers_mcp_endpoint_refuses_without_a_token_or_with_another_agents(gunicorn_server, served, admin_user):
    from library.models import Agent

    other = Agent.objects.create(name="other_agent", tools=[])
    stranger = token_create(agent=other, scope=ApiToken.Scope.READ, name="other", user=admin_user)[1]
    url = f"{gunicorn_server}/api/v1/agents/support_agent/mcp"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    none = requests.post(url, json=body, headers=headers, timeout=60)
    assert none.status_code == 401 and none.headers["WWW-Authenticate"] == 'Bearer realm="procmem"'
    assert none.json()["id"] == 1 and none.json()["error"]["data"] == {"status": 401, "code": "unauthorized"}
    wrong = requests.post(url, json=body, headers={**headers, "Authorization": f"Bearer {stranger}"}, timeout=60)
    assert wrong.status_code == 403 and wrong.json()["error"]["data"]["code"] == "wrong_agent"
    assert "belongs to agent 'other_agent'" in wrong.json()["error"]["message"]


def test_a_get_stream_is_refused_at_once_and_holds_no_worker(gunicorn_server, served):
    """Issue 42: a GET with Accept: text/event-stream opened a stream that never ended; three held
    every sync worker. The server (2 workers × 4 threads) gets three times its threads in GETs at
    once: each is a 405 naming POST, and the SDK client still works right after."""
    from concurrent.futures import ThreadPoolExecutor

    _, read, _ = served
    url = f"{gunicorn_server}/api/v1/agents/support_agent/mcp"
    stream = {"Authorization": f"Bearer {read}", "Accept": "text/event-stream"}

    def get(_: int) -> requests.Response:
        return requests.get(url, headers=stream, timeout=(10, 20), stream=True)

    with ThreadPoolExecutor(24) as pool:
        answers = list(pool.map(get, range(24)))
    for answer in answers:
        assert answer.status_code == 405 and answer.headers["Allow"] == "POST"
        assert answer.headers["Content-Type"] == "application/json"
        assert "no GET stream" in answer.json()["error"]["message"]
    deleted = requests.delete(url, headers={**stream, "Mcp-Session-Id": "x"}, timeout=20)
    assert deleted.status_code == 405
    # without a token too: the method is refused before any token lookup
    assert requests.get(url, headers={"Accept": "text/event-stream"}, timeout=20).status_code == 405

    async def recall() -> str:
        async with http_client(gunicorn_server, read) as client:
            return (await client.call_tool("recall_procedures", {"task": REFUND_TASK})).content[0].text

    assert anyio.run(recall) == selected_block(gunicorn_server, read, REFUND_TASK)["rendered"]


def test_a_wrong_token_is_reported_by_the_sdk_client_over_http(gunicorn_server, served):
    """Issue 39: the SDK showed only "Server returned an error response" for the 401. Now the 401
    has a Bearer challenge (error="invalid_token") and a JSON-RPC error the client raises."""
    from mcp.shared.exceptions import MCPError

    url = f"{gunicorn_server}/api/v1/agents/support_agent/mcp"
    raw = requests.post(
        url,
        json={"jsonrpc": "2.0", "id": "a", "method": "tools/list"},
        headers={"Authorization": "Bearer pm_wrong", "Accept": "application/json, text/event-stream"},
        timeout=60,
    )
    assert raw.status_code == 401
    assert raw.headers["WWW-Authenticate"] == 'Bearer realm="procmem", error="invalid_token"'

    async def connect() -> None:
        async with http_client(gunicorn_server, "pm_wrong") as client:
            await client.list_tools()

    with pytest.raises(BaseException) as refused:  # the SDK raises it out of its task groups
        anyio.run(connect)
    error = refused.value
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    assert isinstance(error, MCPError), refused.value
    assert str(error) == "Unauthorized: The token is unknown, revoked or expired. (HTTP 401 unauthorized)"


def test_procmem_mcp_with_a_wrong_token_fails_the_tool_and_says_why(gunicorn_server, served):
    """Issue 39: with a wrong token procmem-mcp answered "No reviewed procedure applies to this
    task." and an agent went on without procedures. Now the tool fails (isError) naming the cause,
    with the server's ranking and with local ranking alike; listing the resources fails too."""
    from mcp.shared.exceptions import MCPError

    answers: dict = {}

    async def session(local: str) -> None:
        parameters = stdio_parameters(gunicorn_server, "pm_wrong")
        parameters.args = [*parameters.args, "--local-ranking", local]
        async with Client(parameters, read_timeout_seconds=120) as client:
            answers[local] = await client.call_tool("recall_procedures", {"task": REFUND_TASK})
            with pytest.raises(MCPError) as refused:
                await client.list_resources()
            answers[f"{local} resources"] = str(refused.value)

    for local in ("no", "yes"):
        anyio.run(session, local)
        result = answers[local]
        assert result.is_error, result.content[0].text
        text = result.content[0].text
        assert "procmem refused the read token for agent support_agent (HTTP 401" in text
        assert "The token is unknown, revoked or expired." in text and "check PROCMEM_TOKEN" in text
        assert "No reviewed procedure applies" not in text
        assert "procmem refused the read token" in answers[f"{local} resources"]
