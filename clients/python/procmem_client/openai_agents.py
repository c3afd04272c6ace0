"""procmem for the OpenAI Agents SDK (`pip install './clients/python[openai-agents]'`): dynamic
`instructions` that add the block of procedures selected for the run's user message.

    procmem = AsyncProcmemClient(base_url=..., agent="support_agent", token=...)
    agent = Agent(name="support", instructions=procmem_instructions(procmem, base_instruction="You are a support agent."))
    result = await Runner.run(agent, "I want a refund of $900 for order 1234", context={"intent": "refund_over_limit"})
    # context["procmem:injected"] now names the injected ids and versions (for report_session)

The task is the last user message of the turn's input (or `context[task_key]` when the run's
context gives one); the intent is `context[intent_key]` when present. A dict context (or an object
with a `procmem_injected` attribute) receives the injected ids and versions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .aio import AsyncProcmemClient
from .client import STATE_INJECTED, ProcmemClient


def _context_value(context: Any, key: str) -> Any:
    if isinstance(context, MutableMapping):
        return context.get(key)
    return getattr(context, key, None)


def task_from_input(items: list[Any]) -> str:
    """The text of the last user item of a Responses-style input list."""
    for item in reversed(items or []):
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(
                part.get("text", "")
                for part in content
                if isinstance(part, dict) and part.get("type") in ("input_text", "text")
            )
    return ""


def procmem_instructions(
    client: AsyncProcmemClient | ProcmemClient,
    *,
    base_instruction: str = "",
    intent_key: str = "intent",
    task_key: str = "task",
) -> Callable[[Any, Any], Awaitable[str]]:
    """An `instructions=` callable `(run_context, agent) -> str` for `agents.Agent`."""

    async def instructions(run_context: Any, agent: Any) -> str:
        context = getattr(run_context, "context", None)
        task = _context_value(context, task_key) or task_from_input(list(getattr(run_context, "turn_input", []) or []))
        intent = _context_value(context, intent_key) or None
        if isinstance(client, AsyncProcmemClient):
            text, injected = await client.instruction_for(
                task=str(task), intent=intent, base_instruction=base_instruction
            )
        else:
            text, injected = await asyncio.to_thread(
                lambda: client.instruction_for(task=str(task), intent=intent, base_instruction=base_instruction)
            )
        record = [
            {"id": p["id"], "version": p["version"], **({"arm": p["arm"]} if p.get("arm") else {})} for p in injected
        ]
        if isinstance(context, MutableMapping):
            context[STATE_INJECTED] = record
        elif context is not None and hasattr(context, "procmem_injected"):
            context.procmem_injected = record
        return text

    instructions.__name__ = "procmem_instructions"
    return instructions


__all__ = ["procmem_instructions", "task_from_input"]
