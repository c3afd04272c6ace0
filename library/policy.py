"""The policy screen (pure Python, no Django): finds text in a procedure that would turn it into a
vector for poisoning the agent. A version with findings is quarantined: flagged with the reasons,
shown first to reviewers, never approvable as it stands.

Each rule is a category, a reason a reviewer can read, and patterns. Matching is on a normalised
text (lower case, whitespace collapsed, common homoglyph tricks undone) so that "I g n o r e" or
zero-width characters do not slip through.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Finding:
    category: str
    reason: str
    field: str
    excerpt: str

    def to_dict(self) -> dict[str, str]:
        return {"category": self.category, "reason": self.reason, "field": self.field, "excerpt": self.excerpt}


_RULES: list[tuple[str, str, list[str]]] = [
    (
        "skip_approval",
        "tells the agent to skip or bypass an approval",
        [
            r"\b(skip|bypass|avoid|omit|circumvent|don'?t (need|bother) (to )?(get|request|create|wait for))\b[^.]{0,40}\bapprov",
            r"\bwithout (an? |any )?(manager'?s? )?approv",
            r"\bno (need for|approval (is )?(needed|required))",
            r"\bself[- ]approv",
        ],
    ),
    (
        "skip_identity_check",
        "tells the agent to skip identity or authentication checks",
        [
            r"\b(skip|bypass|avoid|omit|ignore)\b[^.]{0,40}\b(identity|verification|verify|authenticat|kyc|id check)",
            r"\bwithout (verifying|checking|authenticating)\b[^.]{0,30}\b(identity|user|customer|caller)",
            r"\bno need to (verify|authenticate|check (the )?identity)",
        ],
    ),
    (
        "widen_permissions",
        "tells the agent to widen permissions or escalate its own privileges",
        [
            r"\b(grant|give|escalate|elevate|widen|raise)\b[^.]{0,40}\b(admin|root|superuser|privilege|permission|access|role)",
            r"\b(disable|turn off|remove)\b[^.]{0,30}\b(limit|rate limit|guard|restriction|check)s?\b",
            r"\bsudo\b|\bchmod\s+777\b",
        ],
    ),
    (
        "ignore_rules",
        "tells the agent to ignore its rules or instructions",
        [
            r"\b(ignore|disregard|forget|override)\b[^.]{0,40}\b(previous|prior|above|earlier|all|your|the|system)\b[^.]{0,30}\b(instruction|rule|polic|guideline|prompt)",
            r"\bdo not follow\b[^.]{0,30}\b(instruction|rule|polic)",
            r"\byou are now\b|\bnew instructions?:",
        ],
    ),
    (
        "override_safety",
        "tells the agent to override safety policy",
        [
            r"\b(override|bypass|disable|ignore|turn off)\b[^.]{0,40}\b(safety|content|security|guardrail|filter|moderation)",
            r"\bjailbreak|\bdeveloper mode\b|\bdan mode\b",
        ],
    ),
    (
        "tool_output_instruction",
        "carries instructions that came from untrusted tool output",
        [
            r"\b(tool|function|api|search|web) (output|result|response)s? (says?|instructs?|tells?)\b",
            r"<\s*/?\s*(system|instructions?|tool_output|im_start|im_end)\s*>",
            r"\[\s*(system|inst)\s*\]|<<\s*sys\s*>>",
            r"\b(assistant|system)\s*:\s*(ignore|you must|always)",
            r"\bfollow the instructions (in|from) the (tool|function|api|result|output|document|page|email)",
        ],
    ),
]

_COMPILED = [(cat, reason, [re.compile(p, re.IGNORECASE) for p in patterns]) for cat, reason, patterns in _RULES]
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH)
    # "i g n o r e" → "ignore": collapse runs of single letters separated by single spaces
    text = re.sub(r"\b(?:[A-Za-z] ){3,}[A-Za-z]\b", lambda m: m.group(0).replace(" ", ""), text)
    return re.sub(r"\s+", " ", text).strip().lower()


def screen_text(text: str, field: str) -> list[Finding]:
    normalised = normalise(text)
    findings: list[Finding] = []
    for category, reason, patterns in _COMPILED:
        for pattern in patterns:
            match = pattern.search(normalised)
            if match:
                start = max(0, match.start() - 20)
                findings.append(Finding(category, reason, field, normalised[start : match.end() + 20]))
                break
    return findings


def screen(*, applies_when: str, steps: Iterable[str], forbidden_actions: Iterable[str] = ()) -> list[Finding]:
    """Screens the fields an agent would read as instructions. forbiddenActions are screened for
    injected instructions only: "do not skip approval" is the lesson, not the attack."""
    findings = screen_text(applies_when, "appliesWhen")
    for index, step in enumerate(steps, start=1):
        findings.extend(screen_text(step, f"steps[{index}]"))
    for index, action in enumerate(forbidden_actions, start=1):
        findings.extend(f for f in screen_text(action, f"forbiddenActions[{index}]") if f.category == "tool_output_instruction")
    return findings
