"""Model-written drafts: an OpenAI-compatible chat model words a mined draft ("a model can then draft
the record from the skeleton and a few example transcripts, but the draft is only a candidate").

Off by default (`Agent.model_drafts_enabled`). It uses the agent's model settings and the HTTP client
of the model replay runner (library/evals/runners.post_json: the agent's timeout, the settings'
retries and backoff, the base URL checked against PROCMEM_EVAL_ALLOWED_URLS).

What the model reads: the intent, the skeleton, the rule draft (its steps already hold typed
placeholders), the required tools, the statistical contrast (which steps and argument values
separate resolved from failed tasks) and at most three *redacted* example excerpts — never raw
session data. What it writes: `{"appliesWhen", "steps", "forbiddenActions"}`, validated by a schema
(pydantic). Its draft is used only when
- it keeps every required tool named in a step (a draft that drops one is refused, with the tool),
- its steps name no literal value: a quoted value must be a safe literal (a word or short phrase,
  redaction.literals.is_safe_literal) and nothing id-shaped (digits, codes, e-mail addresses) appears outside
  a typed `{{placeholder}}`;
and it is redacted again like every draft, then proposed through the policy screen like any other
(an injected instruction is quarantined there). The rule draft is kept in the version's provenance
(`ruleDraft`) for the candidate page's side-by-side view; `draftedBy` names the model. A failure,
a timeout or a refusal leaves the rule draft as the candidate, and the run report says why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..agents.settings import url_allowed
from ..evals.errors import RunnerError
from ..evals.runners import HttpPolicy, post_json
from ..models import Agent
from ..models.secret_store import SecretUnavailable, resolve_secret
from ..redaction.literals import is_safe_literal
from ..redaction.redactor import Redactor
from .drafting import Draft

MAX_EXCERPTS = 3
MAX_EXCERPT_CHARS = 1500

SYSTEM_PROMPT = (
    "You write procedures for a tool-using support agent. You get the tool sequence that resolved "
    "customers' requests (the skeleton), a rule-written draft, the statistics that separate resolved "
    "from failed sessions, and redacted example excerpts. Answer with one JSON object only: "
    '{"appliesWhen": "<one sentence: when the procedure applies, in the customer\'s words>", '
    '"steps": ["<imperative step naming its tool and its {{placeholders}}>", ...], '
    '"forbiddenActions": ["<what the agent must not do>", ...]}. '
    "Keep every required tool, in the skeleton's order; keep the typed placeholders such as {{order_id}}; "
    "never write a concrete id, name, e-mail address, date or amount."
)


class DraftOut(BaseModel):
    """The model's answer."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    appliesWhen: str = Field(min_length=10, max_length=500)
    steps: list[str] = Field(min_length=1, max_length=20)
    forbiddenActions: list[str] = Field(default_factory=list, max_length=10)

    def clean(self) -> DraftOut:
        steps = [" ".join(s.split()) for s in self.steps]
        forbidden = [" ".join(s.split()) for s in self.forbiddenActions]
        if any(not s or len(s) > 500 for s in steps + forbidden):
            raise ValueError("a step or forbidden action is empty or longer than 500 characters")
        return DraftOut(appliesWhen=" ".join(self.appliesWhen.split()), steps=steps, forbiddenActions=forbidden)


@dataclass
class Outcome:
    """What the drafter did with one draft: `draft` is the one to propose (the model's or the rule's)."""

    draft: Draft
    status: str  # "used" | "refused" | "failed"
    reason: str
    model: str

    def report(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "model": self.model}


_QUOTED = re.compile(r"'([^'{}]{1,80})'|\"([^\"{}]{1,80})\"")
_PLACEHOLDER = re.compile(r"\{\{\s*[a-z_][a-z0-9_]*\s*\}\}")
_ALL_CAPS = re.compile(r"\b[A-Z]{3,}\b")


def literal_problems(texts: list[str], *, tools: list[str], steps: int = 0) -> list[str]:
    """Literal values the texts name that the literal/placeholder rules refuse: an unsafe quoted
    literal, an e-mail address, a word with a digit (ORD-10231, 480), and in the first `steps` texts
    (the steps) an all-caps code. Tool names and typed placeholders are not literals."""
    problems: list[str] = []
    names = sorted({t for t in tools if t}, key=len, reverse=True)
    tool_re = re.compile(r"(?<![\w.])(?:" + "|".join(re.escape(t) for t in names) + r")(?![\w])") if names else None
    for position, text in enumerate(texts):
        bare = _PLACEHOLDER.sub(" ", text)
        for match in _QUOTED.finditer(bare):
            value = match.group(1) or match.group(2)
            if not is_safe_literal(value):
                problems.append(f"the literal {value!r} is not a safe literal")
        for match in re.finditer(r"[^\s@'\"(]+@[^\s@]+\.[a-z]{2,}", bare, re.IGNORECASE):
            problems.append(f"the e-mail address {match.group(0).rstrip('.')!r}")
        bare = re.sub(r"[^\s@'\"(]+@[^\s@]+\.[a-z]{2,}", " ", bare, flags=re.IGNORECASE)
        without_tools = tool_re.sub(" ", bare) if tool_re else bare
        for match in re.finditer(r"\b[\w#-]*\d[\w#-]*\b", without_tools):
            problems.append(f"the id-shaped value {match.group(0)!r}")
        if position < steps:
            for match in _ALL_CAPS.finditer(without_tools):
                problems.append(f"the code {match.group(0)!r}")
    return list(dict.fromkeys(problems))


def request_for(agent: Agent, draft: Draft, *, intent_name: str) -> dict[str, Any]:
    """The chat-completions request: only the skeleton, the rule draft, the contrast statistics and
    redacted excerpts (the evidence's, which are redacted when stored)."""
    evidence = draft.evidence or {}
    excerpts = []
    for item in (evidence.get("excerpts") or [])[:MAX_EXCERPTS]:
        text = (
            json.dumps(item.get("excerpt"), ensure_ascii=False)
            if not isinstance(item.get("excerpt"), str)
            else item["excerpt"]
        )
        excerpts.append(text[:MAX_EXCERPT_CHARS])
    contrast = {
        "resolvedTasks": evidence.get("support"),
        "failedWithSkeleton": evidence.get("failedWithSkeleton"),
        "tools": [
            {k: t.get(k) for k in ("tool", "resolvedRate", "failedRate", "separates") if k in t}
            for t in (evidence.get("tools") or [])[:12]
            if isinstance(t, dict)
        ],
        "arguments": [
            {k: a.get(k) for k in ("step", "tool", "key", "value", "resolvedRate", "failedRate", "separates")}
            for a in (evidence.get("arguments") or [])[:12]
            if isinstance(a, dict)
        ],
    }
    user = {
        "intent": intent_name,
        "skeleton": draft.skeleton,
        "requiredTools": draft.required_tools,
        "ruleDraft": {
            "appliesWhen": draft.applies_when,
            "steps": draft.steps,
            "forbiddenActions": draft.forbidden_actions,
        },
        "contrast": contrast,
        "redactedExcerpts": excerpts,
    }
    return {
        "model": agent.model_name,
        "temperature": 0,
        "response_format": {"type": "json_object"},
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": json.dumps(user, ensure_ascii=False, sort_keys=True)},
        ],
    }


def _parse(data: Any) -> DraftOut:
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ValueError("malformed chat-completions response: no choices[0].message.content") from None
    if not isinstance(content, str):
        raise ValueError("the model's content is not text")
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`").split("\n", 1)[-1] if "\n" in text else text.strip("`")
    try:
        return DraftOut.model_validate_json(text).clean()
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(
            f"the model's draft does not fit the schema: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
        ) from None


def _policy(agent: Agent) -> HttpPolicy:
    return HttpPolicy(
        timeout=float(agent.eval_timeout_seconds),
        retries=settings.PROCMEM_EVAL_HTTP_RETRIES,
        backoff=settings.PROCMEM_EVAL_HTTP_BACKOFF_SECONDS,
    )


def model_draft(*, agent: Agent, draft: Draft, intent_name: str) -> Outcome:
    """Asks the agent's model to word `draft`; returns the draft to propose and what happened. Never
    raises for the model's failures: the rule draft stays."""

    model = agent.model_name or "?"
    if not agent.model_base_url or not agent.model_name:
        return Outcome(draft, "failed", "the agent has no model base URL or model name", model)
    if not url_allowed(agent.model_base_url):
        return Outcome(draft, "failed", f"{agent.model_base_url!r} is outside PROCMEM_EVAL_ALLOWED_URLS", model)
    try:
        api_key = resolve_secret(agent.model_api_key)
    except SecretUnavailable as exc:
        return Outcome(draft, "failed", str(exc), model)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = agent.model_base_url.rstrip("/") + "/chat/completions"
    try:
        answer = _parse(
            post_json(url, request_for(agent, draft, intent_name=intent_name), policy=_policy(agent), headers=headers)
        )
    except (RunnerError, ValueError) as exc:
        return Outcome(draft, "failed", str(exc)[:500], model)
    named = " ".join(answer.steps)
    dropped = [tool for tool in draft.required_tools if not re.search(rf"(?<![\w.]){re.escape(tool)}(?![\w])", named)]
    if dropped:
        return Outcome(
            draft,
            "refused",
            f"the model's draft drops the required tool{'s' if len(dropped) > 1 else ''} {', '.join(dropped)}",
            model,
        )
    problems = literal_problems(
        [*answer.steps, answer.appliesWhen, *answer.forbiddenActions],
        tools=draft.required_tools + draft.skeleton,
        steps=len(answer.steps),
    )
    if problems:
        return Outcome(draft, "refused", "the model's draft names literal values: " + "; ".join(problems[:5]), model)
    worded = reworded(
        draft, agent, applies_when=answer.appliesWhen, steps=answer.steps, forbidden_actions=answer.forbiddenActions
    )
    return Outcome(worded, "used", f"worded by {model}", model)


def reworded(draft: Draft, agent: Agent, *, applies_when: str, steps: list[str], forbidden_actions: list[str]) -> Draft:
    """The draft with wording from outside the miner (a model's draft, a polisher's rewording), redacted
    like every draft: the wording might echo something the excerpts' redaction kept."""
    redactor = Redactor(agent_patterns=agent.redaction_patterns, keep=agent.tools or [])
    return replace(
        draft,
        applies_when=redactor.text(applies_when),
        steps=[redactor.text(step) for step in steps],
        forbidden_actions=[redactor.text(text) for text in forbidden_actions],
    )


def rule_draft_record(draft: Draft) -> dict[str, Any]:
    """The rule draft as the provenance keeps it for the side-by-side view."""
    return {
        "appliesWhen": draft.applies_when,
        "steps": list(draft.steps),
        "forbiddenActions": list(draft.forbidden_actions),
    }
