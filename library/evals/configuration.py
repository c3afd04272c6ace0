"""An agent's eval-replay settings: which runner, and how to reach it. Changed by a user who holds
`manage_agent` on the agent (a runner's Python path is code the workers import and call). The model
API key is write-only: it is stored, used by the model replay runner, and never shown back — the
audit row and the settings page only say whether one is set."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator
from django.db import transaction

from ..models import Agent, AuditEvent
from ..permissions import user_can_manage_agent

EDITABLE = (
    "eval_runner",
    "eval_url",
    "eval_python_path",
    "eval_concurrency",
    "eval_timeout_seconds",
    "model_base_url",
    "model_name",
    "tool_schemas",
    "base_instruction",
)
_KEEP = object()


def eval_settings_snapshot(agent: Agent) -> dict[str, Any]:
    """The settings as they may be shown: everything but the key, plus whether a key is set."""
    snapshot = {field: getattr(agent, field) for field in EDITABLE}
    snapshot["model_api_key_set"] = bool(agent.model_api_key)
    return snapshot


def python_path_allowed(path: str) -> bool:
    prefixes = settings.PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES
    return not prefixes or any(path == p or path.startswith(p.rstrip(".") + ".") or path.startswith(p.rstrip(".") + ":") for p in prefixes)


def agent_eval_settings_update(*, agent: Agent, user, model_api_key: Any = _KEEP, **fields) -> Agent:
    """Validates and stores the eval settings; `model_api_key` left out keeps the stored key, ""
    clears it. Audited with before/after (never the key)."""
    if not user_can_manage_agent(user, agent):
        raise PermissionDenied(f"You may not change the settings of {agent.name}.")
    unknown = set(fields) - set(EDITABLE)
    if unknown:
        raise ValidationError({sorted(unknown)[0]: "is not an eval setting"})
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        before = eval_settings_snapshot(locked)
        for field, value in fields.items():
            setattr(locked, field, value)
        if model_api_key is not _KEEP:
            locked.model_api_key = (model_api_key or "").strip()
        _validate(locked)
        locked.save()
        after = eval_settings_snapshot(locked)
        from ..services import audit

        audit(action=AuditEvent.Action.SETTINGS, actor=user, agent=locked, reason="Eval settings changed", before=before, after=after)
    return locked


def _validate(agent: Agent) -> None:
    if agent.eval_runner not in Agent.Runner.values:
        raise ValidationError({"eval_runner": f"unknown runner {agent.eval_runner!r}"})
    url = URLValidator(schemes=["http", "https"])
    for field in ("eval_url", "model_base_url"):
        value = getattr(agent, field)
        if value:
            try:
                url(value)
            except ValidationError:
                raise ValidationError({field: "must be an http(s) URL"}) from None
    if agent.eval_runner == Agent.Runner.HTTP and not agent.eval_url:
        raise ValidationError({"eval_url": "the HTTP runner needs the agent's eval URL"})
    if agent.eval_runner == Agent.Runner.MODEL and not (agent.model_base_url and agent.model_name):
        raise ValidationError({"model_base_url": "model replay needs a base URL and a model name"})
    if agent.eval_runner == Agent.Runner.PYTHON:
        if not agent.eval_python_path:
            raise ValidationError({"eval_python_path": "the Python runner needs a dotted path (package.module:function)"})
        if not python_path_allowed(agent.eval_python_path):
            raise ValidationError({"eval_python_path": "is outside PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES"})
    if not 1 <= agent.eval_concurrency <= 100:
        raise ValidationError({"eval_concurrency": "must be between 1 and 100"})
    if not 0 < agent.eval_timeout_seconds <= 600:
        raise ValidationError({"eval_timeout_seconds": "must be more than 0 and at most 600 seconds"})
    if isinstance(agent.tool_schemas, str):
        try:
            agent.tool_schemas = json.loads(agent.tool_schemas or "{}")
        except ValueError:
            raise ValidationError({"tool_schemas": "must be a JSON object"}) from None
    if not isinstance(agent.tool_schemas, dict) or not all(isinstance(v, dict) for v in agent.tool_schemas.values()):
        raise ValidationError({"tool_schemas": "must be an object of tool name → JSON schema"})
