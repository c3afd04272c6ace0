"""What a version holds and the checks of its shape: `Content` and `validate_content` (and the
limits the reviewer's lint and forms share)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from django.core.exceptions import ValidationError

from ..models import content_hash

MAX_STEPS_APPROVABLE = 8
MAX_STEPS_STORED = 100
MAX_FIELD_CHARS = 2000


@dataclass(frozen=True)
class Content:
    applies_when: str
    steps: list[str]
    required_tools: list[str]
    forbidden_actions: list[str]
    # a coding procedure's contract; empty for every other procedure
    preconditions: list[str] = field(default_factory=list)
    postconditions: list[str] = field(default_factory=list)
    verify_command: str = ""

    @property
    def hash(self) -> str:
        return content_hash(**asdict(self))

    @property
    def is_coding(self) -> bool:
        return bool(self.preconditions or self.postconditions or self.verify_command)


def _clean_str_list(value: Any, field: str, *, allow_empty: bool, max_items: int) -> list[str]:
    if not isinstance(value, (list, tuple)):
        raise ValidationError({field: f"must be a list of strings, got {type(value).__name__}"})
    cleaned: list[str] = []
    for index, item in enumerate(value, start=1):
        if not isinstance(item, str):
            raise ValidationError({field: f"item {index} must be a string, got {type(item).__name__}"})
        item = item.strip()
        if not item:
            raise ValidationError({field: f"item {index} is empty"})
        if len(item) > MAX_FIELD_CHARS:
            raise ValidationError({field: f"item {index} is longer than {MAX_FIELD_CHARS} characters"})
        cleaned.append(item)
    if not cleaned and not allow_empty:
        raise ValidationError({field: "must have at least one item"})
    if len(cleaned) > max_items:
        raise ValidationError({field: f"has {len(cleaned)} items; at most {max_items} are stored"})
    return cleaned


MAX_VERIFY_COMMAND_CHARS = 1000


def validate_content(
    *,
    applies_when: Any,
    steps: Any,
    required_tools: Any,
    forbidden_actions: Any,
    preconditions: Any = None,
    postconditions: Any = None,
    verify_command: Any = None,
    coding: bool = False,
) -> Content:
    """Checks the shape of a version's content; raises ValidationError naming the field.

    More than eight steps is stored (the reviewer's lint flags it) but never approvable. A coding
    agent's procedure (`coding`) needs a verify command: no verify command, no coding procedure."""
    preconditions = _clean_str_list(preconditions or [], "preconditions", allow_empty=True, max_items=20)
    postconditions = _clean_str_list(postconditions or [], "postconditions", allow_empty=True, max_items=20)
    if verify_command is None:
        verify_command = ""
    if not isinstance(verify_command, str):
        raise ValidationError(
            {"verifyCommand": f"must be a string (one shell command), got {type(verify_command).__name__}"}
        )
    verify_command = verify_command.strip()
    if len(verify_command) > MAX_VERIFY_COMMAND_CHARS:
        raise ValidationError({"verifyCommand": f"is longer than {MAX_VERIFY_COMMAND_CHARS} characters"})
    if coding and not verify_command:
        raise ValidationError(
            {
                "verifyCommand": "is required for a coding agent's procedure: the command that verifies the work (e.g. the test run that passed)"
            }
        )
    if not isinstance(applies_when, str) or not applies_when.strip():
        raise ValidationError({"appliesWhen": "is required: one sentence saying when the procedure applies"})
    applies_when = " ".join(applies_when.split())
    if len(applies_when) > MAX_FIELD_CHARS:
        raise ValidationError({"appliesWhen": f"is longer than {MAX_FIELD_CHARS} characters"})
    steps = _clean_str_list(steps, "steps", allow_empty=False, max_items=MAX_STEPS_STORED)
    required_tools = _clean_str_list(required_tools, "requiredTools", allow_empty=True, max_items=100)
    if len(set(required_tools)) != len(required_tools):
        raise ValidationError({"requiredTools": "lists a tool twice"})
    forbidden_actions = _clean_str_list(forbidden_actions, "forbiddenActions", allow_empty=True, max_items=50)
    return Content(
        applies_when, steps, required_tools, forbidden_actions, preconditions, postconditions, verify_command
    )
