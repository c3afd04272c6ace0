"""What the evidence and eval panels show, computed from the stored records apart from rendering.

Both panels read JSON that other parts write (the miner's `evidence`, the eval run's
`verdict_detail`), so they take whatever keys exist and degrade to "not recorded" for the rest:
a candidate written by hand has no evidence at all, an imported one may have a few numbers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from library import formatting
from library.environments import approval_environment
from library.models import PRODUCTION, EvalRun, ProcedureVersion
from library.services import selection_reach_blocker

from .key_words import FIGURE_LABELS, key_words, value_words

# ------------------------------------------------------------------------------------------- evidence

# Keys of the miner's evidence record (library/mining/drafting.py) that the panel shows in its own places;
# any other key is listed under "other recorded evidence".
_EXCERPT_KEYS = ("excerpts", "redactedExcerpts", "examples")
_SESSION_KEYS = ("sessionIds", "sessions", "session_ids", "exampleSessions")
_SHOWN = {
    "support",
    "resolved",
    "failed",
    "failedWithSkeleton",
    "skeleton",
    "summary",
    "tools",
    "pairs",
    "forbidden",
    "alternatives",
    "toolContrast",
    "contrasts",
    "intent",
    "supportRate",
    "failedWithSkeletonRate",
    "evalRunId",
    "unit",
    "skeletonTest",
    "skeletonLift",
    "skeletonLiftLow",
    "skeletonLiftHigh",
    "backtest",
    "variants",
    "arguments",
    "proposed",
    "supportSessions",
    "resolvedSessions",
    "failedSessions",
    "outcomes",
    "conditions",
    # a coding procedure's (library/mining/mining_runs._draft_coding)
    "agentKind",
    "verifyCommand",
    "verifySupport",
    "verifySessions",
    "distinctTasks",
    "orderContrast",
    # a coding task family's (library/coding/families.py)
    "family",
    "traces",
    "tracesTotal",
    "verifyForm",
    "verifyForms",
    "verifyPassRate",
    "contrast",
    "filesRead",
    "filesWritten",
    "testModules",
    "testFiles",
    "verifyAlternatives",
    "verifyDisagreement",
    "recoveryNotes",
    "minTraces",
    "words",
    # proposed by a reviewer from a run's report (library/mining/mining_runs.mining_report_propose)
    "proposedDespite",
    # the within-task gate and what it shows (library/mining/within.py)
    "withinTask",
    "orderBeyondTools",
    "heldOrderBeyondTools",
    "byModelFamily",
    "agreement",
    "stepsCompressed",
    "workflow",
    *_EXCERPT_KEYS,
    *_SESSION_KEYS,
}


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _percent(part, whole) -> str:
    if part is None or not whole:
        return ""
    return formatting.percent(part / whole)


@dataclass
class ExcerptLine:
    who: str
    text: str


@dataclass
class Excerpt:
    title: str
    lines: list[ExcerptLine]
    outcome: str = ""


@dataclass
class Evidence:
    support: int | float | None = None
    resolved: int | float | None = None
    failed: int | float | None = None
    failed_with_skeleton: int | float | None = None
    summary: str = ""
    skeleton: list[str] = field(default_factory=list)
    excerpts: list[Excerpt] = field(default_factory=list)
    tool_lines: list[str] = field(default_factory=list)  # per tool: resolved vs failed sessions calling it
    order_lines: list[str] = field(default_factory=list)  # per ordered pair of tools
    forbidden_lines: list[str] = field(default_factory=list)  # what each forbidden action was drawn from
    alternatives: list[str] = field(default_factory=list)
    unit: str = "sessions"
    statistics: str = ""  # the skeleton's test: lift with its interval, p-values
    rate_lines: list[str] = field(default_factory=list)  # both rates with their Wilson intervals
    backtest: dict[str, Any] = field(default_factory=dict)  # verdict, contradicted, followers, others
    variant_lines: list[str] = field(default_factory=list)
    condition_lines: list[str] = field(default_factory=list)  # a looked-up value that decides a step
    argument_lines: list[str] = field(default_factory=list)
    outcome_line: str = ""
    session_count: int = 0
    other: list[tuple[str, str]] = field(default_factory=list)
    source: str = ""
    # coding procedures: the activity phases, where the verify command comes from, the order contrast
    coding: bool = False
    verify_line: str = ""
    distinct_tasks: int | None = None
    coding_order_lines: list[str] = field(default_factory=list)
    # a coding task family: its name, its figures in words, its recovery notes, its traces
    family: str = ""
    task_family_lines: list[str] = field(default_factory=list)
    recovery_lines: list[str] = field(default_factory=list)
    trace_lines: list[str] = field(default_factory=list)
    # a reviewer proposed it although the skeleton's test was not credible: who, when, why
    proposed_despite: str = ""
    # the gate: followers vs other sessions within tasks; what the order adds beyond the tools;
    # whether the backtest agrees; the contrast per model family
    within_line: str = ""
    tool_list: bool = False
    beyond_lines: list[str] = field(default_factory=list)
    disagreement: str = ""
    family_lines: list[tuple[str, str, bool]] = field(default_factory=list)  # (family, figures, holds)

    @property
    def has_contrast(self) -> bool:
        return self.support is not None and self.resolved is not None

    @property
    def resolved_share(self) -> str:
        return _percent(self.support, self.resolved)

    @property
    def failed_share(self) -> str:
        return _percent(self.failed_with_skeleton, self.failed)

    @property
    def is_empty(self) -> bool:
        return not (
            self.has_contrast
            or self.support is not None
            or self.summary
            or self.skeleton
            or self.excerpts
            or self.tool_lines
            or self.order_lines
            or self.forbidden_lines
            or self.other
            or self.backtest
        )


def excerpt_lines(raw: Any) -> list[ExcerptLine]:
    """A redacted excerpt is a list of turns: strings, or dicts such as {"role": "user", "text": …},
    {"role": "tool_call", "tool": …, "args": {…}, "ok": …}, {"role": "note", "text": …}."""
    if isinstance(raw, str):
        return [ExcerptLine("", raw)]
    if isinstance(raw, dict):
        raw = raw.get("excerpt") or raw.get("turns") or raw.get("lines") or [raw]
    lines: list[ExcerptLine] = []
    for turn in raw if isinstance(raw, list) else [raw]:
        if not isinstance(turn, dict):
            lines.append(ExcerptLine("", str(turn)))
            continue
        role = str(turn.get("role") or turn.get("author") or turn.get("speaker") or "")
        tool = turn.get("tool") or (turn.get("name") if role in {"tool", "tool_call"} else None)
        args = turn.get("args")
        if tool and isinstance(args, dict) and args.get("activity"):
            lines.append(ExcerptLine(f"{args['activity']}", _coding_line(tool, args, turn.get("ok"))))
            continue
        if tool:
            args = turn.get("args", turn.get("arguments", {}))
            text = turn.get("text") or f"{tool}({json.dumps(args, ensure_ascii=False)[:300]})"
            if turn.get("ok") is False:
                text += "  ✗ failed"
            if isinstance(turn.get("result"), dict) and turn["result"]:  # the stored summary of what it returned
                text += "  → " + ", ".join(f"{k}: {v}" for k, v in list(turn["result"].items())[:12])
            lines.append(ExcerptLine("tool call", str(text)))
        else:
            text = turn.get("text") or turn.get("content") or json.dumps(turn, ensure_ascii=False)
            lines.append(ExcerptLine(role.replace("_", " "), str(text)))
    return lines


def _coding_line(tool: str, args: dict[str, Any], ok: Any) -> str:
    """One command of a coding session: the command (or tool), its generalised target and role,
    the exit code and the start of its (redacted) output."""
    text = str(args.get("command") or tool)
    if args.get("target"):
        text += f"  → {args['target']} ({args.get('role', '')})"
    if args.get("returncode") is not None:
        text += f"  [exit {args['returncode']}]"
    elif ok is False:
        text += "  ✗ failed"
    if args.get("output"):
        text += f"\n{str(args['output'])[:200]}"
    return text


def _outcome(session) -> str:
    if session.resolved and not session.escalated:
        return "resolved"
    if session.escalated:
        return "escalated"
    if session.resolved is False:
        return "failed"
    return "no outcome"


def _counts(r: Any, big_r: Any, f: Any, big_f: Any) -> str:
    r, f = _number(r), _number(f)
    if r is None or f is None:
        return ""
    left = f"{r} of {big_r} resolved" if big_r is not None else f"{r} resolved"
    right = f"{f} of {big_f} failed" if big_f is not None else f"{f} failed"
    return f"{left} vs {right}"


def _lift(value: Any, record: dict[str, Any] | None = None) -> str:
    """ " (lift 5.6, 95 % 3.1–10.3, p = 2e-10)" when the record carries an interval and a p-value."""
    if value == "inf":
        text = "lift ∞"
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        text = f"lift {value:.1f}"
    else:
        return ""
    record = record or {}
    if "liftLow" in record or "liftHigh" in record:
        text += ", " + formatting.interval(record.get("liftLow"), record.get("liftHigh"))
    if isinstance(record.get("pValue"), (int, float)):
        text += ", " + formatting.p_value(record["pValue"])
    return f" ({text})"


def _rate_text(record: Any) -> str:
    """ "84 % (95 % 77–89 %)" from a {"rate", "low", "high"} record."""
    if not isinstance(record, dict) or not isinstance(record.get("rate"), (int, float)):
        return ""
    text = f"{100 * record['rate']:.0f} %"
    if isinstance(record.get("low"), (int, float)) and isinstance(record.get("high"), (int, float)):
        text += f" (95 % {100 * record['low']:.0f}–{100 * record['high']:.0f} %)"
    return text


def _backtest(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {}

    def side(record: Any) -> str:
        if not isinstance(record, dict) or not record.get("of"):
            return "none"
        return f"{record.get('count')} of {record.get('of')} succeeded, {_rate_text(record)}"

    return {
        "verdict": str(raw.get("verdict") or ""),
        "contradicted": bool(raw.get("contradicted")),
        "held": raw.get("heldBackSessions"),
        "share": raw.get("share"),
        "tasks": raw.get("heldBackTasks"),
        "followers": side(raw.get("followers")),
        "others": side(raw.get("others")),
        "p": raw.get("pValue"),
        "note": str(raw.get("note") or ""),
        "method": str((raw.get("withinTask") or {}).get("method") or "Fisher exact")
        if isinstance(raw.get("withinTask") or {}, dict)
        else "",
        "ratio": _ratio(raw["withinTask"]) if isinstance(raw.get("withinTask"), dict) else "",
    }


def _ratio(record: dict[str, Any]) -> str:
    """ "risk ratio 6.95 (95 % 4.37–11.05), p = 1e-20" from a within-task record."""
    ratio, low, high = record.get("riskRatio"), record.get("low"), record.get("high")
    if ratio == "inf":
        text = "risk ratio ∞"
    elif isinstance(ratio, (int, float)):
        text = f"risk ratio {formatting.ratio(ratio)}"
    else:
        return "risk ratio not defined (no task compares)"
    text += f" ({formatting.interval(low, high)})"
    if isinstance(record.get("pValue"), (int, float)):
        text += ", " + formatting.p_value(record["pValue"])
    return text


def _sides(record: dict[str, Any], follow: str = "follow it", other: str = "do not") -> str:
    f, o = record.get("followers") or {}, record.get("others") or {}
    return (
        f"{f.get('count', '?')} of {formatting.count(f.get('of', '?'), 'sessions')} that {_agree(follow, f.get('of'))} "
        f"succeeded vs {o.get('count', '?')} of {o.get('of', '?')} that {_agree(other, o.get('of'))}"
    )


def _agree(phrase: str, of) -> str:
    """ "follow it" → "follows it" after "1 of 1 session that" (the verb agrees with one session)."""
    if of != 1:
        return phrase
    verb, _, rest = phrase.partition(" ")
    verb = {"do": "does"}.get(verb, verb + "s")
    return f"{verb} {rest}".strip()


def _within(evidence: Evidence, raw: dict[str, Any]) -> None:
    gate = raw.get("withinTask")
    if isinstance(gate, dict) and gate.get("followers"):
        evidence.within_line = (
            f"Within tasks: {_sides(gate)} ({_ratio(gate)}); {formatting.count(gate.get('tasks', '?'), 'tasks')}, {formatting.count(gate.get('strata', '?'), 'strata')} "
            f"(tasks whose sessions do not compare pooled into one); {formatting.p_value(gate.get('pAdjusted', 1), 'Bonferroni-adjusted p')} over "
            f"{formatting.count(gate.get('tests', 1), 'skeletons')} tested — {'credible' if gate.get('credible') else 'not credible'}."
        )
    beyond = raw.get("orderBeyondTools")
    if isinstance(beyond, dict) and isinstance(beyond.get("tools"), dict):
        evidence.tool_list = bool(beyond.get("toolList"))
        evidence.beyond_lines = [
            f"Tools, in any order: {_sides(beyond['tools'], 'call all of them', 'do not')} ({_ratio(beyond['tools'])}).",
            f"The order, among sessions that call them all: {_sides(beyond.get('order') or {}, 'keep this order', 'do not')} "
            f"({_ratio(beyond.get('order') or {})}).",
        ]
    agreement = raw.get("agreement")
    if isinstance(agreement, dict) and agreement.get("agree") is False:
        evidence.disagreement = str(agreement.get("text") or "The gate and the backtest disagree.")
    for family in [f for f in raw.get("byModelFamily") or [] if isinstance(f, dict)][:20]:
        holds = bool(family.get("holds"))
        verdict = (
            "holds"
            if holds
            else {"same": "same direction, not credible", "opposite": "opposite direction"}.get(
                family.get("direction"), "not compared"
            )
        )
        evidence.family_lines.append(
            (str(family.get("family") or "unknown"), f"{_sides(family)} ({_ratio(family)}) — {verdict}", holds)
        )


def inline_excerpts(evidence: dict[str, Any]) -> list[Any]:
    for key in _EXCERPT_KEYS:
        value = evidence.get(key)
        if isinstance(value, list) and value:
            return value
    return []


def build_evidence(version: ProcedureVersion, sessions=()) -> Evidence:
    """`sessions`: AgentSession rows named by the evidence, for when it carries no excerpts of its
    own (selectors.evidence_sessions); only their redacted excerpts are shown."""
    raw = dict(version.evidence or {})
    resolved, failed = _number(raw.get("resolved")), _number(raw.get("failed"))
    evidence = Evidence(
        support=_number(raw.get("support")),
        resolved=resolved,
        failed=failed,
        failed_with_skeleton=_number(raw.get("failedWithSkeleton")),
        summary=raw.get("summary") if isinstance(raw.get("summary"), str) else "",
        skeleton=[str(t) for t in (version.skeleton or raw.get("skeleton") or []) if t],
        source=version.get_source_display(),
        unit="tasks" if raw.get("unit") == "distinct tasks" else "sessions",
        backtest=_backtest(raw.get("backtest")),
    )
    test = raw.get("skeletonTest")
    if isinstance(test, dict):
        lift_text = _lift(test.get("lift"), test).strip(" ()") or "lift not defined"
        evidence.statistics = (
            f"Skeleton: {lift_text}; {formatting.p_value(test.get('pAdjusted', 1), 'Bonferroni-adjusted p')} over "
            f"{formatting.count(test.get('tests', 1), 'skeletons')} tested at significance level {test.get('alpha')} — "
            f"{'credibly above 1' if test.get('credible') else 'not credibly above 1'}."
        )
        for label, key in (("resolved", "resolvedRate"), ("failed", "failedRate")):
            text = _rate_text(test.get(key))
            if text:
                evidence.rate_lines.append(f"Share of {label} tasks that followed it: {text}")
    _within(evidence, raw)
    outcomes = raw.get("outcomes")
    if isinstance(outcomes, dict):
        evidence.outcome_line = ", ".join(
            f"{outcomes[key]} {FIGURE_LABELS[key]}"
            for key in ("resolved", "resolvedByEscalation", "failed", "unknown", "tooFewToolCalls", "heldBack")
            if isinstance(outcomes.get(key), int)
        )
    for variant in [v for v in raw.get("variants") or [] if isinstance(v, dict)]:
        evidence.variant_lines.append(
            f"{' → '.join(map(str, variant.get('skeleton') or []))}: {formatting.count(variant.get('support', '?'), 'tasks')} "
            f"({formatting.count(variant.get('supportSessions', '?'), 'sessions')}), "
            f"{formatting.count(variant.get('failedTasks', 0), 'failed tasks')} took it; {variant.get('differs', '')}"
        )
    for cond in [c for c in raw.get("conditions") or [] if isinstance(c, dict)][:6]:
        with_step, without_step = cond.get("withStep") or {}, cond.get("withoutStep") or {}
        where = f"step {cond['step']}: " if cond.get("proposed") and cond.get("step") else "not proposed: "
        evidence.condition_lines.append(
            f"{where}{cond.get('ifTool')} returned {cond.get('key')} = '{cond.get('value')}' in {with_step.get('count', '?')} of "
            f"{with_step.get('of', '?')} tasks that called {cond.get('thenTool')} next vs {without_step.get('count', '?')} of "
            f"{without_step.get('of', '?')} that did not ({formatting.p_value(cond.get('pValue', 1))}, {formatting.p_value(cond.get('pAdjusted', 1), 'adjusted p')}"
            f" over {cond.get('tests', '?')} values)"
        )
    for arg in [a for a in raw.get("arguments") or [] if isinstance(a, dict)][:8]:
        evidence.argument_lines.append(
            f"step {arg.get('step')} {arg.get('tool')}({arg.get('key')}='{arg.get('value')}'): "
            f"{arg.get('resolved')} of {arg.get('resolvedOf')} resolved vs {arg.get('failed')} of {arg.get('failedOf')} failed tasks"
            f", {formatting.p_value(arg.get('pValue', 1))}{' — separates the outcomes' if arg.get('separates') else ''}"
        )
    # the miner quotes resolved sessions that follow the skeleton only (library/mining/mining_runs.py)
    mined_outcome = "resolved" if "skeletonTest" in raw else ""
    for index, item in enumerate(inline_excerpts(raw)[:5], start=1):
        session_id = item.get("sessionId") or item.get("session_id") if isinstance(item, dict) else None
        evidence.excerpts.append(
            Excerpt(
                title=f"session {session_id}" if session_id else f"example {index}",
                lines=excerpt_lines(item),
                outcome=mined_outcome,
            )
        )
    if not evidence.excerpts:
        for session in sessions:
            evidence.excerpts.append(
                Excerpt(
                    title=f"session {session.session_id}",
                    lines=excerpt_lines(session.redacted_excerpt),
                    outcome=_outcome(session),
                )
            )
    for key in _SESSION_KEYS:
        if isinstance(raw.get(key), list):
            evidence.session_count = len(raw[key])
            break
    tools = [t for t in raw.get("tools") or raw.get("toolContrast") or [] if isinstance(t, dict)]
    tools.sort(
        key=lambda t: (
            not t.get("inSkeleton", True),
            -(t.get("lift") or 0) if isinstance(t.get("lift"), (int, float)) else 0,
        )
    )
    for t in tools[:12]:
        counts = _counts(
            t.get("resolved", t.get("resolvedWith")),
            t.get("resolvedTotal", resolved),
            t.get("failed", t.get("failedWith")),
            t.get("failedTotal", failed),
        )
        if counts:
            marker = "" if t.get("inSkeleton", True) else " (not in the procedure)"
            evidence.tool_lines.append(f"{t.get('tool', '?')}{marker}: {counts}{_lift(t.get('lift'), t)}")
    for pair in [p for p in raw.get("pairs") or [] if isinstance(p, dict)][:8]:
        counts = _counts(pair.get("resolved"), resolved, pair.get("failed"), failed)
        if counts and pair.get("before") and pair.get("after"):
            evidence.order_lines.append(
                f"{pair['before']} before {pair['after']}: {counts}{_lift(pair.get('lift'), pair)}"
            )
    for item in [f for f in raw.get("forbidden") or [] if isinstance(f, dict)]:
        counts = _counts(item.get("resolved"), resolved, item.get("failed"), failed)
        record = (
            {"liftLow": item.get("failLiftLow"), "liftHigh": item.get("failLiftHigh"), "pValue": item.get("pAdjusted")}
            if "failLiftLow" in item
            else None
        )
        action = item.get("action") or f"(tested, not proposed: {item.get('feature', '…')})"
        evidence.forbidden_lines.append(
            f"“{action}” — {evidence.unit} in which the agent {item.get('feature', '…')}: {counts}{_lift(item.get('failLift'), record)}"
        )
    for alt in [a for a in raw.get("alternatives") or [] if isinstance(a, dict)]:
        evidence.alternatives.append(
            f"{' → '.join(map(str, alt.get('skeleton') or []))} ({alt.get('support', '?')} {evidence.unit})"
        )
    despite = raw.get("proposedDespite")
    if isinstance(despite, dict):
        test = (
            f" ({formatting.p_value(despite['pAdjusted'], 'adjusted p')}, significance level {despite['alpha']})"
            if isinstance(despite.get("pAdjusted"), (int, float)) and despite.get("alpha")
            else ""
        )
        evidence.proposed_despite = (
            f"Proposed by {despite.get('by', '?')} on {str(despite.get('at', '?'))[:10]} although the miner's test found no credible "
            f"contrast{test}: {despite.get('reason', '')}"
        )
    if raw.get("agentKind") == "coding" or version.verify_command:
        evidence.coding = True
        evidence.distinct_tasks = _number(raw.get("distinctTasks"))
        if raw.get("verifyCommand"):
            evidence.verify_line = (
                f"{raw['verifyCommand']} — the last passing test command in {raw.get('verifySupport', '?')} of "
                f"{raw.get('verifySessions', '?')} resolved sessions with this skeleton"
            )
        if isinstance(raw.get("family"), dict):
            _family_evidence(evidence, raw)
        for item in [o for o in raw.get("orderContrast") or [] if isinstance(o, dict)][:10]:
            counts = _counts(item.get("resolved"), resolved, item.get("failed"), failed)
            evidence.coding_order_lines.append(
                f"{item.get('feature', '?')}: {counts}{_lift(item.get('failLift'), item)}"
            )
    for key, value in raw.items():
        if key in _SHOWN:
            continue
        evidence.other.append((key_words(key), value_words(value)))
    return evidence


def _of(rate: Any) -> str:
    return f"{rate.get('count', '?')} of {rate.get('of', '?')}" if isinstance(rate, dict) else "?"


def _family_evidence(evidence: Evidence, raw: dict[str, Any]) -> None:
    """A task family's candidate (library/coding/families.py): the family, how often its verify
    command passed, the unresolved sessions beside the resolved (shown, not a gate), the files,
    the recovery notes with the sessions each rests on, and the sessions themselves."""
    evidence.family = str(raw["family"].get("key") or "")
    rate = raw.get("verifyPassRate")
    if raw.get("verifyCommand"):
        evidence.verify_line = f"{raw['verifyCommand']} — its form ({raw.get('verifyForm', '?')}) passed last in {_of(rate)} resolved sessions of the family"
    alternatives = [a for a in raw.get("verifyAlternatives") or [] if isinstance(a, dict)]
    if alternatives:
        # the resolved sessions disagree: the reviewer sees the other commands and how many passed with each
        evidence.task_family_lines.append(
            f"Resolved sessions disagree on the verify command: {_of(rate)} passed last with {raw.get('verifyCommand')}; "
            + "; ".join(f"{a.get('traces', '?')} with {a.get('command', a.get('form', '?'))}" for a in alternatives[:5])
            + "."
        )
    contrast = raw.get("contrast") if isinstance(raw.get("contrast"), dict) else {}
    if contrast:
        evidence.task_family_lines.append(
            f"Resolved sessions with a passing test command: {_of(contrast.get('resolvedWithVerify'))}; unresolved sessions: "
            f"{_of(contrast.get('failedWithVerify'))}, {_of(contrast.get('failedWithVerifyForm'))} with this form (shown, not a gate)."
        )
    for label, key, name in (
        ("Read first", "filesRead", "path"),
        ("Changed", "filesWritten", "path"),
        ("Tests", "testModules", "module"),
        ("Test files", "testFiles", "path"),
    ):
        items = [f"{i.get(name)} ({i.get('traces')})" for i in raw.get(key) or [] if isinstance(i, dict)]
        if items:
            evidence.task_family_lines.append(f"{label} (sessions): {', '.join(items)}")
    for note in [n for n in raw.get("recoveryNotes") or [] if isinstance(n, dict)]:
        evidence.recovery_lines.append(
            f"{note.get('text', '')} — {note.get('traces', '?')} session{'s' if note.get('traces') != 1 else ''}"
        )
    for trace in [t for t in raw.get("traces") or [] if isinstance(t, dict)]:
        evidence.trace_lines.append(
            f"{trace.get('session')}: {trace.get('outcome')}; verify form: {trace.get('verifyForm') or 'none passed'}"
        )


def contrast_sentence(item: dict[str, Any]) -> str:
    """ "createApproval: 118 of 140 resolved vs 9 of 60 failed" from one contrast record, whatever its
    key names; falls back to the record as JSON."""
    label = item.get("label") or item.get("tool") or item.get("what") or item.get("name") or ""
    if item.get("before") and item.get("after"):
        label = f"{item['before']} before {item['after']}"
    counts = _counts(
        item.get("resolvedWith", item.get("resolved_with", item.get("resolved"))),
        _number(item.get("resolvedTotal", item.get("resolved_total"))),
        item.get("failedWith", item.get("failed_with", item.get("failed"))),
        _number(item.get("failedTotal", item.get("failed_total"))),
    )
    if counts:
        return f"{label}: {counts}" if label else counts
    return json.dumps(item, ensure_ascii=False)


# ------------------------------------------------------------------------------------------- eval panel


@dataclass
class IntentResult:
    intent: str
    baseline: str
    candidate: str
    delta: str
    verdict: str
    note: str
    is_target: bool
    sign_tests: bool = False  # the note carries the two sign tests' figures (EVAL_TESTS_WORDS says what they are)


def _fraction(value: Any) -> tuple[str, float | None]:
    """Accepts {"passed": 7, "total": 10}, [7, 10], "7/10", 0.7 or 7; returns (label, rate)."""
    if isinstance(value, dict):
        passed = _number(value.get("passed", value.get("pass", value.get("success", value.get("ok")))))
        total = _number(value.get("total", value.get("n", value.get("cases"))))
        rate = value.get("rate")
        if passed is not None and total:
            return f"{passed}/{total}", passed / total
        if isinstance(rate, (int, float)):
            return formatting.percent(rate), float(rate)
        return json.dumps(value, ensure_ascii=False), None
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(_number(v) is not None for v in value):
        passed, total = _number(value[0]), _number(value[1])
        return f"{passed}/{total}", (passed / total if total else None)
    if isinstance(value, float) and 0 <= value <= 1:
        return formatting.percent(value), value
    if value is None:
        return "—", None
    return str(value), None


def _intent_items(detail: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    intents = detail.get("intents") or detail.get("per_intent") or detail.get("perIntent") or {}
    if isinstance(intents, dict):
        return [(str(name), data) for name, data in intents.items() if isinstance(data, dict)]
    if isinstance(intents, list):
        return [
            (str(item.get("intent") or item.get("name") or "?"), item) for item in intents if isinstance(item, dict)
        ]
    return []


def _arm(data: dict[str, Any], arm: str) -> tuple[str, float | None]:
    """One arm's result: the eval runner's flat form ({"baseline_passed": 1, "paired": 4,
    "baseline_rate": 0.25}) or a nested one ({"baseline": {"passed": 1, "total": 4}})."""
    passed = _number(data.get(f"{arm}_passed"))
    if passed is not None:
        total = _number(data.get("paired", data.get("cases")))
        rate = data.get(f"{arm}_rate")
        if not isinstance(rate, (int, float)):
            rate = passed / total if total else None
        return (f"{passed}/{total}" if total is not None else str(passed)), rate
    return _fraction(data.get(arm, data.get({"baseline": "without", "candidate": "with"}[arm])))


def intent_results(run: EvalRun, *, target_intent: str) -> list[IntentResult]:
    rows = []
    for name, data in _intent_items(run.verdict_detail or {}):
        baseline, base_rate = _arm(data, "baseline")
        candidate, cand_rate = _arm(data, "candidate")
        delta = ""
        if base_rate is not None and cand_rate is not None:
            delta = formatting.points(100 * (cand_rate - base_rate))
        note_bits = []
        for key in ("p_value", "pValue", "p"):
            if isinstance(data.get(key), (int, float)) and not isinstance(data.get(key), bool):
                note_bits.append(formatting.p_value(data[key]))
        if "p_improve" in data or "p_regress" in data:
            note_bits.append(formatting.eval_tests_figures(data.get("p_improve"), data.get("p_regress")))
        for key, one, many in (
            ("improved", "improved", "improved"),
            ("regressed", "regressed", "regressed"),
            ("errors", "error", "errors"),
        ):
            value = data.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value:
                note_bits.append(f"{value} {one if value == 1 else many}")
        for key in ("reason", "note"):
            if data.get(key):
                note_bits.append(str(data[key]))
        if isinstance(data.get("notes"), list):
            note_bits.extend(str(n) for n in data["notes"] if n)
        rows.append(
            IntentResult(
                intent=name,
                baseline=baseline,
                candidate=candidate,
                delta=delta,
                verdict=str(data.get("verdict") or data.get("status") or data.get("outcome") or ""),
                note="; ".join(note_bits),
                is_target=bool(data.get("target")) or name == target_intent,
                sign_tests="p_improve" in data or "p_regress" in data,
            )
        )
    rows.sort(key=lambda r: (not r.is_target, r.intent))
    return rows


def verdict_reason(run: EvalRun) -> str:
    detail = run.verdict_detail or {}
    for key in ("reasons", "reason", "why", "summary", "explanation", "note"):
        value = detail.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value:
            return " ".join(str(v) for v in value)
    if run.state == EvalRun.State.FAILED and run.failure_reason:
        return run.failure_reason
    return ""


@dataclass
class EvalPanel:
    run: EvalRun | None
    rows: list[IntentResult]
    reason: str
    in_progress: bool
    percent: int
    baseline_moved: bool
    thresholds: list[tuple[str, str]]
    selection: dict[str, Any] | None = (
        None  # what the served selection injected (library/evals/payload.selection_summary)
    )
    reach_blocker: str = ""
    target_environment: str = (
        PRODUCTION  # whose set a new approval run replays against (environments.approval_environment)
    )

    @property
    def tests_words(self) -> str:
        """What the rows' p figures are, said once under the table (empty when no row has them)."""
        return formatting.EVAL_TESTS_WORDS if any(row.sign_tests for row in self.rows) else ""


def build_eval_panel(version: ProcedureVersion, run: EvalRun | None, *, current_set_hash: str | None) -> EvalPanel:
    """`current_set_hash`: the hash of the set the run's environment serves now
    (selectors.environment_set_hash(agent, run.environment)), None when there is no run."""
    in_progress = bool(run and run.state in {EvalRun.State.QUEUED, EvalRun.State.RUNNING})
    percent = 0
    if run and run.cases_total:
        percent = min(100, round(100 * run.cases_done / run.cases_total))
    # Only a candidate's gate depends on it: an approved version's run is history, and the active
    # set moved precisely because of that approval.
    baseline_moved = bool(
        version.status == "CANDIDATE"
        and run
        and run.baseline_hash
        and current_set_hash
        and run.baseline_hash != current_set_hash
    )
    thresholds = []
    if run is not None:
        source = run.thresholds or (run.verdict_detail or {}).get("thresholds") or {}
        if isinstance(source, dict):
            thresholds = [(str(k), json.dumps(v) if not isinstance(v, str) else v) for k, v in source.items()]
        test = (run.verdict_detail or {}).get("test")
        if isinstance(test, str) and test:
            thresholds.append(("test", test))
    return EvalPanel(
        run=run,
        rows=intent_results(run, target_intent=version.procedure.intent.name) if run else [],
        reason=verdict_reason(run) if run else "",
        in_progress=in_progress,
        percent=percent,
        baseline_moved=baseline_moved,
        thresholds=thresholds,
        selection=(run.verdict_detail or {}).get("selection") if run else None,
        reach_blocker=selection_reach_blocker(run) if run and run.state == EvalRun.State.DONE else "",
        target_environment=approval_environment(version.procedure.agent),
    )
