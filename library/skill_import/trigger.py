"""Does a skill trigger? Agents choose a skill by its `description` alone, so a description must
say when to use the skill, not only what it does."""

from __future__ import annotations

import re

# Wordings that tell an agent when to reach for the skill ("Use when …", "Use this skill whenever …",
# "… when the customer asks …", "for tasks that …"). Checked on the description as written.
_WHEN = re.compile(
    r"\b(use (it |this( skill)? |them )?(when|whenever|for|if|to|in|on|before|after)\b"
    r"|when(ever)? (the|a|an|you|your|asked|someone|user|users|customer|customers|working|writing|building|"
    r"creating|editing|handling|dealing)\b"
    r"|whenever\b|if the (user|customer|task)\b|applies when\b|for (tasks|requests|questions) (that|about|where|which)\b"
    r"|triggers? (on|when)\b)",
    re.IGNORECASE,
)


def says_when_to_use(description: str) -> bool:
    """True when the description says when to use the skill (one of the wordings above)."""
    return bool(_WHEN.search(description or ""))
