"""An agent's own settings, changed by its admins (`manage_agent`) on the "Agent settings" page:
the switches (procedural memory, automatic capture), the injection cap, the support threshold and
the extra redaction patterns, the review target (hours a candidate should wait at most: the queue's
ageing badges), the environments beside production (library/releases.py: with `staging`, approved
versions go there first; an environment that still serves a released version cannot be removed). The tool list has its own service (services.agent_set_tools, with its
history); the eval runner its own (evals/configuration.py). Every change is one transaction with
one audit row holding before and after."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from .models import Agent, AuditEvent
from .permissions import user_can_manage_agent
from .redaction import compile_agent_patterns
from .environments import clean_environments, environments_in_use

EDITABLE = (
    "procedural_memory_enabled", "auto_capture_enabled", "injection_cap", "support_threshold", "redaction_patterns",
    "review_target_hours", "environments",
)
MAX_REVIEW_TARGET_HOURS = 24 * 365
MAX_INJECTION_CAP = 20  # the database's agent_injection_cap_lte_20
MAX_REDACTION_PATTERNS = 50


def agent_settings_snapshot(agent: Agent) -> dict[str, Any]:
    return {field: getattr(agent, field) for field in EDITABLE}


def _validated(values: dict[str, Any]) -> dict[str, Any]:
    errors: dict[str, str] = {}
    cleaned = dict(values)
    for field in ("procedural_memory_enabled", "auto_capture_enabled"):
        if not isinstance(values[field], bool):
            errors[field] = f"must be true or false, got {values[field]!r}"
    cap = values["injection_cap"]
    if isinstance(cap, bool) or not isinstance(cap, int) or not 0 <= cap <= MAX_INJECTION_CAP:
        errors["injection_cap"] = f"must be a whole number from 0 to {MAX_INJECTION_CAP}, got {cap!r}"
    threshold = values["support_threshold"]
    if isinstance(threshold, bool) or not isinstance(threshold, int) or not 1 <= threshold <= 100_000:
        errors["support_threshold"] = f"must be a whole number from 1 to 100000, got {threshold!r}"
    target = values["review_target_hours"]
    if isinstance(target, bool) or not isinstance(target, int) or not 1 <= target <= MAX_REVIEW_TARGET_HOURS:
        errors["review_target_hours"] = f"must be a whole number of hours from 1 to {MAX_REVIEW_TARGET_HOURS}, got {target!r}"
    patterns = values["redaction_patterns"]
    if patterns is None:
        patterns = []
    if not isinstance(patterns, list):
        errors["redaction_patterns"] = f"must be a list of {{\"label\": …, \"regex\": …}}, got {type(patterns).__name__}"
    elif len(patterns) > MAX_REDACTION_PATTERNS:
        errors["redaction_patterns"] = f"at most {MAX_REDACTION_PATTERNS} patterns"
    else:
        unlabelled = [i for i, p in enumerate(patterns) if not isinstance(p, dict) or not str(p.get("label") or "").strip()]
        try:
            compile_agent_patterns(patterns)
        except (ValueError, TypeError) as exc:
            errors["redaction_patterns"] = str(exc)
        else:
            if unlabelled:
                errors["redaction_patterns"] = f"redaction_patterns[{unlabelled[0]}]: needs a label (what reviewers see instead of the match)"
        if "redaction_patterns" not in errors:
            cleaned["redaction_patterns"] = [{"label": str(p["label"]), "regex": str(p["regex"])} for p in patterns]
    try:
        cleaned["environments"] = clean_environments(values["environments"] or [])
    except ValidationError as exc:
        errors["environments"] = " ".join(exc.messages)
    if errors:
        raise ValidationError(errors)
    return cleaned


def agent_settings_update(*, agent: Agent, user, reason: str = "", **changes: Any) -> Agent:
    """Changes some of the settings in EDITABLE; the others keep their values. Raises
    PermissionDenied without manage_agent and ValidationError naming the field on bad values."""
    if not user_can_manage_agent(user, agent):
        raise PermissionDenied(f"You may not change the settings of {agent.name}.")
    unknown = set(changes) - set(EDITABLE)
    if unknown:
        raise ValidationError({sorted(unknown)[0]: "is not an agent setting"})
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        before = agent_settings_snapshot(locked)
        after = _validated({**before, **changes})
        if after == before:
            return locked
        dropped = sorted((set(before["environments"]) - set(after["environments"])) & environments_in_use(locked))
        if dropped:
            raise ValidationError(
                {"environments": f"{', '.join(dropped)} still serves released versions; promote or withdraw them first"}
            )
        for field, value in after.items():
            setattr(locked, field, value)
        locked.save(update_fields=list(EDITABLE))
        from .services import _notify_active_set_changed, audit

        changed = sorted(field for field in EDITABLE if before[field] != after[field])
        audit(
            action=AuditEvent.Action.SETTINGS, actor=user, agent=locked,
            reason=(reason or "").strip() or f"Agent settings changed: {', '.join(changed)}",
            before={k: before[k] for k in changed}, after={k: after[k] for k in changed},
        )
        if {"procedural_memory_enabled", "injection_cap", "environments"} & set(changed):
            agent_id = locked.pk
            transaction.on_commit(lambda: _notify_active_set_changed(agent_id), robust=True)
    return locked
