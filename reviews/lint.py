"""Lint for a procedure version: what a reviewer should look at before deciding.

Findings are advice shown on the candidate page; the hard gates (quarantine, more than eight steps,
missing tools, the eval) are enforced again by `library.services.approval_blockers` on approval.

Rules:
- missing_tool: a required tool that the agent does not have (any more);
- undeclared_tool: a step names one of the agent's tools that requiredTools does not list;
- forbidden_conflict: a step does what a forbidden action forbids (a heuristic: the forbidden
  action's verb and most of its content words appear in the step, and the step is not itself a
  negation);
- too_many_steps: more than eight steps is a deterministic workflow that belongs in code;
- overlap: the appliesWhen of another ACTIVE procedure of the agent is close by embedding
  similarity (the agent might retrieve both, or the wrong one);
- policy: the policy screen's findings stored with the version (it is quarantined).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from library import embeddings
from library.services import MAX_STEPS_APPROVABLE

logger = logging.getLogger(__name__)

Severity = Literal["error", "warning", "info"]

OVERLAP_THRESHOLD = 0.80

_NEGATION_RE = re.compile(
    r"^\s*(do not|don't|dont|never|must not|mustn't|should not|shouldn't|avoid|no)\b[\s,:-]*", re.I
)
_WORD_RE = re.compile(r"[a-z0-9_]+")
_STOPWORDS = frozenset(
    "a an the to of for in on at by with and or any before after from into than then that this it its "
    "is are be been was were their his her your our customer user agent".split()
)


@dataclass(frozen=True)
class LintFinding:
    rule: str
    severity: Severity
    message: str
    field: str = ""

    @property
    def sign(self) -> str:
        return {"error": "✖", "warning": "▲", "info": "ℹ"}[self.severity]


@dataclass(frozen=True)
class ActiveProcedure:
    """Another procedure's ACTIVE version, as far as the overlap check needs it."""

    key: str
    number: int
    applies_when: str
    version_id: int | None = None  # its embedding is stored (library.embeddings.version_vectors)


def _stem(word: str) -> str:
    # Crude, deterministic, language-agnostic enough: "promises"/"promised"/"promising" → "promis".
    return word[:6] if len(word) > 6 else word.rstrip("s")


def _content_words(text: str) -> list[str]:
    return [_stem(w) for w in _WORD_RE.findall(text.lower()) if w not in _STOPWORDS]


def _mentions_tool(text: str, tool: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(tool)}(?![A-Za-z0-9_])", text) is not None


def forbidden_conflicts(steps: Sequence[str], forbidden_actions: Sequence[str]) -> list[tuple[int, str]]:
    """(step number, forbidden action) pairs where the step appears to do what is forbidden."""
    conflicts: list[tuple[int, str]] = []
    for action in forbidden_actions:
        if not _NEGATION_RE.match(action):
            continue  # not phrased as a prohibition; nothing to compare
        body = _NEGATION_RE.sub("", action, count=1)
        words = _content_words(body)
        if not words:
            continue
        verb, rest = words[0], set(words[1:])
        for number, step in enumerate(steps, start=1):
            if _NEGATION_RE.match(step) or re.search(r"\b(do not|don't|never|unless|only after)\b", step, re.I):
                continue
            step_words = set(_content_words(step))
            if verb not in step_words:
                continue
            if not rest or len(rest & step_words) / len(rest) >= 0.5:
                conflicts.append((number, action))
    return conflicts


def lint_content(
    *,
    applies_when: str,
    steps: Sequence[str],
    required_tools: Sequence[str],
    forbidden_actions: Sequence[str],
    agent_tools: Sequence[str],
    quarantine_reasons: Iterable[dict] = (),
) -> list[LintFinding]:
    """Every rule except the embedding overlap (which needs the model and the other procedures)."""
    findings: list[LintFinding] = []
    for reason in quarantine_reasons:
        findings.append(
            LintFinding(
                "policy",
                "error",
                f"Policy screen: {reason.get('reason', reason.get('category', 'flagged'))}"
                + (f" — “{reason['excerpt']}”" if reason.get("excerpt") else ""),
                reason.get("field", ""),
            )
        )
    missing = [tool for tool in required_tools if tool not in agent_tools]
    if missing:
        findings.append(
            LintFinding("missing_tool", "error", f"The agent does not have: {', '.join(missing)}.", "requiredTools")
        )
    for number, step in enumerate(steps, start=1):
        undeclared = [tool for tool in agent_tools if tool not in required_tools and _mentions_tool(step, tool)]
        if undeclared:
            findings.append(
                LintFinding(
                    "undeclared_tool",
                    "warning",
                    f"Step {number} uses {', '.join(undeclared)}, which the required tools do not list.",
                    f"steps[{number}]",
                )
            )
    for number, action in forbidden_conflicts(steps, forbidden_actions):
        findings.append(
            LintFinding(
                "forbidden_conflict",
                "error",
                f"Step {number} appears to do what is forbidden: “{action}”",
                f"steps[{number}]",
            )
        )
    if len(steps) > MAX_STEPS_APPROVABLE:
        findings.append(
            LintFinding(
                "too_many_steps",
                "error",
                f"{len(steps)} steps: more than {MAX_STEPS_APPROVABLE} is a deterministic workflow that belongs in code, not in a prompt.",
                "steps",
            )
        )
    return findings


def overlap_findings(
    applies_when: str,
    others: Sequence[ActiveProcedure],
    *,
    threshold: float = OVERLAP_THRESHOLD,
    version_id: int | None = None,
) -> list[LintFinding]:
    """Other ACTIVE procedures whose appliesWhen is close to this one by embedding similarity.
    Versions (`version_id`, each other's) are compared by their stored embeddings, read in one
    query and embedded only once ever: a fresh process's first candidate page embedded every text
    again (about a second each on a busy machine). A draft's text is embedded (and cached)."""
    if not others:
        return []
    try:
        stored = embeddings.stored_vectors(
            {
                vid: text
                for vid, text in [(version_id, applies_when), *((o.version_id, o.applies_when) for o in others)]
                if vid
            }
        )

        def vector(vid: int | None, text: str):
            return stored[vid] if vid in stored else embeddings.embed_one(text)

        mine = vector(version_id, applies_when)
        scored = [(embeddings.cosine(mine, vector(o.version_id, o.applies_when)), o) for o in others]
    except Exception as exc:  # the model is a local file; a broken install must not take the page down
        logger.warning("overlap lint unavailable: %s", exc)
        return [LintFinding("overlap", "info", f"The overlap check is unavailable: {exc}", "appliesWhen")]
    findings = []
    for score, other in sorted(scored, key=lambda pair: -pair[0]):
        if score >= threshold:
            findings.append(
                LintFinding(
                    "overlap",
                    "warning",
                    f"“Applies when” overlaps with ACTIVE {other.key} v{other.number} "
                    f"(similarity {score:.2f}): “{other.applies_when}” — the agent may retrieve either one for the same task.",
                    "appliesWhen",
                )
            )
    return findings


def lint_version(version, *, other_active: Sequence[ActiveProcedure]) -> list[LintFinding]:
    """All rules for a ProcedureVersion (caller selected procedure__agent). `other_active` are the
    ACTIVE versions of the agent's other procedures."""
    findings = lint_content(
        applies_when=version.applies_when,
        steps=version.steps,
        required_tools=version.required_tools,
        forbidden_actions=version.forbidden_actions,
        agent_tools=version.procedure.agent.tools,
        quarantine_reasons=version.quarantine_reasons or [],
    )
    findings += overlap_findings(version.applies_when, other_active, version_id=version.pk)
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(findings, key=lambda f: order[f.severity])
