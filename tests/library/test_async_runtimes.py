"""The async client and the agent-framework providers against a live server (gunicorn): the
AsyncProcmemClient selects what /api/v1/.../select selects and renders the same block; the OpenAI
Agents SDK's Runner and a LangChain/LangGraph agent, each with a fake model that records what it
was sent, give the model the base instruction plus exactly that block; reports are stored."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import requests

from library.api.tokens import token_create
from library.models import AgentSession, ApiToken
from procmem_client.aio import AsyncProcmemClient
from tests.conftest import make_active

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

REFUND_TASK = "A customer wants a refund of 900 dollars for order 1234, above my limit."
BASE = "You are a support agent."


@pytest.fixture
def served(agent, candidate, other_procedure, admin_user):
    make_active(candidate, admin_user)
    make_active(other_procedure.versions.get(number=1), admin_user)
    read = token_create(agent=agent, scope=ApiToken.Scope.READ, name="async read", user=admin_user)[1]
    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="async ingest", user=admin_user)[1]
    return agent, read, ingest


def select_endpoint(base: str, token: str, task: str) -> dict:
    response = requests.get(
        f"{base}/api/v1/agents/support_agent/select",
        params={"task": task},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("local_ranking", [False, True], ids=["server-select", "local-ranking"])
def test_the_async_client_selects_and_renders_what_the_select_endpoint_does(gunicorn_process, served, local_ranking):
    agent, read, ingest = served
    expected = select_endpoint(gunicorn_process.url, read, REFUND_TASK)

    async def scenario():
        async with AsyncProcmemClient(
            base_url=gunicorn_process.url,
            agent="support_agent",
            token=read,
            ingest_token=ingest,
            local_ranking=local_ranking,
            refresh_interval=0,
            retry_interval=0,
            timeout=60,
        ) as procmem:
            selections = await asyncio.gather(*[procmem.select(task=REFUND_TASK) for _ in range(10)])
            text, injected = await procmem.instruction_for(task=REFUND_TASK)
            answer = await procmem.report_session(
                session_id="async-1", task=REFUND_TASK, resolved=True, injected=injected
            )
            gunicorn_process.stop()
            after = await procmem.instruction_for(task=REFUND_TASK)
            return selections, text, injected, answer, after, procmem.last_error

    selections, text, injected, answer, after, error = asyncio.run(scenario())
    ids = [(p["id"], p["version"]) for p in expected["injected"]]
    assert all([(p["id"], p["version"]) for p in s["injected"]] == ids for s in selections)
    assert text == expected["rendered"]
    assert answer["counts"]["stored"] == 1
    assert AgentSession.objects.get(agent=agent, session_id="async-1").injected == [
        {"id": i, "version": v} for i, v in ids
    ]
    assert error  # the server is gone
    if local_ranking:
        assert after[0] == expected["rendered"]  # the last good set, ranked here
    else:
        assert after == ("", [])  # the select endpoint is gone: nothing injected, the agent still runs


# ---------------------------------------------------------------------------------------------- OpenAI Agents SDK


def test_the_openai_agents_sdk_runner_gives_the_model_the_selected_block(gunicorn_server, served):
    from agents import Agent, ModelResponse, Runner, Usage
    from agents.models.interface import Model
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    from procmem_client.openai_agents import procmem_instructions

    _, read, _ = served
    expected = select_endpoint(gunicorn_server, read, REFUND_TASK)

    class RecordingModel(Model):
        """A fake model: records the system instructions and answers with one message."""

        def __init__(self) -> None:
            self.instructions: list[str | None] = []

        async def get_response(self, system_instructions, input, *args: Any, **kwargs: Any) -> ModelResponse:
            self.instructions.append(system_instructions)
            message = ResponseOutputMessage(
                id="msg_1",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text="I will ask for approval.", annotations=[])],
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any):  # pragma: no cover - not streamed here
            raise NotImplementedError

    model = RecordingModel()
    context: dict[str, Any] = {}

    async def scenario():
        async with AsyncProcmemClient(
            base_url=gunicorn_server, agent="support_agent", token=read, local_ranking=False, timeout=60
        ) as procmem:
            agent = Agent(
                name="support", model=model, instructions=procmem_instructions(procmem, base_instruction=BASE)
            )
            return await Runner.run(agent, REFUND_TASK, context=context)

    result = asyncio.run(scenario())
    assert result.final_output == "I will ask for approval."
    assert model.instructions == [BASE + "\n\n" + expected["rendered"]]
    assert context["procmem:injected"] == [{"id": p["id"], "version": p["version"]} for p in expected["injected"]]


# ---------------------------------------------------------------------------------------------- LangChain / LangGraph


def recording_chat_model():
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class RecordingChatModel(BaseChatModel):
        """A fake chat model: records the messages of each call and answers with one message."""

        calls: list = []

        @property
        def _llm_type(self) -> str:
            return "recording"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            self.calls.append(list(messages))
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="I will ask for approval."))])

        def bind_tools(self, tools, **kwargs):
            return self

    return RecordingChatModel(calls=[])


def test_a_langchain_agent_with_the_procmem_middleware_sends_the_block_as_system_prompt(gunicorn_server, served):
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage, SystemMessage

    from procmem_client.langchain import ProcmemMiddleware

    _, read, _ = served
    expected = select_endpoint(gunicorn_server, read, REFUND_TASK)
    model = recording_chat_model()

    async def scenario():
        async with AsyncProcmemClient(
            base_url=gunicorn_server, agent="support_agent", token=read, local_ranking=False, timeout=60
        ) as procmem:
            agent = create_agent(model, tools=[], system_prompt=BASE, middleware=[ProcmemMiddleware(procmem)])
            return await agent.ainvoke({"messages": [HumanMessage(content=REFUND_TASK)]})

    state = asyncio.run(scenario())
    (sent,) = model.calls
    assert isinstance(sent[0], SystemMessage) and sent[0].content == BASE + "\n\n" + expected["rendered"]
    assert state["messages"][-1].content == "I will ask for approval."
    assert state["procmem_injected"] == [{"id": p["id"], "version": p["version"]} for p in expected["injected"]]


def test_a_langgraph_graph_with_the_procmem_prompt_runnable(gunicorn_server, served):
    from langchain_core.messages import HumanMessage, SystemMessage
    from langgraph.graph import START, MessagesState, StateGraph

    from procmem_client.langchain import procmem_prompt

    _, read, _ = served
    expected = select_endpoint(gunicorn_server, read, REFUND_TASK)
    model = recording_chat_model()

    async def scenario():
        async with AsyncProcmemClient(
            base_url=gunicorn_server, agent="support_agent", token=read, local_ranking=False, timeout=60
        ) as procmem:
            chain = procmem_prompt(procmem, base_instruction=BASE) | model

            async def respond(state: MessagesState) -> dict:
                return {"messages": [await chain.ainvoke(state)]}

            graph = StateGraph(MessagesState)
            graph.add_node("respond", respond)
            graph.add_edge(START, "respond")
            return await graph.compile().ainvoke({"messages": [HumanMessage(content=REFUND_TASK)]})

    state = asyncio.run(scenario())
    (sent,) = model.calls
    assert isinstance(sent[0], SystemMessage) and sent[0].content == BASE + "\n\n" + expected["rendered"]
    assert state["messages"][-1].content == "I will ask for approval."
