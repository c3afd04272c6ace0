"""procmem_client.mcp_server without Django: the MCP SDK's in-process client against `build_server`
over a `ClientBackend` and the fake procmem server (the live-server tests, stdio and the server's
own endpoint, are in tests/library/test_mcp.py), and the tool arguments fuzzed with Hypothesis."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

import anyio  # noqa: E402 (comes with the [mcp] extra: a fresh install of the client without it has none)
from mcp import Client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from procmem_client import ProcmemClient  # noqa: E402
from procmem_client.mcp_server import (  # noqa: E402
    ClientBackend,
    ToolInputError,
    build_server,
    recall_arguments,
    report_record,
)
from procmem_client.rendering import render_block, render_procedure  # noqa: E402
from procmem_client.skill_rendering import render_skill  # noqa: E402


def backend_for(server, fake, **options) -> ClientBackend:
    return ClientBackend(
        ProcmemClient(base_url=server.url, agent=fake.agent, token=fake.token, local_ranking=False, **options)
    )


def test_recall_renders_the_selection_with_the_one_renderer_and_lists_the_procedures(server, fake):
    backend = backend_for(server, fake, ingest_token="pm_ingest")
    seen: dict = {}

    async def session() -> None:
        async with Client(build_server(backend)) as client:
            seen["tools"] = [tool.name for tool in (await client.list_tools()).tools]
            seen["recall"] = await client.call_tool(
                "recall_procedures", {"task": "refund of 900 dollars", "intent": "refund_over_limit"}
            )
            seen["resources"] = (await client.list_resources()).resources
            seen["read"] = await client.read_resource("procmem://support_agent/procedures/order.status")
            seen["skill"] = await client.read_resource("skill://order-status/v1")
            try:
                await client.read_resource("skill://order-status/v9")
            except MCPError as error:
                seen["no_skill"] = str(error)
            seen["report"] = await client.call_tool(
                "report_session", {"session_id": "s-1", "task": "refund", "resolved": True}
            )

    anyio.run(session)
    assert seen["tools"] == ["recall_procedures", "report_session"]
    served = [p for p in fake.requests if p["path"].endswith("/select")][0]
    # the task's files asked for: a coding procedure's pointer names them (none here: no pointers in the answer)
    assert served["query"] == {
        "task": ["refund of 900 dollars"],
        "intent": ["refund_over_limit"],
        "taskFiles": ["True"],
    }
    assert "pointers" not in seen["recall"].structured_content and len(seen["recall"].content) == 1
    refund = [p for p in __import__("json").loads(fake.active_set())["procedures"] if p["id"] == "refund.over_limit"]
    expected = render_block(refund)["text"]
    assert seen["recall"].content[0].text == expected
    assert seen["recall"].structured_content["injected"] == [{"id": "refund.over_limit", "version": 1}]
    procedures = [r.name for r in seen["resources"] if str(r.uri).startswith("procmem://")]
    assert procedures == ["order.status", "refund.over_limit"]
    assert seen["read"].contents[0].text == render_procedure(fake.procedures[0])
    # the served skills too, each with its SKILL.md as the skill renderer writes it
    skills = {str(r.uri): r for r in seen["resources"] if str(r.uri).startswith("skill://")}
    assert list(skills) == ["skill://order-status/v1", "skill://refund-over-limit/v1"]
    assert skills["skill://order-status/v1"].mime_type == "text/markdown"
    assert seen["skill"].contents[0].text == render_skill(fake.procedures[0])["files"]["SKILL.md"]
    assert "no served skill at skill://order-status/v9" in seen["no_skill"]
    posted = [r for r in fake.requests if r["method"] == "POST" and r["path"].endswith("/sessions")]
    assert posted and posted[0]["headers"]["Authorization"] == "Bearer pm_ingest"


def test_when_the_select_endpoint_fails_the_answer_says_so(server, fake):
    backend = backend_for(server, fake)
    fake.status = 503

    async def call():
        async with Client(build_server(backend)) as client:
            return await client.call_tool("recall_procedures", {"task": "refund"})

    result = anyio.run(call)
    assert not result.is_error
    assert result.structured_content["stale"] is True and result.structured_content["injected"] == []
    assert "HTTP 503" in result.structured_content["note"]


arguments = st.dictionaries(
    st.sampled_from(["task", "intent", "session_id", "resolved", "tool_calls", "injected", "model", "rating", "other"]),
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.text(max_size=30),
        st.just("x" * 9000),
        st.lists(
            st.one_of(
                st.text(max_size=5),
                st.dictionaries(
                    st.sampled_from(["id", "version", "name"]),
                    st.one_of(st.text(max_size=5), st.integers(), st.booleans()),
                ),
            )
        ),
    ),
)


@settings(max_examples=300, deadline=None)
@given(arguments)
def test_tool_arguments_are_accepted_or_refused_with_the_argument_named(given_arguments):
    for check in (recall_arguments, lambda a: report_record("support_agent", a)):
        try:
            check(given_arguments)
        except ToolInputError as exc:
            assert any(name in str(exc) for name in (*given_arguments, "task", "session_id", "resolved")), str(exc)


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["--agent", "a", "--token", "pm_x"], "procmem-mcp: missing --url (or PROCMEM_URL)"),
        (
            ["--url", "127.0.0.1:8000", "--agent", "a", "--token", "pm_x"],
            "procmem-mcp: --url (or PROCMEM_URL) must be procmem's address, http://… or https://…; got '127.0.0.1:8000'",
        ),
    ],
)
def test_procmem_mcp_refuses_a_missing_or_bad_address_at_start(argv, expected, monkeypatch):
    """An address without http:// used to start the server; every recall then failed with urllib's
    "unknown url type", a tool error the agent saw instead of the operator at start."""
    from procmem_client.mcp_server import main

    for name in ("PROCMEM_URL", "PROCMEM_AGENT", "PROCMEM_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert str(exited.value) == expected
