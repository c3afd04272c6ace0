"""The deterministic draft of a candidate and the run report's entries (pure Python, no Django):
step texts that name the tools with generalised arguments, repeats as one step past the step cap,
conditional steps, forbidden actions, and the evidence record with its summary for reviewers. The
same inputs always give the same draft."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import formatting
from . import evidence_statistics as st
from .arguments import generalise_args
from .evidence import Branch, Contrast, agreement, argument_contrast, backtest, condition_tests, contrast
from .groups import GroupChoice, Status, step_count
from .skeletons import IntentStats, MiningParams, Skeleton, compress_skeleton, intent_figures, is_subsequence


def condition_text(record: Mapping[str, Any], call: str) -> str:
    value = record["value"]
    shown = ("true" if value else "false") if isinstance(value, bool) else f"'{value}'"
    return f"If {record['ifTool']} returns {record['key']} = {shown}, call {call}."


_VERBS = {"lookup": "look up", "fetch": "fetch", "get": "get", "find": "find"}
_REPLY_VERBS = {"reply", "respond", "answer", "tell", "notify", "message"}
_PREPOSITIONS = {"to", "for", "from", "on", "in", "with", "by", "at", "of", "about"}


def tool_words(tool: str) -> list[str]:
    """lookupOrder → [lookup, order]; get_user_details → [get, user, details]."""
    spaced = re.sub(r"(?<=[a-z0-9])([A-Z])", r" \1", tool).replace("_", " ").replace("-", " ").replace(".", " ")
    return [word.lower() for word in spaced.split()]


def step_text(tool: str, call: str) -> str:
    """An imperative step that names the tool: "Look up the order with lookupOrder({{order_id}})."."""
    words = tool_words(tool)
    if len(words) < 2:
        return f"Call {call}."
    verb, rest = words[0], words[1:]
    if verb in _REPLY_VERBS:
        return f"Reply to the customer with {call}."
    phrase = " ".join(rest)
    if rest[0] not in _PREPOSITIONS:
        phrase = "the " + phrase
    verb_text = _VERBS.get(verb, verb)
    return f"{verb_text[0].upper() + verb_text[1:]} {phrase} with {call}."


def render_call(tool: str, args: list[tuple[str, str]], *, literals_only: bool = False) -> str:
    shown = [value for _, value in args if not literals_only or value.startswith("'")]
    if literals_only and not shown:
        return tool
    return f"{tool}({', '.join(shown)})"


def procedure_key_for(intent_name: str) -> str:
    """refund_over_limit → refund.over_limit; cancel_reservation-update_reservation_flights →
    cancel.reservation_update_reservation_flights; a one-word intent gets `.main`."""
    name = re.sub(r"[^a-z0-9_]+", "_", intent_name.lower()).strip("_") or "intent"
    if not name[0].isalpha():
        name = "i" + name
    head, _, tail = name.partition("_")
    return f"{head}.{tail}" if tail else f"{head}.main"


def applies_when_for(intent_name: str, description: str = "") -> str:
    description = " ".join((description or "").split()).rstrip(".")
    if description:
        return f"The customer asks for {description[0].lower() + description[1:]}."
    if intent_name.startswith("no_"):  # a label for what the task does not need (tau-bench's no_write_action)
        return f"The customer's request needs {intent_name.replace('_', ' ')} (intent {intent_name})."
    phrase = " and ".join(part.replace("_", " ") for part in intent_name.split("-"))
    return f"The customer asks to {phrase} (intent {intent_name})."


def _interval(record: Mapping[str, Any]) -> str:
    lift = record.get("lift")
    lift_text = "n/a" if lift is None else formatting.ratio(lift)
    interval = formatting.interval(record.get("liftLow"), record.get("liftHigh"))
    return f"lift {lift_text} ({interval}), {formatting.p_value(record.get('pValue', 1))}"


def _ratio_text(record: Mapping[str, Any]) -> str:
    ratio = st.ratio_number(record)
    if ratio is None:
        return "risk ratio not defined"
    return f"risk ratio {formatting.ratio(ratio)} ({formatting.interval(record.get('low'), record.get('high'))})"


def _summary(result: Contrast, group: GroupChoice, back: Mapping[str, Any], params: MiningParams) -> str:
    """One paragraph for reviewers: the skeleton's support in distinct tasks, the gate (followers vs
    the other sessions within tasks), what the order adds beyond the tools, and the backtest."""
    skeleton = group.skeleton
    gate = group.within.get("gate") or {}
    text = (
        f"{result.support} of {result.resolved_total} resolved tasks followed {' → '.join(skeleton)}; "
        f"{result.failed_with_skeleton} of {result.failed_total} failed tasks did."
    )
    if gate:
        f, o = gate["followers"], gate["others"]
        text += (
            f" Within tasks, {f['count']} of {f['of']} sessions that follow it succeeded vs {o['count']} of {o['of']} that do not "
            f"({_ratio_text(gate)}, {formatting.count(gate['tests'], 'skeletons')} tested, "
            f"{formatting.p_value(gate['pAdjusted'], 'adjusted p')})."
        )
    if group.workflow:
        text += (
            f" With its repeats as one step each it still has {step_count(skeleton)} steps, more than {params.max_steps}: "
            "a workflow, it belongs in code: reported, not proposed."
        )
    elif not group.proposed:
        text += " The tool order does not credibly explain the outcome: reported, not proposed."
    steps = [t for t in result.tools if t["inSkeleton"]]
    if steps and result.failed_total:
        key = sorted(steps, key=lambda t: (t["pValue"], t["tool"]))[0]
        if st.lift_number(key) > 1.0:
            # one step alone, not the procedure: a failed task may call it without following the
            # whole skeleton, so its count is not the headline's (failedWithSkeleton) and says so
            text += (
                f" Of its steps, {key['tool']} alone separates the outcomes most: it was called in {key['resolved']} "
                f"of {result.resolved_total} resolved and {key['failed']} of {result.failed_total} failed tasks "
                f"({_interval(key)})."
            )
    beyond = group.within.get("orderBeyondTools") or {}
    if beyond.get("order"):
        order = beyond["order"]
        text += (
            f" Among sessions that call all its tools, {order['followers']['count']} of {order['followers']['of']} in this order succeeded vs "
            f"{order['others']['count']} of {order['others']['of']} in another ({_ratio_text(order)})"
            + (": a tool list, not an order." if beyond.get("toolList") else ".")
        )
    followers, others = back["followers"], back["others"]
    if followers["of"] and others["of"]:
        text += (
            f" Backtest on the {back['heldBackSessions']} held-back sessions: {followers['count']} of {followers['of']} "
            f"sessions that follow it succeeded vs {others['count']} of {others['of']} that do not ({back['verdict']})."
        )
    else:
        text += f" Backtest: {back.get('note', 'no held-back sessions')}."
    return text


def compressed_steps(skeleton: Skeleton, steps: Sequence[str]) -> list[str]:
    """The step texts with each repeated block (skeletons.compress_skeleton) as one step: "Repeat 2
    times: goto(…), then open(…)." (the calls of the first pass, in order)."""
    out: list[str] = []
    for span in compress_skeleton(skeleton):
        if span.times == 1:
            out.append(steps[span.start])
            continue
        calls = [steps[i].rstrip(".") for i in range(span.start, span.start + span.length)]
        calls = [c[0].lower() + c[1:] if c else c for c in calls]
        out.append(f"Repeat {span.times} times: " + ", then ".join(calls) + ".")
    return out


@dataclass
class Draft:
    key: str
    applies_when: str
    steps: list[str]
    required_tools: list[str]
    forbidden_actions: list[str]
    evidence: dict[str, Any]
    skeleton: list[str]
    proposed: bool = True
    # a coding procedure's contract (library/coding/procedures.py); empty for tool agents
    preconditions: list[str] = field(default_factory=list)
    postconditions: list[str] = field(default_factory=list)
    verify_command: str = ""

    def content(self) -> dict[str, Any]:
        """The procedure content it proposes, as `procedure_propose` takes it."""
        return {
            "applies_when": self.applies_when,
            "steps": self.steps,
            "required_tools": self.required_tools,
            "forbidden_actions": self.forbidden_actions,
            "skeleton": self.skeleton,
            "preconditions": self.preconditions,
            "postconditions": self.postconditions,
            "verify_command": self.verify_command,
        }


def _variants(stats: IntentStats, group: GroupChoice) -> list[dict[str, Any]]:
    """The other successful ways of the intent at threshold, side by side with the candidate: their
    support and outcomes, and how they differ (an extra step taken only sometimes, or another order)."""
    result = []
    for skeleton, support in group.alternatives:
        extra = [t for t in skeleton if t not in group.skeleton]
        missing = [t for t in group.skeleton if t not in skeleton]
        if is_subsequence(group.skeleton, skeleton):
            differs = "adds " + ", ".join(extra)
        elif is_subsequence(skeleton, group.skeleton):
            differs = "leaves out " + ", ".join(missing)
        else:
            differs = (
                "another order"
                if not extra and not missing
                else (
                    "; ".join(
                        filter(
                            None,
                            [
                                "adds " + ", ".join(extra) if extra else "",
                                "leaves out " + ", ".join(missing) if missing else "",
                            ],
                        )
                    )
                )
            )
        result.append(
            {
                "skeleton": list(skeleton),
                "support": support,
                "supportSessions": stats.success.skeleton_sessions[skeleton],
                "failedTasks": stats.failed.skeleton_tasks[skeleton],
                "differs": differs,
            }
        )
    return result


def draft_candidate(
    *,
    intent_name: str,
    intent_description: str,
    group: GroupChoice,
    stats: IntentStats,
    params: MiningParams,
    step_samples: Sequence[tuple[Any, Sequence[Mapping[str, Any]]]],
    failed_samples: Mapping[str, Sequence[tuple[Any, Mapping[str, Any]]]],
    session_ids: Sequence[str],
    excerpts: Sequence[tuple[str, Any]],
    counts: Mapping[str, Any],
    branches: Sequence[Branch] = (),
) -> Draft:
    """The candidate record, by rules only: the same inputs always give the same draft. Steps are
    the skeleton's calls in order and nothing else (no filler; the skeleton already ends at a
    terminal call).

    step_samples: per successful session of the group, (task, the args of each skeleton step);
    failed_samples: tool → (task, args of that tool's first call) in failed sessions of the intent;
    branches: the successful variants that add or leave out one step (splits_of), with the result
    summaries of the step before it: where a looked-up value separates them, the step becomes
    conditional ("If lookupOrder returns shipping = 'express', call refundShipping(…).")."""
    skeleton = group.skeleton
    result = contrast(stats, group, params)
    steps: list[str] = []
    for position, tool in enumerate(skeleton):
        samples = [(task, sample[position]) for task, sample in step_samples if position < len(sample)]
        steps.append(
            step_text(tool, render_call(tool, generalise_args(samples, params.literal_share, params.min_literal_tasks)))
        )
    required_tools = list(dict.fromkeys(skeleton))
    compressed = len(skeleton) > params.max_steps
    if compressed:
        # past the step cap, a repeated block of calls is one step (the skeleton itself stays whole)
        steps = compressed_steps(skeleton, steps)
        branches = ()  # a conditional step names a position of the uncompressed steps
    conditions = condition_tests(
        [(b.split, b.with_results, b.without_results) for b in branches], alpha=params.significance_level
    )
    branch_of = {repr(list(b.split.with_skeleton)): b for b in branches}
    # (index in the candidate's steps, whether the candidate takes the step, record, text)
    changes: list[tuple[int, bool, dict[str, Any], str]] = []
    for record in conditions:
        branch = branch_of[repr(record["withSkeleton"])]
        record["step"] = None
        if not record["proposed"] or any(r["thenTool"] == record["thenTool"] for _, _, r, _ in changes):
            continue
        args = branch.then_args
        if branch.candidate_has_step:
            args = [
                (task, sample[branch.split.position])
                for task, sample in step_samples
                if branch.split.position < len(sample)
            ]
        call = render_call(branch.split.tool, generalise_args(args, params.literal_share, params.min_literal_tasks))
        changes.append((branch.split.position, branch.candidate_has_step, record, condition_text(record, call)))
    # the candidate takes the step: that step becomes conditional; it does not: the conditional
    # step is added after the step it follows. From the last index, so that earlier ones stay right.
    for index, replace_step, record, text in sorted(changes, key=lambda c: (-c[0], not c[1])):
        if replace_step:
            steps[index] = text
        else:
            steps.insert(index, text)
            if record["thenTool"] not in required_tools:
                required_tools.append(record["thenTool"])
    for _, _, record, text in changes:
        record["step"] = steps.index(text) + 1
    forbidden_actions: list[str] = []
    forbidden_evidence: list[dict[str, Any]] = []
    proposed_features = {id(f) for f in result.forbidden}
    for feature in sorted(result.features, key=lambda f: (f.test["pValue"], f.tool, f.before or "")):
        proposed = id(feature) in proposed_features
        text = None
        if proposed:
            call = render_call(
                feature.tool,
                generalise_args(failed_samples.get(feature.tool, []), params.literal_share, params.min_literal_tasks),
                literals_only=True,
            )
            text = (
                f"Do not call {call} for this task."
                if feature.kind == "tool"
                else f"Do not call {call} before {feature.before}."
            )
            forbidden_actions.append(text)
        if proposed or len(forbidden_evidence) < 8:
            t = feature.test
            forbidden_evidence.append(
                {
                    "action": text,
                    "feature": feature.describe(),
                    "proposed": proposed,
                    "resolved": feature.resolved,
                    "failed": feature.failed,
                    "resolvedRate": t["failedRate"],
                    "failedRate": t["resolvedRate"],
                    "failLift": t["lift"],
                    "failLiftLow": t["liftLow"],
                    "failLiftHigh": t["liftHigh"],
                    "pValue": t["pValue"],
                    "pAdjusted": t["pAdjusted"],
                    "tests": t["tests"],
                }
            )
    back = backtest(stats, skeleton, params, group.within.get("held"))
    test = group.test
    gate = group.within.get("gate") or {}
    evidence: dict[str, Any] = {
        "intent": intent_name,
        "skeleton": list(skeleton),
        "unit": "distinct tasks",
        "proposed": group.proposed,
        "support": result.support,
        "supportSessions": group.support_sessions,
        "resolved": result.resolved_total,
        "resolvedSessions": stats.success.sessions,
        "failed": result.failed_total,
        "failedSessions": stats.failed.sessions,
        "failedWithSkeleton": result.failed_with_skeleton,
        "supportRate": test["resolvedRate"],
        "failedWithSkeletonRate": test["failedRate"],
        "skeletonLift": test["lift"],
        "skeletonLiftLow": test["liftLow"],
        "skeletonLiftHigh": test["liftHigh"],
        "skeletonTest": test,
        "outcomes": intent_figures(stats),
        "tools": result.tools,
        "pairs": result.pairs,
        "forbidden": forbidden_evidence,
        "arguments": argument_contrast(skeleton, step_samples, failed_samples, alpha=params.significance_level),
        "variants": _variants(stats, group),
        "conditions": conditions,
        "alternatives": [{"skeleton": list(s), "support": n} for s, n in group.alternatives],
        "backtest": back,
        "withinTask": gate,
        "orderBeyondTools": group.within.get("orderBeyondTools") or {},
        "heldOrderBeyondTools": group.within.get("heldOrderBeyondTools") or {},
        "byModelFamily": group.within.get("byModelFamily") or [],
        "agreement": agreement(gate, back),
        "stepsCompressed": compressed,
        "workflow": group.workflow,
        "sessionIds": list(session_ids),
        "excerpts": [{"sessionId": sid, "excerpt": excerpt} for sid, excerpt in excerpts],
        "summary": _summary(result, group, back, params),
        **{f"run{k[0].upper()}{k[1:]}": v for k, v in counts.items()},
    }
    return Draft(
        key=procedure_key_for(intent_name),
        applies_when=applies_when_for(intent_name, intent_description),
        steps=steps,
        required_tools=required_tools,
        forbidden_actions=forbidden_actions,
        evidence=evidence,
        skeleton=list(skeleton),
        proposed=group.proposed,
    )


def report_entry(
    intent_name: str, status: str, reason: str, draft: Draft | None = None, figures: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One line of a run's report. A reported (not proposed) draft keeps its steps and statistics
    so a reviewer sees what the sessions would have said."""
    entry: dict[str, Any] = {"intent": intent_name, "status": status, "reason": reason, "figures": dict(figures or {})}
    if draft is not None:
        ev = draft.evidence
        entry.update(
            skeleton=draft.skeleton,
            steps=draft.steps,
            forbiddenActions=draft.forbidden_actions,
            figures={
                **ev["outcomes"],
                "support": ev["support"],
                "supportSessions": ev["supportSessions"],
                "failedWithSkeleton": ev["failedWithSkeleton"],
            },
            skeletonTest=ev["skeletonTest"],
            withinTask=ev.get("withinTask") or {},
            orderBeyondTools=ev.get("orderBeyondTools") or {},
            toolList=bool((ev.get("orderBeyondTools") or {}).get("toolList")),
            agreement=ev.get("agreement") or {},
            backtest=ev["backtest"],
            summary=ev["summary"],
        )
        if draft.verify_command:  # a coding group's contract, so a reported one still shows it
            entry.update(
                verifyCommand=draft.verify_command,
                preconditions=draft.preconditions,
                postconditions=draft.postconditions,
            )
        if status == Status.REPORTED:
            # the whole draft, so that a reviewer can still propose it (runs.mining_report_propose)
            entry["draft"] = asdict(draft)
    return entry
