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


# ... or a situation: someone or something doing or being something ("The customer asks for a refund",
# "a test fails"), the way procmem's appliesWhen sentences are written
_SITUATION = re.compile(
    r"\b(customers?|users?|callers?|clients?|agents?|someone|requesters?|passengers?|patients?|tasks?|tests?|"
    r"builds?|tickets?|requests?|orders?)\b[^.]{0,40}?\b(asks?|wants?|needs?|requests?|reports?|fails?|has|have|is|are|"
    r"cannot|can't|says?|calls?|breaks?|contains?)\b",
    re.IGNORECASE,
)


def says_when_to_use(text: str) -> bool:
    """True when `text` (a skill's description, or the appliesWhen procmem's description is built
    from) says when to use the skill: a wording above, or a situation."""
    return bool(_WHEN.search(text or "") or _SITUATION.search(text or ""))
