"""The write gate's screen: the one place every write path (proposals, imports, model drafts, edits;
library/services/) screens a version's content before it is stored, and what a version records of
it. The rules are library/policy/rules.py's patterns and library/policy/concepts' meaning layer
(docs/safety.md); this module only applies them to every field an agent receives.

A finding quarantines the version: flagged with the reasons, shown first to reviewers, never
approvable as it stands. The screen's record (policy version, trust level) goes into the version's
immutable provenance."""

from __future__ import annotations

from typing import Any, Protocol

from . import rules as policy


class ScreenedContent(Protocol):
    """What the screen reads of a version's content (services.Content)."""

    applies_when: str
    steps: list[str]
    forbidden_actions: list[str]
    preconditions: list[str]
    postconditions: list[str]
    verify_command: str


def screen_content(content: ScreenedContent) -> list[policy.Finding]:
    """The policy screen over every field of `content` an agent receives: appliesWhen, the steps,
    a coding procedure's Before:/After:/Verify: lines, and forbiddenActions for injected tool output."""
    return policy.screen(
        applies_when=content.applies_when,
        steps=content.steps,
        forbidden_actions=content.forbidden_actions,
        preconditions=content.preconditions,
        postconditions=content.postconditions,
        verify_command=content.verify_command,
    )


def screened_provenance(*, provenance: dict[str, Any], source: str, findings: list[policy.Finding]) -> dict[str, Any]:
    """`provenance` with the screen's record under "screen"."""
    return {**provenance, "screen": policy.screen_record(source=source, provenance=provenance, findings=findings)}


def quarantine_fields(findings: list[policy.Finding]) -> dict[str, Any]:
    """The version's quarantine columns for `findings`."""
    return {"quarantined": bool(findings), "quarantine_reasons": [finding.to_dict() for finding in findings]}
