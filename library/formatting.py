"""How numbers are written for people, in one place: p-values, ratios, percentage points,
intervals, signed counts and counts with their noun. Every page (the candidate page, the mining run
page, the eval table, the metrics) and every stored sentence the miner writes use these, so one
figure reads the same wherever it appears.

- a p-value: "p = 0.039", "p = 1", below 0.001 "p < 0.001" (never "0.000", never "7.2e-33");
- a ratio: two decimals, "∞" for an unbounded one, never "-0.00";
- a share: "84 %", with the space the intervals and the metrics pages write ("95 % 77–89 %");
- percentage points: "+12 pts", "−3 pts", "±0 pts" (a true minus; never "−0");
- an interval: "95 % 2.47–11.05", open above "95 % 2.47–∞", a lower bound only "95 % from 2.47";
- a count: "1 candidate", "2 candidates", "1,250 sessions";
- a retriever's score: "0.442", rounded once from the raw value, as the ranking's reasons write it;
- an eval's two one-sided tests, figures per intent (`eval_tests_figures`), the words once (`EVAL_TESTS_WORDS`).
"""

from __future__ import annotations

import math
from typing import Any

from procmem_client.ranking import score_text

MINUS = "−"  # U+2212, the sign pages print before a negative figure
NBSP = "\u00a0"  # a space a line does not break at
P_FLOOR = 0.001


def _real(value: Any) -> float | None:
    """A finite or infinite number, or None (text, booleans, NaN and None are not figures)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if value == "inf":
            return math.inf
        return None
    if math.isnan(value):
        return None
    return float(value)


def p_number(p: Any) -> str:
    """The p-value alone: "0.039", "1", "< 0.001"; "not computed" without one. Three significant
    digits at most, never in scientific notation."""
    value = _real(p)
    if value is None:
        return "not computed"
    if value < P_FLOOR:
        return f"< {P_FLOOR:g}"
    if value >= 0.9995:
        return "1"
    return f"{value:.3g}"


def p_value(p: Any, label: str = "p") -> str:
    """ "p = 0.039", "p < 0.001", "adjusted p = 1" (`label` names which p)."""
    number = p_number(p)
    if number == "not computed":
        return f"{label} not computed"
    return f"{label} {number}" if number.startswith("<") else f"{label} = {number}"


def ratio(value: Any, digits: int = 2) -> str:
    """ "6.95", "∞"; "?" when there is none. Rounding to zero prints "0.00", never "-0.00"."""
    number = _real(value)
    if number is None:
        return "?"
    if math.isinf(number):
        return "∞" if number > 0 else f"{MINUS}∞"
    text = f"{number:.{digits}f}"
    if float(text) == 0:
        return f"{0:.{digits}f}"
    return text.replace("-", MINUS)


def percent(share: Any, digits: int = 0) -> str:
    """A share of one as a percentage: "84 %", "0 %", "100 %"; "—" when there is none."""
    number = _real(share)
    if number is None or math.isinf(number):
        return "—"
    return f"{100 * number:.{digits}f} %"


def points(value: Any, digits: int = 0) -> str:
    """A difference in percentage points: "+12 pts", "−3.5 pts", "±0 pts" when it rounds to zero."""
    number = _real(value)
    if number is None or math.isinf(number):
        return "—"
    text = f"{abs(number):.{digits}f}"
    if float(text) == 0:
        return f"±{0:.{digits}f} pts"
    return f"{'+' if number > 0 else MINUS}{text} pts"


def score(value: Any) -> str:
    """A retriever's score in the playground: "0.442", "−0.031", "not computed". Rounded once from
    the raw value by the same rule as the ranking's reasons ("semantic 0.442 ≥ floor 0.35",
    procmem_client.ranking.score_text), so a column and the reason beside it agree."""
    number = _real(value)
    return score_text(None if number is None or math.isinf(number) else number)


def signed(count: Any, sign: str) -> str:
    """A count of changes with its direction ("+3", "−2"); zero has no sign ("0")."""
    number = _real(count)
    if number is None:
        return "—"
    if number == 0:
        return "0"
    return f"{'+' if sign == '+' else MINUS}{abs(number):g}"


def interval(low: Any, high: Any = None, *, level: float = 95, digits: int = 2, lower_only: bool = False) -> str:
    """ "95 % 2.47–11.05"; "95 % 2.47–∞" when open above; "95 % from 2.47" for a lower bound
    only (`lower_only`: the gate reads whether the interval lies above 1). A missing lower bound
    reads as 0 (a ratio's interval from a zero count)."""
    low_text = ratio(0 if _real(low) is None else low, digits)
    label = f"{level:g} %"
    if lower_only:
        return f"{label} from {low_text}"
    high_number = _real(high)
    high_text = "∞" if high_number is None or math.isinf(high_number) else ratio(high_number, digits)
    return f"{label} {low_text}–{high_text}"


# nouns whose singular a count of one needs ("1 candidate"); a label that is not a noun phrase
# ("resolved by escalation") reads the same for any count
_SINGULAR = {
    "candidates": "candidate",
    "sessions": "session",
    "tasks": "task",
    "intents": "intent",
    "groups": "group",
    "cases": "case",
    "families": "family",
    "versions": "version",
    "procedures": "procedure",
    "skeletons": "skeleton",
    "strata": "stratum",
    "events": "event",
    "errors": "error",
    "excerpts": "excerpt",
    "items": "item",
    "files": "file",
    "differences": "difference",
    "skills": "skill",
    "values": "value",
    "rules": "rule",
    "outcomes": "outcome",
    "labels": "label",
    "spans": "span",
    "attempts": "attempt",
    "agents": "agent",
    "fields": "field",
    "figures": "figure",
}


def count(number: Any, noun: str) -> str:
    """ "1 candidate", "2 candidates", "1,250 sessions", "1 failed task follows the skeleton":
    `noun` is the plural label; for a count of one its first plural noun becomes singular (and a
    following "follow" agrees)."""
    value = _real(number)
    figure = f"{int(value):,}" if value is not None and value == int(value) else str(number)
    if value != 1:
        return f"{figure} {noun}"
    words = noun.split(" ")
    for index, word in enumerate(words):
        if word in _SINGULAR:
            words[index] = _SINGULAR[word]
            if index + 1 < len(words) and words[index + 1] == "follow":
                words[index + 1] = "follows"
            break
    return f"{figure} {' '.join(words)}"


# What an eval intent's two figures are, said once under the table that lists them per intent.
EVAL_TESTS_WORDS = (
    "p = … / p = …: each intent's two exact one-sided sign tests on the cases whose result changed, "
    "how likely so many of them improved (first) or regressed (second) if the candidate changed nothing"
)


def eval_tests_figures(p_improve: Any, p_regress: Any) -> str:
    """An eval intent's two exact one-sided sign tests, figures only, improved first (EVAL_TESTS_WORDS
    says what they are): "p = 0.0039 / p = 1", each figure unbreakable (no-break spaces) so a
    narrow column does not wrap "p" away from its value."""
    return " / ".join(p_value(p).replace(" ", NBSP) for p in (p_improve, p_regress))
