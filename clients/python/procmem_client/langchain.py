"""procmem for LangChain and LangGraph (`pip install './clients/python[langgraph]'`).

- `ProcmemMiddleware`: an agent middleware for `langchain.agents.create_agent` (a LangGraph graph).
  Before each model call it selects for the conversation's last user message and the state's
  `intent`, writes the injected ids and versions into the state (`procmem_injected`, for the session
  report) and appends the block to the agent's system prompt:

      agent = create_agent(model, tools, system_prompt="You are a support agent.",
                           middleware=[ProcmemMiddleware(AsyncProcmemClient(...))])

- `procmem_prompt(client, base_instruction=...)`: a runnable that turns a LangGraph state (or a
  list of messages) into the messages with the system message first, for a graph of your own:
  `procmem_prompt(client) | model`.

Either takes an `AsyncProcmemClient` (the graph runs with `ainvoke`/`astream`) or a sync
`ProcmemClient` (both ways; in async runs its calls go to a worker thread).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda

from .aio import AsyncProcmemClient
from .client import ProcmemClient

STATE_INJECTED = "procmem_injected"
STATE_INSTRUCTION = "procmem_instruction"

Client = AsyncProcmemClient | ProcmemClient


def task_from_messages(messages: Sequence[Any]) -> str:
    """The text of the last user message (a HumanMessage, or a ("user", text) / {"role": "user"} item)."""
    for message in reversed(list(messages)):
        if isinstance(message, HumanMessage):
            return _text(message.content)
        if isinstance(message, tuple) and len(message) == 2 and message[0] in ("user", "human"):
            return _text(message[1])
        if isinstance(message, dict) and message.get("role") in ("user", "human"):
            return _text(message.get("content"))
    return ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks
        return "\n".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content if part)
    return ""


async def _instruction(client: Client, *, task: str, intent: str | None, base: str) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(client, AsyncProcmemClient):
        return await client.instruction_for(task=task, intent=intent, base_instruction=base)
    return await asyncio.to_thread(lambda: client.instruction_for(task=task, intent=intent, base_instruction=base))


def _injected(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": p["id"], "version": p["version"], **({"arm": p["arm"]} if p.get("arm") else {})} for p in records]


class ProcmemState(AgentState):
    procmem_injected: NotRequired[list[dict[str, Any]]]
    procmem_instruction: NotRequired[str]


class ProcmemMiddleware(AgentMiddleware):
    """Adds the block of procedures selected for the conversation's last user message to the
    system prompt of every model call (see the module's docstring)."""

    state_schema = ProcmemState

    def __init__(self, client: Client, *, intent_key: str = "intent") -> None:
        super().__init__()
        self.client = client
        self.intent_key = intent_key

    def _update(self, text: str, injected: list[dict[str, Any]]) -> dict[str, Any]:
        return {STATE_INJECTED: _injected(injected), STATE_INSTRUCTION: text}

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        task = task_from_messages(state.get("messages", []))
        if not task.strip():
            return self._update("", [])
        return self._update(*await _instruction(self.client, task=task, intent=state.get(self.intent_key), base=""))

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if isinstance(self.client, AsyncProcmemClient):
            raise TypeError("ProcmemMiddleware with an AsyncProcmemClient runs in async graphs (ainvoke/astream)")
        task = task_from_messages(state.get("messages", []))
        if not task.strip():
            return self._update("", [])
        return self._update(*self.client.instruction_for(task=task, intent=state.get(self.intent_key)))

    @staticmethod
    def _with_block(request: ModelRequest) -> ModelRequest:
        block = (request.state or {}).get(STATE_INSTRUCTION) or ""
        if not block:
            return request
        base = (request.system_prompt or "").strip()
        return request.override(system_message=SystemMessage(content="\n\n".join(p for p in (base, block) if p)))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        return handler(self._with_block(request))

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]) -> Any:
        return await handler(self._with_block(request))


def procmem_prompt(client: Client, *, base_instruction: str = "", intent_key: str = "intent") -> RunnableLambda:
    """A runnable: LangGraph state {"messages": [...], "intent"?: ...} (or a list of messages) →
    [SystemMessage(base instruction + block), *messages]."""

    def split(value: Any) -> tuple[list[Any], str | None]:
        if isinstance(value, dict):
            return list(value.get("messages", [])), value.get(intent_key)
        return list(value), None

    def build(messages: list[Any], text: str) -> list[BaseMessage | Any]:
        return [SystemMessage(content=text), *messages] if text else messages

    async def ainvoke(value: Any) -> list[Any]:
        messages, intent = split(value)
        text, _ = await _instruction(client, task=task_from_messages(messages), intent=intent, base=base_instruction)
        return build(messages, text)

    def invoke(value: Any) -> list[Any]:
        if isinstance(client, AsyncProcmemClient):
            raise TypeError("procmem_prompt with an AsyncProcmemClient runs in async graphs (ainvoke/astream)")
        messages, intent = split(value)
        task = task_from_messages(messages)
        text = (
            client.instruction_for(task=task, intent=intent, base_instruction=base_instruction)[0]
            if task.strip()
            else base_instruction
        )
        return build(messages, text)

    return RunnableLambda(invoke, afunc=ainvoke, name="procmem_prompt")


__all__ = ["ProcmemMiddleware", "ProcmemState", "STATE_INJECTED", "procmem_prompt", "task_from_messages"]
