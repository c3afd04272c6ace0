"""The client against a fake procmem server (no Django): ETag revalidation and gzip, the refresh
interval, the server failing or going down (the last good set is kept), background refresh,
selection locally (with a ranker) or on the server (without the embeddings extra), the ADK
instruction provider, and session reports."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from procmem_client import ProcmemClient, ProcmemError, session_record
from procmem_client.client import STATE_INJECTED, STATE_INSTRUCTION_CHARS, STATE_SET_ETAG
from procmem_client.ranking import EmbeddingCache, Ranker
from procmem_client.rendering import HEADER, render_procedure


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def keyword_ranker() -> Ranker:
    """A ranker whose "model" puts refund texts on one axis and everything else on another, so the
    local path runs without the embeddings extra."""

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray([[1.0, 0.0] if "refund" in t.lower() else [0.0, 1.0] for t in texts], dtype=np.float32)

    return Ranker(cache=EmbeddingCache(embed))


def test_fetches_revalidates_and_keeps_the_last_good_set_when_the_server_goes_down(server, fake):
    clock = FakeClock()
    client = ProcmemClient(
        base_url=server.url, agent=fake.agent, token=fake.token, refresh_interval=30, retry_interval=5, clock=clock
    )
    assert [p["id"] for p in client.procedures()] == ["order.status", "refund.over_limit"]
    assert client.fetches == 1 and client.etag and client.last_error is None and client.has_set
    assert client.last_content_encoding == "gzip"

    clock.now += 10  # within the refresh interval: from memory
    client.procedures()
    assert client.fetches == 1
    clock.now += 30  # revalidated with If-None-Match: 304, the set is kept
    assert len(client.procedures()) == 2
    assert client.fetches == 2 and client.not_modified == 1
    assert fake.requests[-1]["headers"]["If-None-Match"] == client.etag

    fake.procedures[1] = {**fake.procedures[1], "version": 2}  # a new approval: a new ETag
    clock.now += 31
    assert ("refund.over_limit", 2) in [(p["id"], p["version"]) for p in client.procedures()]
    good = client.etag

    server.stop()  # down: the last good set stays, the error is recorded, retried after retry_interval
    clock.now += 31
    assert ("refund.over_limit", 2) in [(p["id"], p["version"]) for p in client.procedures()]
    assert client.last_error.startswith("URLError") and client.etag == good
    fetches = client.fetches
    client.procedures()
    assert client.fetches == fetches
    clock.now += 6
    client.procedures()
    assert client.fetches == fetches + 1


def test_http_errors_keep_the_last_good_set_and_a_client_starts_empty(server, fake):
    clock = FakeClock()
    bad = ProcmemClient(base_url=server.url, agent=fake.agent, token="pm_wrong", clock=clock, ranker=keyword_ranker())
    assert bad.procedures() == [] and "HTTP 401" in bad.last_error and not bad.has_set
    # the server's message and code, and which request, not the raw JSON body
    assert bad.last_error == f"HTTP 401 from GET /api/v1/agents/{fake.agent}/procedures: bad token (unauthorized)"
    assert bad.select(task="refund above the limit")["injected"] == []

    client = ProcmemClient(base_url=server.url, agent=fake.agent, token=fake.token, refresh_interval=1, clock=clock)
    assert len(client.procedures()) == 2
    fake.status = 500
    clock.now += 2
    assert len(client.procedures()) == 2 and "HTTP 500" in client.last_error


def test_background_refresh_picks_up_a_change(server, fake):
    client = ProcmemClient(base_url=server.url, agent=fake.agent, token=fake.token, refresh_interval=0.1)
    client.start_background_refresh()
    try:
        deadline = time.monotonic() + 10
        while not client.has_set and time.monotonic() < deadline:
            time.sleep(0.02)
        assert {p["id"] for p in client.active_set()["procedures"]} == {"order.status", "refund.over_limit"}
        fake.procedures = [fake.procedures[0]]  # refund.over_limit retired
        while time.monotonic() < deadline and len(client.active_set()["procedures"]) != 1:
            time.sleep(0.02)
        assert {p["id"] for p in client.active_set()["procedures"]} == {"order.status"}
    finally:
        client.close()


def test_local_ranking_selects_and_renders_with_the_shared_code(server, fake):
    client = ProcmemClient(base_url=server.url, agent=fake.agent, token=fake.token, ranker=keyword_ranker())
    assert client.local_ranking
    selection = client.select(task="A refund of 900 dollars, above the approval limit", k=2)
    assert [p["id"] for p in selection["injected"]] == ["refund.over_limit"]
    text, injected = client.instruction_for(
        task="A refund of 900 dollars, above the approval limit", base_instruction="You are support."
    )
    assert text == "You are support.\n\n" + HEADER + "\n\n" + render_procedure(
        fake.procedures[1]
    )  # the one block renderer
    assert injected[0]["rendered"] == render_procedure(fake.procedures[1])  # the server's text, byte for byte
    assert client.instruction_for(task="   ")[1] == []


def test_without_the_embeddings_extra_the_server_selects(server, fake):
    client = ProcmemClient(base_url=server.url, agent=fake.agent, token=fake.token, local_ranking=False)
    text, injected = client.instruction_for(task="Refund of $900, above my limit?", intent="refund_over_limit")
    request = fake.requests[-1]
    # POST with the task in the body: no URL (so no access log) carries it
    assert request["method"] == "POST" and request["path"] == "/api/v1/agents/support_agent/select"
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["query"] == {"task": ["Refund of $900, above my limit?"], "intent": ["refund_over_limit"]}
    assert request["headers"]["Authorization"] == "Bearer pm_read"
    assert [p["id"] for p in injected] == ["refund.over_limit"] and client.fetches == 0 and client.selects == 1
    assert text.endswith(render_procedure(fake.procedures[1]))
    assert client.selected_set_etag == fake.etag()
    assert client.select(task="Refund", k=3)["cap"] == 2 and fake.requests[-1]["query"]["k"] == ["3"]
    with pytest.raises(ValueError):
        client.select(task=" ")

    fake.status = 503  # the server fails: nothing injected, the agent runs on
    assert client.instruction_for(task="Refund please", base_instruction="Base.") == ("Base.", [])
    assert "HTTP 503" in client.last_error
    server.stop()
    assert client.select(task="Refund please")["injected"] == [] and client.last_error.startswith("URLError")


def test_instruction_provider_writes_the_injected_ids_into_the_session_state(server, fake):
    client = ProcmemClient(base_url=server.url, agent=fake.agent, token=fake.token, local_ranking=False)
    provider = client.instruction_provider(base_instruction="You are the support agent.")

    class Session:
        state: dict = {}

    class Context:  # the shape of google.adk's ReadonlyContext that the provider reads
        user_content = {"parts": [{"text": "I need a refund of 900 dollars, above your limit."}]}
        state = {"intent": "refund_over_limit"}
        session = Session()

    text = provider(Context())
    assert text.startswith("You are the support agent.") and "Procedure refund.over_limit v1" in text
    assert Session.state[STATE_INJECTED] == [{"id": "refund.over_limit", "version": 1}]
    assert Session.state[STATE_INSTRUCTION_CHARS] == len(text) and Session.state[STATE_SET_ETAG] == fake.etag()

    class CallbackContext:
        session = Session()
        state: dict = {}

    ProcmemClient.adk_before_model_callback(CallbackContext(), None)
    assert CallbackContext.state[STATE_INJECTED] == [{"id": "refund.over_limit", "version": 1}]


def test_report_session_posts_procmem_jsonl_with_the_ingest_token(server, fake):
    client = ProcmemClient(base_url=server.url, agent="support_agent", token="pm_read", ingest_token="pm_ingest")
    answer = client.report_session(
        session_id="s-1",
        task="Refund above limit",
        resolved=True,
        escalated=False,
        rating=4.5,
        intent="refund_over_limit",
        tool_calls=[{"name": "lookupOrder", "args": {"order_id": "1"}, "ok": True}],
        injected=[{"id": "refund.over_limit", "version": 3, "rendered": "…"}],
        instruction_chars=812,
        model="gemini-2.0-flash",
        ended_at="2026-11-29T12:00:00Z",
    )
    assert answer == {"stored": 1, "duplicates": 0, "refused": []}
    request = fake.requests[0]
    assert request["path"] == "/api/v1/sessions"
    assert request["headers"]["Authorization"] == "Bearer pm_ingest"
    assert request["headers"]["Content-Type"] == "application/x-ndjson"
    lines = request["body"].splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0]) == {
        "session_id": "s-1",
        "agent": "support_agent",
        "intent": "refund_over_limit",
        "task": "Refund above limit",
        "outcome": {"resolved": True, "escalated": False, "rating": 4.5},
        "tool_calls": [{"name": "lookupOrder", "args": {"order_id": "1"}, "ok": True}],
        "injected": [{"id": "refund.over_limit", "version": 3}],
        "instruction_chars": 812,
        "model": "gemini-2.0-flash",
        "ended_at": "2026-11-29T12:00:00Z",
    }
    # a batch is one line per session; an error answer raises with the status and the server's detail
    client.report_sessions(
        [session_record(session_id=f"s-{i}", agent="support_agent", task="t", resolved=False) for i in range(3)]
    )
    assert len(fake.requests[1]["body"].splitlines()) == 3
    with pytest.raises(ProcmemError) as caught:
        client.report_session(session_id="bad", task="bad", resolved=None, injected=[])
    assert caught.value.status == 400 and caught.value.body["error"]["code"] == "invalid"
    with pytest.raises(ProcmemError):
        ProcmemClient(base_url=server.url, agent="a", token="pm_read").report_sessions([])


def test_http_failure_names_the_request_and_the_servers_message():
    from procmem_client.client import http_failure

    body = b'{"error": {"code": "wrong_agent", "message": "This token belongs to agent \'a\', not \'b\'."}}'
    assert (
        http_failure(403, body, method="POST", url="http://procmem.test/api/v1/agents/b/select?x=1")
        == "HTTP 403 from POST /api/v1/agents/b/select: This token belongs to agent 'a', not 'b'. (wrong_agent)"
    )
    # not the API's error (a proxy's page): the text as it came, cut to 300 characters
    assert http_failure(502, "<html>" + "x" * 400, method="GET", url="http://p/api/v1/health").endswith("x" * 294)


@pytest.mark.parametrize("base_url", ["127.0.0.1:8000", "procmem.example.com", "ftp://procmem.example.com", ""])
def test_a_base_url_that_is_not_an_http_address_is_refused_at_construction(base_url):
    """It was accepted, and every fetch then recorded urllib's "unknown url type" in last_error."""
    with pytest.raises(ValueError, match=r"^base_url must be procmem's address, http://… or https://…; got "):
        ProcmemClient(base_url=base_url, agent="a", token="pm_x")


def test_a_refused_report_says_why():
    """ProcmemError said only "POST /api/v1/sessions answered 403"; the reason was in `.body` alone."""
    from procmem_client.client import refusal_reason

    scope = {"error": {"code": "wrong_scope", "message": "This is a read token: it may read the active set."}}
    assert refusal_reason(scope) == ": This is a read token: it may read the active set. (wrong_scope)"
    report = {
        "refused": [{"index": 0, "session_id": None, "errors": [{"field": "session_id", "message": "is required"}]}]
    }
    assert refusal_reason(report) == ": 1 refused, the first item 0: session_id is required"
    assert refusal_reason("<html>bad gateway") == ": <html>bad gateway" and refusal_reason({}) == ""
