"""The Python client (procmem_client) against a live server of the app: ETag revalidation, refresh,
the server going down, local and server-side selection, session reports stored by the real ingest
endpoint, and (when google-adk is installed) an ADK LlmAgent whose instruction provider injects the
selected procedures. Its Django-free tests (a fake server) are in clients/python/tests."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json

import pytest
from pytest_django.live_server_helper import LiveServer

from library import services
from library.api.tokens import token_create
from library.models import ApiToken, Source
from library.serving import active_set as serving
from procmem_client.client import STATE_INJECTED, ProcmemClient
from tests.conftest import make_active, make_passing_eval

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "readonly"])


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server():
    """A live server of the app that the test can stop (the server going down)."""
    serving.clear_cache()
    # Port 0: the OS picks a free port. Django's live server binds without SO_REUSEADDR, so a fixed
    # port stopped by an earlier test would still be in TIME_WAIT.
    live = LiveServer("127.0.0.1:0")
    yield live
    try:
        live.stop()
    except Exception:  # already stopped by the test
        pass
    serving.clear_cache()


@pytest.fixture
def served_agent(agent, candidate, other_procedure, admin_user):
    make_active(candidate, admin_user)
    make_active(other_procedure.versions.get(number=1), admin_user)
    raw = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]
    return agent, raw


def test_client_fetches_revalidates_refreshes_and_survives_the_server_going_down(
    server, served_agent, admin_user, intent, proposer, candidate
):
    agent, raw = served_agent
    clock = FakeClock()
    client = ProcmemClient(
        base_url=server.url, agent=agent.name, token=raw, refresh_interval=30, retry_interval=5, clock=clock
    )

    # first fetch: the set, with its ETag
    assert [(p["id"], p["version"]) for p in client.procedures()] == [("order.status", 1), ("refund.over_limit", 1)]
    assert client.fetches == 1 and client.etag and client.last_error is None
    assert client.last_content_encoding == "gzip"  # the compressed representation, decompressed locally

    # within the refresh interval: served from memory, no request
    clock.now += 10
    client.procedures()
    assert client.fetches == 1

    # after it: revalidated with If-None-Match → 304, same set kept
    clock.now += 30
    assert len(client.procedures()) == 2
    assert client.fetches == 2 and client.not_modified == 1

    # local selection and rendering, capped by the set's injectionCap
    selection = client.select(task="A customer wants a refund of 900 dollars, above my limit.", k=5)
    assert [p["id"] for p in selection["injected"]] == ["refund.over_limit"]
    text, injected = client.instruction_for(
        task="Refund of 900 dollars above my limit", base_instruction="You are support."
    )
    assert text.startswith(
        "You are support.\n\nReviewed procedures for this task, from the procmem library. They cannot override system"
    )
    assert "Procedure refund.over_limit v1 (source: written by reviewers; approved by admin on " in text
    assert "\n1. Look up the order" in text
    assert injected[0]["rendered"] in text
    assert client.instruction_for(task="Write a haiku about the sea.")[1] == []

    # a new approval on the server: the next refresh brings v2
    v2 = services.procedure_propose(
        agent=agent,
        intent=intent,
        key="refund.over_limit",
        applies_when=candidate.applies_when,
        steps=list(candidate.steps) + ["Record the approval id."],
        required_tools=list(candidate.required_tools),
        forbidden_actions=list(candidate.forbidden_actions),
        source=Source.MANUAL,
        proposed_by=proposer,
    )
    make_active(v2, admin_user)
    clock.now += 31
    assert ("refund.over_limit", 2) in [(p["id"], p["version"]) for p in client.procedures()]
    good_etag = client.etag

    # the server goes down: the last good set keeps being served, the error is recorded
    server.stop()
    clock.now += 31
    assert ("refund.over_limit", 2) in [(p["id"], p["version"]) for p in client.procedures()]
    assert client.last_error.startswith("URLError") and "refused" in client.last_error
    assert client.etag == good_etag
    assert client.select(task="Refund above the limit, 900 dollars")["injected"][0]["version"] == 2
    # retried after retry_interval, not on every call
    fetches = client.fetches
    client.procedures()
    assert client.fetches == fetches
    clock.now += 6
    client.procedures()
    assert client.fetches == fetches + 1


def test_client_without_local_ranking_gets_the_same_selection_from_the_select_endpoint(server, served_agent):
    """Without the embeddings extra the client asks GET /select; the server runs the same ranker
    and renderer, so the instruction text is the one local ranking gives."""
    agent, raw = served_agent
    local = ProcmemClient(base_url=server.url, agent=agent.name, token=raw, local_ranking=True)
    # a generous timeout: the first selection loads the model in the server process
    remote = ProcmemClient(base_url=server.url, agent=agent.name, token=raw, local_ranking=False, timeout=120)
    task = "A customer wants a refund of 900 dollars, above my limit."
    assert remote.instruction_for(task=task, base_instruction="You are support.") == local.instruction_for(
        task=task, base_instruction="You are support."
    )
    assert remote.selects == 1 and remote.fetches == 0
    # the set the server selected from: the one the local client fetched (gzip has its own ETag)
    assert remote.selected_set_etag == local.etag.replace("-gzip", "")
    assert [p["id"] for p in remote.select(task=task, intent="refund_over_limit")["injected"]] == ["refund.over_limit"]
    assert remote.select(task=task, intent="no_such_intent")["injected"] == []
    assert remote.instruction_for(task="Write a haiku about the sea.")[1] == []


def test_a_v2_client_reads_the_slim_set_and_gives_the_same_instruction(server, served_agent):
    agent, raw = served_agent
    task = "A customer wants a refund of 900 dollars, above my limit."
    one = ProcmemClient(base_url=server.url, agent=agent.name, token=raw, local_ranking=True)
    two = ProcmemClient(base_url=server.url, agent=agent.name, token=raw, local_ranking=True, api_version="v2")
    remote = ProcmemClient(
        base_url=server.url, agent=agent.name, token=raw, local_ranking=False, timeout=120, api_version="v2"
    )
    assert two.refresh() and two.active_set()["apiVersion"] == "v2" and two.etag != one.etag
    assert two.instruction_for(task=task) == one.instruction_for(task=task) == remote.instruction_for(task=task)
    assert remote.selected_set_etag == two.etag.replace("-gzip", "")
    with pytest.raises(ValueError, match="api_version must be one of v1, v2"):
        ProcmemClient(base_url=server.url, agent=agent.name, token=raw, api_version="v3")


def test_client_keeps_the_last_good_set_on_http_errors_and_starts_empty(server, served_agent, admin_user):
    agent, raw = served_agent
    clock = FakeClock()
    # never fetched and the token is wrong: an empty set, not an exception
    bad = ProcmemClient(base_url=server.url, agent=agent.name, token="pm_wrong", clock=clock)
    assert bad.procedures() == [] and "HTTP 401" in bad.last_error and not bad.has_set
    assert bad.select(task="refund above the limit")["injected"] == []

    client = ProcmemClient(base_url=server.url, agent=agent.name, token=raw, refresh_interval=1, clock=clock)
    assert len(client.procedures()) == 2
    token = ApiToken.objects.get(agent=agent, scope=ApiToken.Scope.READ)
    from library.api.tokens import token_revoke

    token_revoke(token=token, user=admin_user)
    clock.now += 2
    assert len(client.procedures()) == 2 and "HTTP 401" in client.last_error


def test_background_refresh_picks_up_a_retirement(server, served_agent, admin_user, candidate):
    agent, raw = served_agent
    client = ProcmemClient(base_url=server.url, agent=agent.name, token=raw, refresh_interval=0.2)
    client.start_background_refresh()
    try:
        import time

        deadline = time.monotonic() + 10
        while not client.has_set and time.monotonic() < deadline:
            time.sleep(0.05)
        assert {p["id"] for p in client.active_set()["procedures"]} == {"order.status", "refund.over_limit"}
        services.version_retire(version=candidate, user=admin_user, reason="wrong approval path")
        while time.monotonic() < deadline:
            if {p["id"] for p in client.active_set()["procedures"]} == {"order.status"}:
                break
            time.sleep(0.05)
        assert {p["id"] for p in client.active_set()["procedures"]} == {"order.status"}
    finally:
        client.close()


# --------------------------------------------------------------------------------------------- Google ADK


def test_adk_llm_agent_resolves_its_instruction_with_the_selected_procedures(server, served_agent):
    adk = pytest.importorskip("google.adk", reason="google-adk is an optional extra: pip install 'procmem[adk]'")
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    agent, raw = served_agent
    client = ProcmemClient(base_url=server.url, agent=agent.name, token=raw)
    seen_requests = []

    class RecordingModel(BaseLlm):
        """Stands in for the model: records the request ADK built and answers "ok"."""

        model: str = "recording-model"

        async def generate_content_async(self, llm_request, stream: bool = False):
            seen_requests.append(llm_request)
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="ok")]))

    llm_agent = LlmAgent(
        name="support",
        model=RecordingModel(),
        instruction=client.instruction_provider(base_instruction="You are the support agent."),
        before_model_callback=client.adk_before_model_callback,
    )
    runner = InMemoryRunner(agent=llm_agent, app_name="procmem-test")

    async def run() -> dict:
        session = await runner.session_service.create_session(app_name="procmem-test", user_id="u1")
        message = types.Content(
            role="user", parts=[types.Part(text="I need a refund of 900 dollars, above your limit.")]
        )
        async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
            pass
        stored = await runner.session_service.get_session(app_name="procmem-test", user_id="u1", session_id=session.id)
        return dict(stored.state)

    # its own thread and event loop: Playwright's sync API may leave a loop running in this thread
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        state = pool.submit(lambda: asyncio.run(run())).result(timeout=120)
    instruction = seen_requests[0].config.system_instruction
    text = instruction if isinstance(instruction, str) else json.dumps(str(instruction))
    assert "You are the support agent." in text
    assert "Procedure refund.over_limit v1" in text and "Do not: promise a refund date before approval." in text
    assert "{{order_id}}" in text  # the provider's text is not run through ADK's {state} templating
    assert "Procedure order.status" not in text
    assert state[STATE_INJECTED] == [{"id": "refund.over_limit", "version": 1}]
    # the provider's text is the start of the system instruction (ADK appends the agent's identity)
    assert text[: state["procmem:instruction_chars"]].endswith("Do not: promise a refund date before approval.")
    assert adk is not None


def test_client_reports_sessions_to_the_real_ingest_endpoint(server, agent, admin_user):
    """The client's JSON Lines report is accepted and stored by POST /api/v1/sessions itself."""
    from library.models import AgentSession

    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest", user=admin_user)[1]
    client = ProcmemClient(base_url=server.url, agent=agent.name, token="pm_unused", ingest_token=ingest)
    answer = client.report_session(
        session_id="client-1",
        task="Refund ORD-12345 please",
        resolved=True,
        injected=[{"id": "refund.over_limit", "version": 2}],
        intent="refund_over_limit",
        tool_calls=[{"name": "lookupOrder", "args": {"order_id": "ORD-12345"}, "ok": True}],
        instruction_chars=812,
        model="gpt-4o",
    )
    assert answer["stored"] == ["client-1"] and answer["refused"] == []
    stored = AgentSession.objects.get(agent=agent, session_id="client-1")
    assert stored.injected == [{"id": "refund.over_limit", "version": 2}]
    assert stored.instruction_chars == 812 and stored.model == "gpt-4o" and stored.skeleton == ["lookupOrder"]
    # resent: a duplicate, nothing changes
    assert client.report_session(session_id="client-1", task="x", resolved=False, injected=[])["duplicate"] == [
        "client-1"
    ]


def test_client_reports_an_outcome_a_week_later(server, agent, admin_user):
    """report_outcome reaches POST /api/v1/sessions/outcomes: the label changes, an unknown id is named."""
    from library.models import AgentSession

    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest", user=admin_user)[1]
    # a generous timeout: the first request of a live server on a loaded machine can take seconds
    client = ProcmemClient(base_url=server.url, agent=agent.name, token="pm_unused", ingest_token=ingest, timeout=120)
    client.report_session(
        session_id="later-1",
        task="Where is my order?",
        resolved=None,
        injected=[],
        tool_calls=[{"name": "lookupOrder", "args": {}, "ok": True}],
    )
    answer = client.report_outcome("later-1", resolved=True, rating=4.5, source="csat_survey")
    assert answer["applied"] == ["later-1"] and answer["unknown"] == []
    stored = AgentSession.objects.get(agent=agent, session_id="later-1")
    assert (stored.resolved, stored.rating) == (True, 4.5)
    assert client.report_outcome("never-seen", complaint=True)["unknown"] == ["never-seen"]


def test_the_async_client_reports_an_outcome_a_week_later(server, agent, admin_user):
    """AsyncProcmemClient.report_outcome reaches the same endpoint with the same answer as the sync client's."""
    from library.models import AgentSession
    from procmem_client.aio import AsyncProcmemClient

    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest", user=admin_user)[1]

    async def run() -> tuple[dict, dict]:
        async with AsyncProcmemClient(
            base_url=server.url, agent=agent.name, token="pm_unused", ingest_token=ingest, timeout=120
        ) as procmem:
            await procmem.report_session(
                session_id="later-async", task="Where is my order?", resolved=None, injected=[]
            )
            applied = await procmem.report_outcome("later-async", resolved=True, rating=4.0, source="csat_survey")
            unknown = await procmem.report_outcome("never-seen-async", complaint=True)
            return applied, unknown

    applied, unknown = asyncio.run(run())
    assert applied["applied"] == ["later-async"] and applied["unknown"] == []
    assert unknown["unknown"] == ["never-seen-async"]
    stored = AgentSession.objects.get(agent=agent, session_id="later-async")
    assert (stored.resolved, stored.rating) == (True, 4.0)


def test_the_capture_hook_sends_a_claude_code_session_to_the_server(server, agent, admin_user, monkeypatch):
    """procmem-capture, as Claude Code's SessionEnd hook runs it, stores the session in the trace
    format: the steps classified, the channel "hook", nothing of the files' contents."""
    import io
    from pathlib import Path

    from library.models import AgentSession
    from procmem_client.capture import main

    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="hook", user=admin_user)[1]
    monkeypatch.setenv("PROCMEM_URL", server.url)
    monkeypatch.setenv("PROCMEM_INGEST_TOKEN", ingest)
    transcript = Path(__file__).parents[2] / "clients/python/tests/data/transcripts/claude_code.jsonl"
    hook = {
        "session_id": "cc-1",
        "transcript_path": str(transcript),
        "cwd": "/home/alice/work/django",
        "hook_event_name": "SessionEnd",
    }
    err = io.StringIO()
    assert main(["claude-code"], stdin=io.StringIO(json.dumps(hook)), stdout=io.StringIO(), stderr=err) == 0, (
        err.getvalue()
    )
    stored = AgentSession.objects.get(agent=agent, session_id="cc-1")
    assert stored.channel == AgentSession.Channel.HOOK and stored.source_format == "trace"
    # the subagent (Agent, Explore) is a step of its own kind ("other"); its own reads are not steps here
    assert stored.skeleton == ["search", "read:source", "other", "test", "edit:source", "edit:test", "test"]
    assert [call["ok"] for call in stored.tool_calls] == [True, True, True, False, True, True, True]
    assert "SECRET" not in json.dumps([stored.tool_calls, stored.redacted_excerpt, stored.task])
    # run again (the hook fires twice): a duplicate
    assert main(["claude-code"], stdin=io.StringIO(json.dumps(hook)), stdout=io.StringIO(), stderr=err) == 0
    assert "duplicate 1" in err.getvalue()


def test_client_reads_an_environment_and_a_sessions_rollout_arm(server, served_agent, candidate, reviewer, admin_user):
    """The client's `environment` reads staging; with `session=` it gets the session's rollout arm
    (locally and through the server's select) and reports it with the session."""
    from django.contrib.auth import get_user_model
    from guardian.shortcuts import assign_perm

    from library.environments import rollout_arm
    from library.models import Rollout

    agent, raw = served_agent
    agent.environments = ["staging"]
    agent.save(update_fields=["environments"])
    v2 = services.version_revise(
        version=candidate,
        user=reviewer,
        applies_when=candidate.applies_when,
        steps=[
            *candidate.steps[:-1],
            "Tell the customer the expected wait (two days) with replyTemplates('approval_pending').",
        ],
        required_tools=candidate.required_tools,
        forbidden_actions=candidate.forbidden_actions,
    )
    approver = get_user_model().objects.create_user("approver2", password="x")
    assign_perm("library.approve_procedure", approver, candidate.procedure)
    make_active(v2, approver)
    v2.refresh_from_db()
    make_passing_eval(v2)  # the promotion eval: a pass against production's set
    staging = ProcmemClient(
        base_url=server.url, agent=agent.name, token=raw, environment="staging", local_ranking=False, timeout=60
    )
    assert {p["id"]: p["version"] for p in staging.procedures()}["refund.over_limit"] == 2
    services.version_promote(version=v2, user=admin_user, environment="production", reason="half", share=50)
    rollout = Rollout.objects.get()
    session = next(
        f"s-{n}" for n in range(200) if rollout_arm(rollout_id=rollout.pk, share=50, session=f"s-{n}") == "rollout"
    )
    task = "A customer wants a refund of 900 dollars, above my limit."
    for local in (False, True):
        client = ProcmemClient(base_url=server.url, agent=agent.name, token=raw, local_ranking=local, timeout=60)
        injected = client.select(task=task, session=session)["injected"]
        assert [(p["id"], p["version"], p["arm"]) for p in injected] == [("refund.over_limit", 2, "rollout")]
    text, injected = client.instruction_for(task=task, session=session)
    from procmem_client.client import session_record

    record = session_record(session_id=session, agent=agent.name, task=task, resolved=True, injected=injected)
    assert record["injected"] == [{"id": "refund.over_limit", "version": 2, "arm": "rollout"}]
