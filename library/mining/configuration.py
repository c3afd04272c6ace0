"""An agent's capture settings: whether scheduled mining runs for it (opt-in), which sessions are
mined, and how strict the evidence must be. Changed by a user who holds `manage_agent` on the agent
(the settings page) or from the shell (`manage.py agent_settings`); every change is audited with
before and after."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from ..models import Agent, AuditEvent
from ..permissions import user_can_manage_agent


class CaptureSettings(BaseModel):
    """The bounds of each setting (the database checks the same ranges)."""

    model_config = ConfigDict(extra="forbid", strict=False)

    auto_capture_enabled: bool
    min_tool_calls: int = Field(ge=1, le=100)
    support_threshold: int = Field(ge=1, le=100_000)
    significance_level: float = Field(gt=0, le=0.5)
    backtest_share: float = Field(ge=0, le=0.5)


EDITABLE = tuple(CaptureSettings.model_fields)
LABELS = {
    "auto_capture_enabled": "Automatic capture (scheduled mining)",
    "min_tool_calls": "Minimum tool calls of a mined session",
    "support_threshold": "Support threshold (distinct tasks)",
    "significance_level": "Significance level (family-wise, per run)",
    "backtest_share": "Share of the newest sessions held back for the backtest",
}


def capture_settings_snapshot(agent: Agent) -> dict[str, Any]:
    return {field: getattr(agent, field) for field in EDITABLE}


def capture_settings_validate(values: dict[str, Any]) -> dict[str, Any]:
    """The cleaned settings, or a ValidationError naming the field and what is wrong with it."""
    try:
        return CaptureSettings(**values).model_dump()
    except PydanticValidationError as exc:
        errors: dict[str, list[str]] = {}
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else "settings"
            message = "is not a capture setting" if error["type"] == "extra_forbidden" else error["msg"]
            errors.setdefault(field, []).append(f"{field}: {message} (got {error.get('input')!r})")
        raise ValidationError(errors) from None


def agent_capture_settings_update(*, agent: Agent, user=None, actor_label: str = "", **changes: Any) -> Agent:
    """Changes some of the capture settings. `user` must hold manage_agent on the agent; without a
    user (the management command) `actor_label` names who acted."""
    if user is not None and not user_can_manage_agent(user, agent):
        raise PermissionDenied(f"You may not change the capture settings of {agent.name}.")
    if user is None and not actor_label:
        raise PermissionDenied("A change without a user needs an actor label.")
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        before = capture_settings_snapshot(locked)
        cleaned = capture_settings_validate({**before, **changes})
        if cleaned == before:
            return locked
        for field, value in cleaned.items():
            setattr(locked, field, value)
        locked.save(update_fields=list(EDITABLE))
        from ..services import audit

        audit(
            action=AuditEvent.Action.SETTINGS, actor=user, actor_label=actor_label, agent=locked,
            reason="Capture settings changed", before=before, after=cleaned,
        )
    return locked
