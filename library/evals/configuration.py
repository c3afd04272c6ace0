"""An agent's eval-replay settings: which runner, and how to reach it. Changed by a user who holds
`manage_agent` on the agent (a runner's Python path is code the workers import and call). The model
API key is write-only: it is stored, used by the model replay runner, and never shown back — the
audit row and the settings page only say whether one is set."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator
from django.db import transaction

from ..models import Agent, AuditEvent
from ..permissions import user_can_manage_agent
from ..secret_store import seal_secret

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
    """Whether a Python runner's dotted path lies in PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES (an empty
    list allows none: a runner path is code every worker imports and calls)."""
    prefixes = settings.PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES
    return any(path == p or path.startswith(p.rstrip(".") + ".") or path.startswith(p.rstrip(".") + ":") for p in prefixes)


def _url_parts(url: str) -> tuple[str, str, int | None, str] | None:
    try:
        parsed = urlsplit(url.strip())
        port = parsed.port
    except ValueError:
        return None
    if not parsed.scheme or not parsed.hostname or parsed.username or parsed.password:
        return None
    return parsed.scheme.lower(), parsed.hostname.lower(), port, parsed.path or "/"


def url_allowed(url: str) -> bool:
    """Whether an HTTP runner's or model's URL lies in PROCMEM_EVAL_ALLOWED_URLS: the same scheme
    and host, the same port (any port when the allowed entry names none), and a path under the
    entry's path. Compared by parts, so `http://127.0.0.1` does not allow `http://127.0.0.1.evil.example`.
    An empty list allows none: workers send cases and procedures (and a model key) to this URL."""
    target = _url_parts(url)
    if target is None:
        return False
    scheme, host, port, path = target
    default_port = {"http": 80, "https": 443}.get(scheme)
    for entry in settings.PROCMEM_EVAL_ALLOWED_URLS:
        allowed = _url_parts(entry)
        if allowed is None:
            continue
        a_scheme, a_host, a_port, a_path = allowed
        if (a_scheme, a_host) != (scheme, host):
            continue
        if a_port is not None and a_port != (port or default_port):
            continue
        if path == a_path or path.startswith(a_path.rstrip("/") + "/") or a_path == "/":
            return True
    return False


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
            try:
                locked.model_api_key = seal_secret(model_api_key or "")
            except ValueError as exc:
                raise ValidationError({"model_api_key": str(exc)}) from None
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
            if not url_allowed(value):
                raise ValidationError({field: f"{value} is outside PROCMEM_EVAL_ALLOWED_URLS (ask the operator to allow it)"})
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
