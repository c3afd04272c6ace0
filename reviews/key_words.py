"""The words reviewer pages use for the record's and the miner's keys.

The procedure record, the miner's evidence and counts, a mining run's settings and the audit
snapshots are JSON with camelCase keys (`withoutIntent`, `appliesWhen`, `minToolCalls`). Pages show
them in words, from this one table: the mining run page, the candidate page's evidence, the audit
log, thread anchors and lint messages. A key the table does not know is split into words
(`nearDuplicateOf` → "near duplicate of"), so no raw key reaches a page.
"""

from __future__ import annotations

import re
from typing import Any

from library import formatting

# A mining run's counts and a report entry's figures (library/mining/skeletons.py intent_figures), as
# a count reads: "12 resolved by escalation", "3 with too few tool calls".
FIGURE_LABELS = {  # in the order a page lists them: what was read, what was left out, the outcomes, the groups
    "sessions": "sessions",
    "withoutIntent": "without an intent (not mined)",
    "withoutOutcome": "without outcome",
    "awaitingLabel": "waiting for a final label (not mined)",
    "tooFewToolCalls": "with too few tool calls",
    "heldBack": "held back for the backtest",
    "mined": "mined",
    "resolved": "resolved",
    "resolvedByEscalation": "resolved by escalation",
    "failed": "failed",
    "unknown": "without outcome",
    "resolvedTasks": "resolved tasks",
    "failedTasks": "failed tasks",
    "support": "tasks follow the skeleton",
    "supportSessions": "sessions follow the skeleton",
    "topSupport": "tasks follow the top skeleton",
    "failedWithSkeleton": "failed tasks follow the skeleton",
    # the run's counts
    "intents": "intents",
    "groups": "skeleton groups",
    "groupsTested": "groups tested",
    "credible": "credible",
    "candidates": "candidates",
    "quarantined": "quarantined",
    "skipped": "intents not proposed",
    "reported": "reported",
    # a coding agent's task families (library/mining/coding_runs.py)
    "families": "task families",
    "resolvedWithVerify": "resolved with a passing test command",
    "familiesNotProposed": "task families not proposed",
    "fileIndexes": "repositories indexed for the task's files",
}

# Other keys, as a label reads ("applies when: …", "minimum tool calls 2").
KEY_LABELS = {
    # the procedure record (library/models/versions.py ProcedureVersion, the agent API's JSON)
    "appliesWhen": "applies when",
    "requiredTools": "required tools",
    "forbiddenActions": "forbidden actions",
    "verifyCommand": "verify command",
    "contentHash": "content hash",
    "reviewBy": "review by",
    # a mining run's settings (library/mining/skeletons.py MiningParams.to_dict)
    "agentKind": "kind of agent",
    "supportThreshold": "support threshold",
    "supportUnit": "support counted in",
    "ignoredTools": "ignored tools",
    "terminalTools": "terminal tools",
    "minToolCalls": "minimum tool calls",
    "significanceLevel": "significance level",
    "backtestShare": "share held back for the backtest",
    "maxForbidden": "most forbidden actions",
    "maxSteps": "most steps",
    "nearDuplicate": "near-duplicate similarity",
    # evidence a mined candidate carries beside its figures (library/mining/mining_runs.py)
    "miningRunId": "mining run",
    "miningRun": "mining run",
    "runSessions": "sessions in the run",
    "runWithoutIntent": "sessions of the run without an intent",
    "runWithoutOutcome": "sessions of the run without outcome",
    "nearDuplicateOf": "near-duplicate of",
    "escalatedExcluded": "escalated sessions left out",
    # a coding agent's run (library/mining/coding_runs.py coding_parameters)
    "minTraces": "resolved sessions with a verify command a task family needs",
    "familyRules": "task family rules",
}

_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def key_words(key: str) -> str:
    """A key as words: from the tables, else its camelCase humps split ("nearDuplicateOf" →
    "near duplicate of")."""
    key = str(key)
    if key in KEY_LABELS:
        return KEY_LABELS[key]
    if key in FIGURE_LABELS:
        return FIGURE_LABELS[key]
    return _HUMP.sub(" ", key).lower() if _HUMP.search(key) else key


def figure_items(figures: dict[str, Any]) -> list[str]:
    """A run's counts or a report entry's figures as words ("12 resolved by escalation"), the skeleton left out,
    in the order of FIGURE_LABELS (the order a run counts in; PostgreSQL's jsonb keeps keys sorted by
    length), keys it does not know last."""
    order = {key: index for index, key in enumerate(FIGURE_LABELS)}
    keys = sorted((key for key in figures if key != "topSkeleton"), key=lambda key: order.get(key, len(order)))
    return [formatting.count(figures[key], FIGURE_LABELS.get(key) or key_words(key)) for key in keys]


def value_words(value: Any) -> str:
    """A recorded value for a page: text as is, a list joined, a mapping as "key words value" pairs
    (its keys in words too), a number or truth value as Python writes it."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return ", ".join(f"{key_words(k)} {value_words(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(value_words(v) for v in value)
    return "" if value is None else str(value)
