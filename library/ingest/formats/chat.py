"""The chat formats: OpenAI chat messages with `tool_calls` (tau-bench's trajectories) and Google
ADK sessions. They differ only in how one message reads, and share the walk over the conversation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..session_fields import (
    FieldError,
    ImportOptions,
    ItemInvalid,
    SessionIn,
    bool_or_none,
    clean_session_id,
    clean_task_key,
    clean_tool_calls,
    intent_from_options,
    json_object,
    reported,
    valid_session,
    with_prefix,
)


@dataclass
class Conversation:
    """What procmem keeps of a chat, whatever its format: the customer's opening request, the
    agent's last reply, the tool calls in order (validated afterwards), and what the tools answered
    (read for personal values, never stored)."""

    task: str = ""
    reply: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    answered: int = 0  # calls answered so far: chat formats answer the calls in order

    def user_said(self, text: str) -> None:
        self.task = self.task or text

    def agent_said(self, text: str) -> None:
        self.reply = text

    def tool_called(self, name: Any, args: Any) -> None:
        self.calls.append({"name": name, "args": args or {}, "ok": True})

    def tool_answered(self, result: Any, *, failed: bool) -> None:
        # A failed answer marks the call before it: chat formats answer the calls in order.
        self.results.append(result)
        if self.answered < len(self.calls):
            self.calls[self.answered]["result"] = result
            self.answered += 1
        if failed and self.calls:
            self.calls[-1]["ok"] = False


# How one chat format reads one of its messages (at `where`) into the conversation.
MessageReader = Callable[[Any, str, Conversation, list[FieldError]], None]


def walk_chat(messages: list[Any], key: str, read: MessageReader, errors: list[FieldError]) -> Conversation:
    """Walks the messages of a chat in order with the format's reader; errors name ``key[index]``."""
    conversation = Conversation()
    for index, message in enumerate(messages):
        read(message, f"{key}[{index}]", conversation, errors)
    return conversation


def _read_openai_message(message: Any, where: str, chat: Conversation, errors: list[FieldError]) -> None:
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
        errors.append(FieldError(where, "must be a chat message with a role"))
        return
    role = message["role"]
    content = message.get("content")
    if role == "user" and isinstance(content, str):
        chat.user_said(content)
    elif role == "assistant":
        if isinstance(content, str) and content.strip():
            chat.agent_said(content)
        for call_index, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(function, Mapping):
                errors.append(FieldError(f"{where}.tool_calls[{call_index}]", "has no function {name, arguments}"))
                continue
            chat.tool_called(function.get("name"), function.get("arguments"))
    elif role == "tool":
        chat.tool_answered(content, failed=isinstance(content, str) and content.lower().startswith("error"))


def _adk_reader(own_author: Any) -> MessageReader:
    """The ADK event reader for a session whose own agent is `own_author`: another author's (a
    sub-agent's) calls and answers are kept as tool data only, never as the session's calls."""

    def read(event: Any, where: str, chat: Conversation, errors: list[FieldError]) -> None:
        if isinstance(event, Mapping) and event.get("author") not in (own_author, "user"):
            _read_adk_event(event, where, _SubAgentConversation(chat), errors)
        else:
            _read_adk_event(event, where, chat, errors)

    return read


class _SubAgentConversation:
    """A view of a conversation for a sub-agent's events: its calls' arguments and its answers go to
    the tool data; its text is not the agent's reply."""

    def __init__(self, chat: Conversation):
        self.chat = chat

    def user_said(self, text: str) -> None:
        self.chat.user_said(text)

    def agent_said(self, text: str) -> None:
        pass

    def tool_called(self, name: Any, args: Any) -> None:
        self.chat.results.append(args)

    def tool_answered(self, result: Any, *, failed: bool) -> None:
        self.chat.results.append(result)


def _read_adk_event(event: Any, where: str, chat: Conversation, errors: list[FieldError]) -> None:
    if not isinstance(event, Mapping):
        errors.append(FieldError(where, "must be an object"))
        return
    content = event.get("content") or {}
    parts = content.get("parts") if isinstance(content, Mapping) else None
    if parts is None:
        return
    if not isinstance(parts, list):
        errors.append(FieldError(f"{where}.content.parts", "must be a list"))
        return
    for part_index, part in enumerate(parts):
        if not isinstance(part, Mapping):
            continue
        call = part.get("functionCall") or part.get("function_call")
        response = part.get("functionResponse") or part.get("function_response")
        text = part.get("text")
        if call is not None:
            if not isinstance(call, Mapping):
                errors.append(FieldError(f"{where}.content.parts[{part_index}].functionCall", "must be an object"))
                continue
            chat.tool_called(call.get("name"), call.get("args"))
        elif response is not None:
            result = response.get("response") if isinstance(response, Mapping) else response
            failed = isinstance(result, Mapping) and bool(result.get("error") or result.get("status") == "error")
            chat.tool_answered(result, failed=failed)
        elif isinstance(text, str) and text.strip():
            if event.get("author") == "user":
                chat.user_said(text)
            else:
                chat.agent_said(text)


def parse_openai(item: Any, options: ImportOptions | None = None) -> SessionIn:
    options = options or ImportOptions()
    item = json_object(item)
    messages_key = "traj" if "traj" in item else "messages"
    messages = item.get(messages_key)
    if not isinstance(messages, list):
        raise ItemInvalid([FieldError(messages_key, "must be a list of OpenAI chat messages")])
    errors: list[FieldError] = []
    if item.get("session_id") is not None:
        session_id = clean_session_id(item.get("session_id"), errors)
    elif item.get("task_id") is not None:
        session_id = f"task{item.get('task_id')}-trial{item.get('trial', 0)}"
    else:
        session_id = clean_session_id(None, errors)
    session_id = with_prefix(session_id, options)
    chat = walk_chat(messages, messages_key, _read_openai_message, errors)
    tool_calls = clean_tool_calls(chat.calls, errors, f"{messages_key}.tool_calls")
    reward = item.get("reward")
    outcome = item.get("outcome") if isinstance(item.get("outcome"), Mapping) else {}
    resolved: bool | None
    if reward is not None:
        if isinstance(reward, bool) or not isinstance(reward, (int, float)):
            errors.append(FieldError("reward", f"must be a number, got {reward!r}"))
            resolved = None
        else:
            resolved = float(reward) == 1.0
    else:
        resolved = bool_or_none(outcome.get("resolved"), "outcome.resolved", errors)
    escalated = any(call["name"] in options.escalation_tools for call in tool_calls)
    if outcome.get("escalated") is not None:
        escalated = bool(bool_or_none(outcome.get("escalated"), "outcome.escalated", errors)) or escalated
    if item.get("task_key") is not None:
        task_key = clean_task_key(item.get("task_key"), errors)
    elif item.get("task_id") is not None:  # tau-bench: the trials of one task share its id
        task_key = "task:" + clean_task_key(item.get("task_id"), errors, "task_id")
    else:
        task_key = ""
    session = SessionIn(
        session_id=session_id,
        intent=intent_from_options(item, session_id, options, errors, item.get("intent")),
        task=chat.task[:20000],
        resolved=resolved,
        escalated=escalated,
        rating=float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None,
        tool_calls=tool_calls,
        **reported(
            errors,
            injected=item.get("injected"),
            instruction_chars=item.get("instruction_chars"),
            model=item.get("model") or options.model,
            ended_at=item.get("ended_at"),
        ),
        source_format="openai",
        reply=chat.reply[:20000],
        task_key=task_key,
        structured=chat.results,
    )
    return valid_session(session, errors)


def parse_adk(item: Any, options: ImportOptions | None = None) -> SessionIn:
    options = options or ImportOptions()
    item = json_object(item)
    events = item.get("events")
    if not isinstance(events, list):
        raise ItemInvalid([FieldError("events", "must be a list of ADK events")])
    state = item.get("state") if isinstance(item.get("state"), Mapping) else {}
    errors: list[FieldError] = []
    session_id = with_prefix(clean_session_id(item.get("id", item.get("session_id")), errors, "id"), options)
    # Only the session's own agent's calls make its skeleton; a sub-agent's calls are its own
    # procedure (they are still read for personal values).
    own_author = (
        options.adk_author
        or state.get("procmem:author")
        or next(
            (e.get("author") for e in events if isinstance(e, Mapping) and e.get("author") not in (None, "user")), None
        )
    )
    chat = walk_chat(events, "events", _adk_reader(own_author), errors)
    tool_calls = clean_tool_calls(chat.calls, errors, "events.functionCall")
    outcome = state.get("outcome") if isinstance(state.get("outcome"), Mapping) else item.get("outcome")
    outcome = outcome if isinstance(outcome, Mapping) else {}
    resolved = bool_or_none(outcome.get("resolved"), "state.outcome.resolved", errors)
    escalated = bool_or_none(outcome.get("escalated"), "state.outcome.escalated", errors)
    if any(call["name"] in options.escalation_tools for call in tool_calls):
        escalated = True
    session = SessionIn(
        session_id=session_id,
        intent=intent_from_options(item, session_id, options, errors, state.get("intent", item.get("intent"))),
        task=chat.task[:20000],
        resolved=resolved,
        escalated=escalated,
        rating=None,
        tool_calls=tool_calls,
        **reported(
            errors,
            injected=state.get("procmem:injected", state.get("procmem_injected", item.get("injected"))),
            instruction_chars=state.get("procmem:instruction_chars", item.get("instruction_chars")),
            model=state.get("model") or item.get("model") or options.model,
            ended_at=item.get("lastUpdateTime", item.get("last_update_time", item.get("ended_at"))),
            injected_field="state.procmem:injected",
            ended_field="lastUpdateTime",
        ),
        source_format="adk",
        reply=chat.reply[:20000],
        task_key=clean_task_key(state.get("task_key", item.get("task_key")), errors, "state.task_key"),
        structured=chat.results,
    )
    return valid_session(session, errors)
