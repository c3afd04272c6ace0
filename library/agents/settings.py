"""An agent's own settings, changed by its admins (`manage_agent`) on the "Agent settings" page (the
eval runner on its own page, linked from there) or from the shell (`manage.py agent_settings`).

One pydantic model or validator per settings group:
- general: procedural memory on/off, the injection cap, the review target (hours a candidate should
  wait at most: the queue's ageing badges), the extra redaction patterns;
- capture: automatic capture (scheduled mining, opt-in), which sessions are mined, the support
  threshold and how strict the evidence must be (docs/mining.md);
- label rule: which label the miner uses for a session whose outcomes arrive later (library/ingest/outcomes.py:
  the complaint window, closed-by-customer, the rating threshold); a change derives every label again;
- limits: the agent API's rate limits per endpoint, per token and per client address, where they
  differ from the defaults (library/agents/rate_limits.py);
- environments: the environments beside production (library/environments.py: with `staging`,
  approved versions go there first; one that still serves a released version cannot be removed);
- eval: which eval-replay runner and how to reach it. The model API key is write-only: it is stored
  sealed, used by the model replay runner and never shown back — audit rows and pages only say
  whether one is set.

One write path, `agent_settings_update`: one transaction, the agent row locked, the groups a change
touches validated whole, one audit row holding before and after of what changed. The tool list has
its own service (services.agent_set_tools, with its history)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticValidationError

from ..coding.families import clean_family_rules
from ..environments import clean_environments, environments_in_use
from ..ingest.outcomes import session_labels_recompute
from ..models import Agent, AuditEvent
from ..models.secret_store import seal_secret
from ..permissions import user_can_manage_agent
from ..redaction.recognizers import compile_agent_patterns, slow_pattern_problem
from ..services import active_set_changed_on_commit, audit
from .rate_limits import clean_rate_limits

MAX_REVIEW_TARGET_HOURS = 24 * 365
MAX_INJECTION_CAP = 20  # the database's agent_injection_cap_lte_20
MAX_REDACTION_PATTERNS = 50
API_KEY = "model_api_key"


class GeneralSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    procedural_memory_enabled: bool
    injection_cap: int = Field(ge=0, le=MAX_INJECTION_CAP)
    review_target_hours: int = Field(ge=1, le=MAX_REVIEW_TARGET_HOURS)
    redaction_patterns: Any = None

    @field_validator("redaction_patterns")
    @classmethod
    def _patterns(cls, patterns: Any) -> list[dict[str, str]]:
        if patterns is None:
            return []
        if not isinstance(patterns, list):
            raise ValueError(f'must be a list of {{"label": …, "regex": …}}, got {type(patterns).__name__}')
        if len(patterns) > MAX_REDACTION_PATTERNS:
            raise ValueError(f"at most {MAX_REDACTION_PATTERNS} patterns")
        compile_agent_patterns(patterns)  # ValueError / TypeError naming the bad pattern
        for i, pattern in enumerate(patterns):
            if not str(pattern.get("label") or "").strip():
                raise ValueError(f"redaction_patterns[{i}]: needs a label (what reviewers see instead of the match)")
            problem = slow_pattern_problem(pattern["regex"])
            if problem:
                raise ValueError(
                    f"redaction_patterns[{i}]: {pattern['regex']!r} {problem}; use a possessive repeat (a++) or one level"
                )
        return [{"label": str(p["label"]), "regex": str(p["regex"])} for p in patterns]


class CaptureSettings(BaseModel):
    """The bounds of each capture setting (the database checks the same ranges)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    auto_capture_enabled: bool
    min_tool_calls: int = Field(ge=1, le=100)
    support_threshold: int = Field(ge=1, le=100_000)
    significance_level: float = Field(gt=0, le=0.5)
    backtest_share: float = Field(ge=0, le=0.5)
    # coding agents (library/coding/families.py): the traces a task family needs, and the grouping rules
    coding_min_traces: int = Field(ge=1, le=1000)
    coding_family_rules: Any = None

    @field_validator("coding_family_rules")
    @classmethod
    def _family_rules(cls, rules: Any) -> list[dict[str, str]]:
        if isinstance(rules, str):
            try:
                rules = json.loads(rules or "[]")
            except ValueError:
                raise ValueError('must be a JSON list of {"prefix": …, "family": …}') from None
        return [{"prefix": r.prefix, "family": r.family} for r in clean_family_rules(rules)]


class LabelRuleSettings(BaseModel):
    """Which label the miner uses for a session (library/ingest/outcomes.py)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    complaint_window_days: int = Field(ge=0, le=365)
    closed_by_customer_resolves: bool
    min_rating: float | None = Field(default=None, ge=-1e6, le=1e6)


EVAL_FIELDS = (
    "eval_runner",
    "eval_url",
    "eval_python_path",
    "eval_concurrency",
    "eval_timeout_seconds",
    "model_base_url",
    "model_name",
    "tool_schemas",
    "base_instruction",
    "selects_with_intent",
    "model_drafts_enabled",
)
LABELS = {
    "auto_capture_enabled": "Automatic capture (scheduled mining)",
    "min_tool_calls": "Minimum tool calls of a mined session",
    "support_threshold": "Support threshold (distinct tasks)",
    "significance_level": "Significance level (family-wise, per run)",
    "backtest_share": "Share of the newest sessions held back for the backtest",
    "complaint_window_days": "Complaint window (days)",
    "closed_by_customer_resolves": "A ticket closed by the customer counts as resolved",
    "min_rating": "Rating that counts as resolved (at least)",
    "coding_min_traces": "Coding agents: resolved sessions with a verify command per task family",
    "coding_family_rules": "Coding agents: task family rules (path prefix → family)",
}
CAPTURE_FIELDS = tuple(CaptureSettings.model_fields)
GENERAL_FIELDS = tuple(GeneralSettings.model_fields)
ENVIRONMENT_FIELDS = ("environments",)
LIMIT_FIELDS = ("api_rate_limits",)
LABEL_RULE_FIELDS = tuple(LabelRuleSettings.model_fields)
EDITABLE = GENERAL_FIELDS + CAPTURE_FIELDS + LABEL_RULE_FIELDS + ENVIRONMENT_FIELDS + LIMIT_FIELDS + EVAL_FIELDS


# ------------------------------------------------------------------------------------ eval allow-lists


def python_path_allowed(path: str) -> bool:
    """Whether a Python runner's dotted path lies in PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES (an empty
    list allows none: a runner path is code every worker imports and calls)."""
    prefixes = settings.PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES
    return any(
        path == p or path.startswith(p.rstrip(".") + ".") or path.startswith(p.rstrip(".") + ":") for p in prefixes
    )


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


# ------------------------------------------------------------------------------------------ validation


def _pydantic_validator(model: type[BaseModel]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def validate(values: dict[str, Any]) -> dict[str, Any]:
        try:
            return model(**values).model_dump()
        except PydanticValidationError as exc:
            errors: dict[str, list[str]] = {}
            for error in exc.errors():
                field = str(error["loc"][0]) if error["loc"] else "settings"
                if error["type"] == "value_error":
                    message = str(error["ctx"]["error"])
                else:
                    message = f"{error['msg']} (got {error.get('input')!r})"
                errors.setdefault(field, []).append(message)
            raise ValidationError(errors) from None

    return validate


def _validate_eval(values: dict[str, Any]) -> dict[str, Any]:
    cleaned = dict(values)
    if cleaned["eval_runner"] not in Agent.Runner.values:
        raise ValidationError({"eval_runner": f"unknown runner {cleaned['eval_runner']!r}"})
    url = URLValidator(schemes=["http", "https"])
    for field in ("eval_url", "model_base_url"):
        value = cleaned[field]
        if value:
            try:
                url(value)
            except ValidationError:
                raise ValidationError({field: "must be an http(s) URL"}) from None
            if not url_allowed(value):
                raise ValidationError(
                    {field: f"{value} is outside PROCMEM_EVAL_ALLOWED_URLS (ask the operator to allow it)"}
                )
    runner = cleaned["eval_runner"]
    if runner == Agent.Runner.HTTP and not cleaned["eval_url"]:
        raise ValidationError({"eval_url": "the HTTP runner needs the agent's eval URL"})
    if runner == Agent.Runner.MODEL and not (cleaned["model_base_url"] and cleaned["model_name"]):
        raise ValidationError({"model_base_url": "model replay needs a base URL and a model name"})
    if runner == Agent.Runner.PYTHON:
        if not cleaned["eval_python_path"]:
            raise ValidationError(
                {"eval_python_path": "the Python runner needs a dotted path (package.module:function)"}
            )
        if not python_path_allowed(cleaned["eval_python_path"]):
            raise ValidationError({"eval_python_path": "is outside PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES"})
    if not 1 <= cleaned["eval_concurrency"] <= 100:
        raise ValidationError({"eval_concurrency": "must be between 1 and 100"})
    if not 0 < cleaned["eval_timeout_seconds"] <= 600:
        raise ValidationError({"eval_timeout_seconds": "must be more than 0 and at most 600 seconds"})
    for switch in ("selects_with_intent", "model_drafts_enabled"):
        if not isinstance(cleaned[switch], bool):
            raise ValidationError({switch: "must be true or false"})
    if cleaned["model_drafts_enabled"] and not (cleaned["model_base_url"] and cleaned["model_name"]):
        raise ValidationError({"model_drafts_enabled": "model-written drafts need the model base URL and model name"})
    schemas = cleaned["tool_schemas"]
    if isinstance(schemas, str):
        try:
            schemas = cleaned["tool_schemas"] = json.loads(schemas or "{}")
        except ValueError:
            raise ValidationError({"tool_schemas": "must be a JSON object"}) from None
    if not isinstance(schemas, dict) or not all(isinstance(v, dict) for v in schemas.values()):
        raise ValidationError({"tool_schemas": "must be an object of tool name → JSON schema"})
    return cleaned


def _validate_environments(values: dict[str, Any]) -> dict[str, Any]:
    return {"environments": clean_environments(values["environments"] or [])}


def _validate_limits(values: dict[str, Any]) -> dict[str, Any]:
    try:
        return {"api_rate_limits": clean_rate_limits(values["api_rate_limits"])}
    except ValueError as exc:
        raise ValidationError({"api_rate_limits": str(exc)}) from None


GROUPS: tuple[tuple[tuple[str, ...], Callable[[dict[str, Any]], dict[str, Any]]], ...] = (
    (GENERAL_FIELDS, _pydantic_validator(GeneralSettings)),
    (CAPTURE_FIELDS, _pydantic_validator(CaptureSettings)),
    (LABEL_RULE_FIELDS, _pydantic_validator(LabelRuleSettings)),
    (ENVIRONMENT_FIELDS, _validate_environments),
    (LIMIT_FIELDS, _validate_limits),
    (EVAL_FIELDS, _validate_eval),
)


def agent_settings_validate(values: dict[str, Any], touched: set[str]) -> dict[str, Any]:
    """`values` (every editable field) cleaned; each group with a field in `touched` is validated
    whole, the others are kept as stored. A ValidationError names every bad field."""
    cleaned = dict(values)
    errors: dict[str, list[str]] = {}
    for fields, validate in GROUPS:
        if not touched & set(fields):
            continue
        try:
            cleaned.update(validate({field: values[field] for field in fields}))
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                errors.setdefault(field, []).extend(messages)
    if errors:
        raise ValidationError(errors)
    return cleaned


# ------------------------------------------------------------------------------------------ the service


def agent_settings_snapshot(agent: Agent) -> dict[str, Any]:
    """The settings as they may be shown: every editable one but the API key, and whether a key is set."""
    return {**{field: getattr(agent, field) for field in EDITABLE}, "model_api_key_set": bool(agent.model_api_key)}


def agent_settings_update(
    *, agent: Agent, user, changes: Mapping[str, Any], reason: str = "", actor_label: str = ""
) -> Agent:
    """Changes some settings in EDITABLE (and `model_api_key`: "" clears it, left out keeps it); the
    others keep their values. `user` must hold manage_agent on the agent; without a user (the
    management command) `actor_label` names who acted. Raises PermissionDenied, or ValidationError
    naming the field; nothing is saved then. A change that changes nothing writes no audit row."""
    if user is not None and not user_can_manage_agent(user, agent):
        raise PermissionDenied(f"You may not change the settings of {agent.name}.")
    if user is None and not actor_label:
        raise PermissionDenied("A change without a user needs an actor label.")
    changes = dict(changes)
    unknown = set(changes) - set(EDITABLE) - {API_KEY}
    if unknown:
        raise ValidationError({sorted(unknown)[0]: "is not an agent setting"})
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        before = agent_settings_snapshot(locked)
        stored_key = locked.model_api_key
        if API_KEY in changes:
            try:
                locked.model_api_key = seal_secret(changes.pop(API_KEY) or "")
            except ValueError as exc:
                raise ValidationError({API_KEY: str(exc)}) from None
        cleaned = agent_settings_validate({**before, **changes}, set(changes))
        for field in EDITABLE:
            setattr(locked, field, cleaned[field])
        after = agent_settings_snapshot(locked)
        dropped = sorted((set(before["environments"]) - set(after["environments"])) & environments_in_use(locked))
        if dropped:
            raise ValidationError(
                {"environments": f"{', '.join(dropped)} still serves released versions; promote or withdraw them first"}
            )
        changed = [field for field in after if before[field] != after[field]]
        key_replaced = locked.model_api_key != stored_key
        if not changed and not key_replaced:
            return locked
        locked.save(update_fields=[f for f in EDITABLE if before[f] != after[f]] + ([API_KEY] if key_replaced else []))

        if key_replaced and "model_api_key_set" not in changed:
            changed.append("model_api_key_set")  # a new key replaced the old one
        audit(
            action=AuditEvent.Action.SETTINGS,
            actor=user,
            actor_label=actor_label,
            agent=locked,
            reason=(reason or "").strip() or f"Agent settings changed: {', '.join(changed)}",
            before={k: before[k] for k in changed},
            after={k: after[k] for k in changed},
        )
        if set(LABEL_RULE_FIELDS) & set(changed):
            session_labels_recompute(agent=locked)  # the rule decides every session's label
        if {"procedural_memory_enabled", "injection_cap", "environments"} & set(changed):
            active_set_changed_on_commit(locked.pk)
    return locked
