"""The skeleton miner's core (pure Python, no Django): skeletons, groups, contrast statistics and the
deterministic draft of a candidate. library/mining_service.py feeds it from the database and stores
what it drafts through procedure_propose.

Definitions (README "Mining"):
- Skeleton: the ordered tool names a session called, with the tools in `ignored_tools` removed
  (default ``think``: the model's scratchpad, not an action on the world) and consecutive repeats
  collapsed (three get_reservation_details calls in a row are one step "look up the reservations").
  Non-consecutive repeats stay: A→B→A is a different procedure from A→B.
- Labels: a session is *resolved* when its outcome says resolved and not escalated; *failed* when
  it says not resolved (escalated or not); resolved-but-escalated sessions are neither (their
  success is not the agent's). Sessions with no outcome or no intent are counted, never mined.
- Groups: (intent, skeleton) over resolved sessions; a group at or above the agent's support
  threshold is a candidate. One candidate per intent per run: the largest group (ties broken by
  the skeleton's text); the other groups at threshold are listed as alternatives in its evidence.
- Contrast, per intent, resolved vs failed sessions: the skeleton itself, each tool, each ordered
  pair "A before B". lift = P(feature | resolved) / P(feature | failed), with +0.5/+1 smoothing so that
  zero counts give finite numbers; failLift is the inverse.
- Steps: one per skeleton tool, worded from the tool's name ("Look up the order with
  lookupOrder({{order_id}})."; "Call calculate(...)" for one-word names), padded to three.
- Forbidden actions: for steps A before B of the skeleton, "B called with no A before it"; and each
  tool outside the skeleton. A feature becomes a forbidden action when failed sessions show it at a
  rate >= min_fail_rate, at least min_failed times, and with failLift >= min_fail_lift (at most
  max_forbidden, highest failLift first).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

Skeleton = tuple[str, ...]
PLACEHOLDER_RE = re.compile(r"^\{\{[a-z_]+\}\}$")
# enum-like values kept literally in steps ('approval_pending'); a short phrase is allowed too, and
# the policy screen reads it like any other step text.
LITERAL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_\- ]{1,39}$")


@dataclass(frozen=True)
class MiningParams:
    support_threshold: int = 20
    ignored_tools: tuple[str, ...] = ("think",)
    min_fail_lift: float = 2.0
    min_fail_rate: float = 0.2
    min_failed: int = 3
    max_forbidden: int = 3
    min_steps: int = 3
    max_steps: int = 8
    evidence_session_ids: int = 20
    evidence_excerpts: int = 3
    literal_share: float = 0.8

    def to_dict(self) -> dict[str, Any]:
        return {
            "supportThreshold": self.support_threshold,
            "ignoredTools": list(self.ignored_tools),
            "minFailLift": self.min_fail_lift,
            "minFailRate": self.min_fail_rate,
            "minFailed": self.min_failed,
            "maxForbidden": self.max_forbidden,
            "maxSteps": self.max_steps,
        }


def reduce_skeleton(tools: Iterable[str], ignored: Iterable[str] = ("think",)) -> Skeleton:
    ignored_set = set(ignored)
    reduced: list[str] = []
    for name in tools:
        if name in ignored_set:
            continue
        if reduced and reduced[-1] == name:
            continue
        reduced.append(name)
    return tuple(reduced)


def lift(a: int, a_total: int, b: int, b_total: int) -> float:
    """P(feature | a) / P(feature | b), smoothed (+0.5 on counts, +1 on totals)."""
    return round(((a + 0.5) / (a_total + 1)) / ((b + 0.5) / (b_total + 1)), 2)


def _rate(count: int, total: int) -> float:
    return round(count / total, 3) if total else 0.0


# ---------------------------------------------------------------------------------------------- aggregation


@dataclass
class IntentStats:
    resolved: Counter = field(default_factory=Counter)  # reduced skeleton → sessions
    failed: Counter = field(default_factory=Counter)
    escalated: int = 0
    unlabelled_outcome: int = 0
    # reduced skeleton → raw skeletons that reduce to it (for looking the sessions up again)
    raw_variants: dict[tuple[str, Skeleton], Counter] = field(default_factory=dict)

    @property
    def resolved_total(self) -> int:
        return sum(self.resolved.values())

    @property
    def failed_total(self) -> int:
        return sum(self.failed.values())


class Aggregator:
    """Counts sessions by (intent, label, skeleton). Fed rows already grouped by the database
    (intent, resolved, escalated, raw skeleton, count), so memory grows with distinct skeletons,
    not with sessions."""

    def __init__(self, params: MiningParams):
        self.params = params
        self.intents: dict[Any, IntentStats] = {}
        self.sessions = 0
        self.without_intent = 0
        self.without_outcome = 0
        self.escalated = 0
        self.resolved = 0
        self.failed = 0

    def add(self, *, intent: Any, resolved: bool | None, escalated: bool | None, raw_skeleton: Sequence[str], count: int = 1) -> None:
        self.sessions += count
        if resolved is None:
            self.without_outcome += count
        if intent is None:
            self.without_intent += count
            return
        stats = self.intents.setdefault(intent, IntentStats())
        if resolved is None:
            stats.unlabelled_outcome += count
            return
        if resolved and escalated:
            stats.escalated += count
            self.escalated += count
            return
        label = "resolved" if resolved else "failed"
        reduced = reduce_skeleton(raw_skeleton, self.params.ignored_tools)
        (stats.resolved if resolved else stats.failed)[reduced] += count
        if resolved:
            self.resolved += count
        else:
            self.failed += count
        stats.raw_variants.setdefault((label, reduced), Counter())[tuple(raw_skeleton)] += count

    def counts(self) -> dict[str, int]:
        return {
            "sessions": self.sessions,
            "withoutIntent": self.without_intent,
            "withoutOutcome": self.without_outcome,
            "escalatedExcluded": self.escalated,
            "resolved": self.resolved,
            "failed": self.failed,
            "intents": len(self.intents),
            "groups": sum(len(s.resolved) for s in self.intents.values()),
        }


# ---------------------------------------------------------------------------------------------- contrast


def _pairs(skeleton: Skeleton) -> set[tuple[str, str]]:
    return {(skeleton[i], skeleton[j]) for i in range(len(skeleton)) for j in range(i + 1, len(skeleton)) if skeleton[i] != skeleton[j]}


def _without_before(skeleton: Skeleton, before: str, after: str) -> bool:
    """`after` is called and no `before` precedes its first call."""
    if after not in skeleton:
        return False
    return before not in skeleton[: skeleton.index(after)]


def _count(counter: Counter, predicate) -> int:
    return sum(n for skel, n in counter.items() if predicate(skel))


@dataclass
class ForbiddenFeature:
    kind: str  # "after_without_before" or "tool"
    tool: str
    before: str | None
    resolved: int
    failed: int
    fail_lift: float

    def describe(self) -> str:
        if self.kind == "tool":
            return f"calls {self.tool}"
        return f"calls {self.tool} with no {self.before} before it"


@dataclass
class Contrast:
    resolved_total: int
    failed_total: int
    support: int
    failed_with_skeleton: int
    tools: list[dict[str, Any]]
    pairs: list[dict[str, Any]]
    forbidden: list[ForbiddenFeature]


def contrast(stats: IntentStats, skeleton: Skeleton, params: MiningParams) -> Contrast:
    R, F = stats.resolved_total, stats.failed_total
    resolved, failed = stats.resolved, stats.failed
    vocabulary = sorted({tool for counter in (resolved, failed) for skel in counter for tool in skel})
    tools = []
    for tool in vocabulary:
        r = _count(resolved, lambda s, t=tool: t in s)
        f = _count(failed, lambda s, t=tool: t in s)
        tools.append({"tool": tool, "resolved": r, "failed": f, "lift": lift(r, R, f, F), "inSkeleton": tool in skeleton})
    pair_counts: dict[tuple[str, str], list[int]] = {}
    for index, counter in enumerate((resolved, failed)):
        for skel, n in counter.items():
            for pair in _pairs(skel):
                pair_counts.setdefault(pair, [0, 0])[index] += n
    skeleton_pairs = _pairs(skeleton)
    pairs = [
        {"before": a, "after": b, "resolved": r, "failed": f, "lift": lift(r, R, f, F), "inSkeleton": (a, b) in skeleton_pairs}
        for (a, b), (r, f) in pair_counts.items()
    ]
    # the skeleton's own pairs first, then the most telling others; bounded so evidence stays small
    pairs.sort(key=lambda p: (not p["inSkeleton"], -abs(p["lift"] - 1.0), p["before"], p["after"]))
    pairs = pairs[:30]

    features: list[ForbiddenFeature] = []
    ordered = [(skeleton[i], skeleton[j]) for i in range(len(skeleton)) for j in range(i + 1, len(skeleton)) if skeleton[i] != skeleton[j]]
    seen: set[tuple[str, str]] = set()
    for before, after in ordered:
        if (before, after) in seen:
            continue
        seen.add((before, after))
        r = _count(resolved, lambda s: _without_before(s, before, after))
        f = _count(failed, lambda s: _without_before(s, before, after))
        features.append(ForbiddenFeature("after_without_before", after, before, r, f, lift(f, F, r, R)))
    for entry in tools:
        if entry["tool"] not in skeleton:
            features.append(ForbiddenFeature("tool", entry["tool"], None, entry["resolved"], entry["failed"], lift(entry["failed"], F, entry["resolved"], R)))
    chosen = [
        feat
        for feat in features
        if F
        and feat.failed >= params.min_failed
        and feat.failed / F >= params.min_fail_rate
        and feat.fail_lift >= params.min_fail_lift
    ]
    chosen.sort(key=lambda feat: (-feat.fail_lift, -feat.failed, feat.tool, feat.before or ""))
    # one lesson per offending tool: "reply before approval" and "reply before the window check"
    # usually describe the same failures; keep the stronger.
    unique: list[ForbiddenFeature] = []
    for feat in chosen:
        if all(u.tool != feat.tool for u in unique):
            unique.append(feat)
    return Contrast(
        resolved_total=R,
        failed_total=F,
        support=resolved.get(skeleton, 0),
        failed_with_skeleton=failed.get(skeleton, 0),
        tools=tools,
        pairs=pairs,
        forbidden=unique[: params.max_forbidden],
    )


# ---------------------------------------------------------------------------------------------- groups


@dataclass
class GroupChoice:
    intent: Any
    skeleton: Skeleton
    support: int
    alternatives: list[tuple[Skeleton, int]]


def choose_groups(aggregator: Aggregator) -> tuple[list[GroupChoice], list[dict[str, Any]]]:
    """The top group per intent at or above the threshold, and every group skipped with why."""
    params = aggregator.params
    chosen: list[GroupChoice] = []
    skipped: list[dict[str, Any]] = []
    for intent in sorted(aggregator.intents, key=str):
        stats = aggregator.intents[intent]
        ranked = sorted(stats.resolved.items(), key=lambda kv: (-kv[1], "\x1f".join(kv[0])))
        eligible: list[tuple[Skeleton, int]] = []
        for skeleton, support in ranked:
            if support < params.support_threshold:
                continue
            if not skeleton:
                skipped.append({"intent": intent, "skeleton": [], "support": support, "reason": "no tool calls: nothing to write a procedure about"})
                continue
            if len(skeleton) > params.max_steps:
                skipped.append({
                    "intent": intent, "skeleton": list(skeleton), "support": support,
                    "reason": f"{len(skeleton)} steps; a procedure has at most {params.max_steps}",
                })
                continue
            eligible.append((skeleton, support))
        if not eligible:
            below = sum(1 for _, n in ranked if n < params.support_threshold)
            if below:
                skipped.append({
                    "intent": intent, "skeleton": None, "support": ranked[0][1] if ranked else 0,
                    "reason": f"{below} group(s) below the support threshold {params.support_threshold}",
                })
            continue
        top, support = eligible[0]
        for skeleton, n in eligible[1:]:
            skipped.append({
                "intent": intent, "skeleton": list(skeleton), "support": n,
                "reason": f"a larger group of the same intent ({support} sessions) is this run's candidate; listed as an alternative",
            })
        chosen.append(GroupChoice(intent=intent, skeleton=top, support=support, alternatives=eligible[1:]))
    return chosen, skipped


# ---------------------------------------------------------------------------------------------- drafting


def _snake(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_") or "value"


def calls_by_step(excerpt: Sequence[Mapping[str, Any]], skeleton: Skeleton, ignored: Iterable[str]) -> list[dict[str, Any]] | None:
    """The args of the first call of each skeleton step in one session's excerpt, or None when the
    excerpt does not reduce to `skeleton` (e.g. it was cut short)."""
    ignored_set = set(ignored)
    steps: list[dict[str, Any]] = []
    names: list[str] = []
    for entry in excerpt:
        if entry.get("role") != "tool_call":
            continue
        name = entry.get("tool")
        if name in ignored_set:
            continue
        if names and names[-1] == name:
            continue
        names.append(name)
        args = entry.get("args")
        steps.append(args if isinstance(args, Mapping) else {})
    return steps if tuple(names) == skeleton else None


def _arg_order(key: str) -> tuple[bool, str]:
    snake = _snake(key)
    return (not (snake == "id" or snake.endswith("_id")), snake)


def generalise_args(samples: Sequence[Mapping[str, Any]], literal_share: float = 0.8) -> list[tuple[str, str]]:
    """(key, rendered value) for the most common argument keys of one step across sessions: a value
    that (nearly) every session shares and that looks like an enum ('refund_pending') stays literal;
    placeholders from redaction stay as they are; everything else becomes a typed placeholder {{key}}."""
    if not samples:
        return []
    # Argument order: ids first, then alphabetical. Not the call's own order, because PostgreSQL's
    # jsonb does not keep key order and the same sessions must give the same draft on every database.
    key_sets = Counter(tuple(sorted(sample.keys(), key=_arg_order)) for sample in samples)
    keys = sorted(key_sets.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    rendered: list[tuple[str, str]] = []
    for key in keys:
        values = [sample.get(key) for sample in samples if key in sample]
        hashable = [v if isinstance(v, (str, int, float, bool)) or v is None else repr(v) for v in values]
        common, n = Counter(hashable).most_common(1)[0]
        if isinstance(common, str) and PLACEHOLDER_RE.match(common) and n / len(values) >= literal_share:
            rendered.append((key, common))
        elif isinstance(common, str) and LITERAL_RE.match(common) and n / len(values) >= literal_share and len(values) >= 2:
            rendered.append((key, f"'{common}'"))
        else:
            rendered.append((key, "{{" + _snake(key) + "}}"))
    return rendered


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
    phrase = " and ".join(part.replace("_", " ") for part in intent_name.split("-"))
    return f"The customer asks to {phrase} (intent {intent_name})."


def _summary(result: Contrast, skeleton: Skeleton) -> str:
    """One line for reviewers: the skeleton's support, and the step that separates success from
    failure most (highest lift), e.g. "createApproval: 118 of 140 resolved, 9 of 60 failed"."""
    text = (
        f"{result.support} of {result.resolved_total} resolved sessions followed {' → '.join(skeleton)}; "
        f"{result.failed_with_skeleton} of {result.failed_total} failed sessions did."
    )
    steps = [t for t in result.tools if t["inSkeleton"]]
    if steps and result.failed_total:
        key = sorted(steps, key=lambda t: (-t["lift"], t["tool"]))[0]
        if key["lift"] > 1.0:
            text += (
                f" {key['tool']} was called in {key['resolved']} of {result.resolved_total} resolved and "
                f"{key['failed']} of {result.failed_total} failed sessions."
            )
    return text


@dataclass
class Draft:
    key: str
    applies_when: str
    steps: list[str]
    required_tools: list[str]
    forbidden_actions: list[str]
    evidence: dict[str, Any]
    skeleton: list[str]


def draft_candidate(
    *,
    intent_name: str,
    intent_description: str,
    group: GroupChoice,
    stats: IntentStats,
    params: MiningParams,
    step_samples: Sequence[Sequence[Mapping[str, Any]]],
    failed_samples: Mapping[str, Sequence[Mapping[str, Any]]],
    session_ids: Sequence[str],
    excerpts: Sequence[tuple[str, Any]],
    counts: Mapping[str, Any],
) -> Draft:
    """The candidate record, by rules only: the same inputs always give the same draft.

    step_samples: per session, the args of each skeleton step (calls_by_step);
    failed_samples: tool → args of that tool's calls in the failed sessions that show a forbidden feature."""
    skeleton = group.skeleton
    result = contrast(stats, skeleton, params)
    steps: list[str] = []
    for position, tool in enumerate(skeleton):
        samples = [sample[position] for sample in step_samples if position < len(sample)]
        steps.append(step_text(tool, render_call(tool, generalise_args(samples, params.literal_share))))
    if len(steps) < params.min_steps:
        steps.append("Tell the customer the result and what happens next.")
    if len(steps) < params.min_steps:
        steps.insert(0, "Confirm what the customer needs and the details the next step requires.")
    forbidden_actions: list[str] = []
    forbidden_evidence: list[dict[str, Any]] = []
    for feature in result.forbidden:
        call = render_call(feature.tool, generalise_args(failed_samples.get(feature.tool, []), params.literal_share), literals_only=True)
        if feature.kind == "tool":
            text = f"Do not call {call} for this task."
        else:
            text = f"Do not call {call} before {feature.before}."
        forbidden_actions.append(text)
        forbidden_evidence.append({
            "action": text, "feature": feature.describe(), "resolved": feature.resolved, "failed": feature.failed,
            "resolvedRate": _rate(feature.resolved, result.resolved_total), "failedRate": _rate(feature.failed, result.failed_total),
            "failLift": feature.fail_lift,
        })
    evidence: dict[str, Any] = {
        "intent": intent_name,
        "skeleton": list(skeleton),
        "support": result.support,
        "resolved": result.resolved_total,
        "failed": result.failed_total,
        "failedWithSkeleton": result.failed_with_skeleton,
        "supportRate": _rate(result.support, result.resolved_total),
        "failedWithSkeletonRate": _rate(result.failed_with_skeleton, result.failed_total),
        "skeletonLift": lift(result.support, result.resolved_total, result.failed_with_skeleton, result.failed_total),
        "escalatedExcluded": stats.escalated,
        "withoutOutcome": stats.unlabelled_outcome,
        "tools": result.tools,
        "pairs": result.pairs,
        "forbidden": forbidden_evidence,
        "alternatives": [{"skeleton": list(s), "support": n} for s, n in group.alternatives],
        "sessionIds": list(session_ids),
        "excerpts": [{"sessionId": sid, "excerpt": excerpt} for sid, excerpt in excerpts],
        "summary": _summary(result, skeleton),
        **{f"run{k[0].upper()}{k[1:]}": v for k, v in counts.items()},
    }
    return Draft(
        key=procedure_key_for(intent_name),
        applies_when=applies_when_for(intent_name, intent_description),
        steps=steps,
        required_tools=list(dict.fromkeys(skeleton)),
        forbidden_actions=forbidden_actions,
        evidence=evidence,
        skeleton=list(skeleton),
    )
