"""An agent's tool list: replaced with its history kept."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from ..models import Agent, AgentToolChange, AuditEvent
from ..tool_names import normalise_tool_name
from .content import _clean_str_list
from .events import _notify_active_set_changed, _on_commit, audit


def agent_set_tools(*, agent: Agent, tools: Any, user=None, actor_label: str = "", reason: str = "") -> Agent:
    """Replaces an agent's tool list, keeping the history. Versions that now miss a tool are refused
    at load by the agent API (library/serving/active_set.py), which raises the alert once."""

    cleaned = _clean_str_list(tools, "tools", allow_empty=True, max_items=500)
    if len(set(cleaned)) != len(cleaned):
        raise ValidationError({"tools": "lists a tool twice"})
    for index, name in enumerate(cleaned):
        # the names sessions are stored under: any other name never matches a session's calls
        stored = normalise_tool_name(name)
        if stored != name:
            hint = f"; sessions store it as {stored!r}" if stored else ""
            raise ValidationError(
                {
                    "tools": f"tools[{index}]: {name[:80]!r} is not a tool name (letters, digits, _ . -, at most 128){hint}"
                }
            )
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        before = list(locked.tools)
        if sorted(before) == sorted(cleaned):
            return locked
        locked.tools = cleaned
        locked.save(update_fields=["tools"])
        AgentToolChange.objects.create(
            agent=locked,
            tools_before=before,
            tools_after=cleaned,
            changed_by=user if user and user.is_authenticated else None,
            reason=reason,
        )
        audit(
            action=AuditEvent.Action.TOOLS_CHANGE,
            actor=user,
            actor_label=actor_label,
            agent=locked,
            reason=reason,
            before={"tools": before},
            after={"tools": cleaned},
        )
        agent_id = locked.pk
        _on_commit(lambda: _notify_active_set_changed(agent_id))
    agent.tools = cleaned
    return locked
