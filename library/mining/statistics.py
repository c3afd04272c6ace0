"""The statistics behind a mined candidate's evidence, all from scipy.stats (no hand-written tests):

- rate(k, n): the share with its Wilson score interval (``binomtest(k, n).proportion_ci(method="wilson")``);
- lift(a, n_a, b, n_b): P(feature | a) / P(feature | b) with a conservative interval: the ratio of the
  two Wilson bounds, each at confidence 1 - (1 - level) / 2, so that both hold together with at least
  `level` (Bonferroni). It stays defined when a count is zero (then the upper or the lower end is
  infinite), which the Katz log interval of ``scipy.stats.contingency.relative_risk`` is not;
- fisher(a, n_a, b, n_b): Fisher's exact test of the 2×2 table, one-sided "a shows it more often";
- multiple testing: Bonferroni (p × m, at most 1), the correction the family-wise
  significance level of an agent promises, for m tests of one family (the skeletons of a run, or the
  forbidden features of one candidate).

Units are distinct tasks (repeated trials of one task are one observation) unless a field says
sessions.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from scipy.stats import binomtest, fisher_exact

CONFIDENCE = 0.95


def _finite(value: float) -> float | None:
    """JSON has no infinity: an unbounded end is None ("no upper bound")."""
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return round(float(value), 4)


@lru_cache(maxsize=65536)
def wilson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Cached: a run asks for the same (count, total) many times (every tool of an intent shares
    the totals)."""
    if n <= 0:
        return None
    interval = binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(interval.low), float(interval.high)


def rate(k: int, n: int, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """{"count", "of", "rate", "low", "high"} (rate and bounds None when n is 0)."""
    bounds = wilson(k, n, confidence)
    return {
        "count": int(k),
        "of": int(n),
        "rate": round(k / n, 4) if n else None,
        "low": round(bounds[0], 4) if bounds else None,
        "high": round(bounds[1], 4) if bounds else None,
    }


def lift_interval(a: int, n_a: int, b: int, n_b: int, confidence: float = CONFIDENCE) -> tuple[float | None, float, float]:
    """(lift, low, high): the ratio of rates and the ratio of simultaneous Wilson bounds. lift is None
    when both rates are zero or a total is zero; low is 0 and high is inf where a bound is zero."""
    if n_a <= 0 or n_b <= 0:
        return None, 0.0, math.inf
    each = 1 - (1 - confidence) / 2
    low_a, high_a = wilson(a, n_a, each)
    low_b, high_b = wilson(b, n_b, each)
    p_a, p_b = a / n_a, b / n_b
    point = None if p_a == 0 and p_b == 0 else (math.inf if p_b == 0 else p_a / p_b)
    low = low_a / high_b if high_b > 0 else math.inf
    high = high_a / low_b if low_b > 0 else math.inf
    return point, low, high


@lru_cache(maxsize=65536)
def fisher_p(a: int, n_a: int, b: int, n_b: int, alternative: str) -> float:
    """Fisher's exact p-value comparing a of n_a with b of n_b (1.0 when a group is empty)."""
    if n_a <= 0 or n_b <= 0:
        return 1.0
    _, p = fisher_exact([[a, n_a - a], [b, n_b - b]], alternative=alternative)
    return float(p)


def fisher_greater(a: int, n_a: int, b: int, n_b: int) -> float:
    """One-sided Fisher exact p-value that the feature is more frequent in group a than in group b."""
    return fisher_p(a, n_a, b, n_b, "greater")


def fisher_two_sided(a: int, n_a: int, b: int, n_b: int) -> float:
    return fisher_p(a, n_a, b, n_b, "two-sided")


def bonferroni(p: float, tests: int) -> float:
    return min(1.0, p * max(1, tests))


def contrast(a: int, n_a: int, b: int, n_b: int, *, tests: int = 1, alpha: float = 0.05) -> dict[str, Any]:
    """The full record of one feature: counts and rates of both groups with Wilson intervals, the lift
    with its 95 % interval and with the interval at the corrected level, Fisher's one-sided p-value,
    its Bonferroni-adjusted value, and whether the lift is credibly above 1 (adjusted p < alpha and
    the corrected interval's lower end > 1)."""
    point, low, high = lift_interval(a, n_a, b, n_b)
    corrected_confidence = 1 - alpha / max(1, tests)
    _, corrected_low, _ = lift_interval(a, n_a, b, n_b, corrected_confidence)
    p = fisher_greater(a, n_a, b, n_b)
    adjusted = bonferroni(p, tests)
    return {
        "lift": _finite(point) if point is not None and not math.isinf(point) else (None if point is None else "inf"),
        "liftLow": _finite(low) if not math.isinf(low) else None,
        "liftHigh": _finite(high),
        "liftLowCorrected": _finite(corrected_low) if not math.isinf(corrected_low) else None,
        "pValue": float(f"{p:.4g}"),
        "pAdjusted": float(f"{adjusted:.4g}"),
        "tests": max(1, tests),
        "alpha": alpha,
        "credible": bool(n_b > 0 and adjusted < alpha and corrected_low > 1.0),
    }


def lift_number(record: dict[str, Any]) -> float:
    """The lift as a sortable number (inf for "inf", 0 for None)."""
    value = record.get("lift")
    if value == "inf":
        return math.inf
    return float(value) if isinstance(value, (int, float)) else 0.0
