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
from typing import Any, Mapping

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


# ---------------------------------------------------------------------------------------------- within tasks

# One task's 2×2 table: (followers succeeded, followers failed, others succeeded, others failed), in sessions.
Table = tuple[int, int, int, int]


def _strata(tables: Mapping[Table, int]) -> tuple[list[tuple[float, ...]], list[int], int]:
    """The strata of the within-task contrast from `tables` (a task's table → how many tasks have
    it). A task whose sessions compare (some follow, some do not) is its own stratum. A task whose
    sessions do not compare (one session; or all follow, or none does) goes into one pooled stratum
    as one observation (each of its n sessions weighs 1/n): one session per task is then exactly the
    plain comparison, and a task retried the same way counts once, as in the distinct-task counts.
    Returns the strata that compare (both rows non-empty), their multiplicities, and the tasks."""
    pooled = [0.0, 0.0, 0.0, 0.0]
    strata: list[tuple[float, ...]] = []
    weights: list[int] = []
    tasks = 0
    for table, count in tables.items():
        total = sum(table)
        if not total:
            continue
        tasks += count
        if table[0] + table[1] and table[2] + table[3]:
            strata.append(tuple(float(x) for x in table))
            weights.append(count)
        else:
            for i in range(4):
                pooled[i] += table[i] * count / total
    if (pooled[0] + pooled[1]) and (pooled[2] + pooled[3]):
        strata.append(tuple(pooled))
        weights.append(1)
    return strata, weights, tasks


def within_task(tables: Mapping[Table, int], *, tests: int = 1, alpha: float = 0.05) -> dict[str, Any]:
    """Followers vs the other sessions, compared within each task and pooled over tasks: the
    Cochran–Mantel–Haenszel test (statsmodels' StratifiedTable, with continuity correction, made
    one-sided: followers succeed more often) and the Mantel–Haenszel risk ratio (StratifiedTable's
    pooled estimate) with the Greenland–Robins interval of its logarithm, at 95 % and at the level
    corrected for `tests` (Bonferroni). Single-session tasks form one pooled stratum. When a zero
    makes the ratio 0 or unbounded, 0.5 is added to every cell of the compared strata (Haldane),
    and `zeroCorrected` says so. `credible`: adjusted p < alpha and the corrected lower end > 1."""
    totals = [0, 0, 0, 0]
    for table, count in tables.items():
        for i in range(4):
            totals[i] += table[i] * count
    strata, weights, tasks = _strata(tables)
    record: dict[str, Any] = {
        "unit": "sessions, within tasks",
        "followers": rate(totals[0], totals[0] + totals[1]),
        "others": rate(totals[2], totals[2] + totals[3]),
        "tasks": tasks,
        "strata": int(sum(weights)),
        "tests": max(1, tests),
        "alpha": alpha,
        "riskRatio": None, "low": None, "high": None, "lowCorrected": None,
        "pValue": 1.0, "pAdjusted": 1.0, "zeroCorrected": False, "credible": False, "method": "no task compares",
    }
    if not strata:
        return record
    if len(strata) == 1:
        # one stratum (one session per task, or one task): the plain comparison, exactly as the
        # distinct-task contrast makes it: Fisher's exact test and the Wilson-ratio interval
        a, b, c, d = (int(round(x)) for x in strata[0])  # a pooled stratum's task weights sum to whole tasks
        ratio, low, high = lift_interval(a, a + b, c, c + d)
        _, low_corrected, _ = lift_interval(a, a + b, c, c + d, 1 - alpha / max(1, tests))
        p = fisher_greater(a, a + b, c, c + d)
        adjusted = bonferroni(p, tests)
        record.update(
            riskRatio=None if ratio is None else ("inf" if math.isinf(ratio) else _finite(ratio)),
            low=None if math.isinf(low) else _finite(low), high=_finite(high),
            lowCorrected=None if math.isinf(low_corrected) else _finite(low_corrected),
            pValue=float(f"{p:.4g}"), pAdjusted=float(f"{adjusted:.4g}"), method="Fisher exact test, ratio of score intervals (one stratum)",
            credible=bool(adjusted < alpha and low_corrected > 1.0),
        )
        return record
    import numpy as np
    from scipy.stats import norm
    from statsmodels.stats.contingency_tables import StratifiedTable

    array = np.repeat(np.asarray(strata, dtype=float), weights, axis=0).reshape(-1, 2, 2)
    a, b, c, d = array[:, 0, 0], array[:, 0, 1], array[:, 1, 0], array[:, 1, 1]
    n = a + b + c + d
    expected = (a + b) * (a + c) / n
    # the CMH statistic's sign: do followers succeed more often than within-task chance?
    direction = float((a - expected).sum())
    table = StratifiedTable(array.transpose(1, 2, 0))
    test = table.test_null_odds(correction=True)
    p_two = float(test.pvalue) if np.isfinite(test.pvalue) else 1.0
    p = p_two / 2 if direction > 0 else 1 - p_two / 2
    if not (a * (c + d) / n).sum() or not (c * (a + b) / n).sum():
        array = array + 0.5
        record["zeroCorrected"] = True
        table = StratifiedTable(array.transpose(1, 2, 0))
        a, b, c, d = array[:, 0, 0], array[:, 0, 1], array[:, 1, 0], array[:, 1, 1]
        n = a + b + c + d
    ratio = float(table.riskratio_pooled)
    # Greenland & Robins (1985): the variance of log RR_MH
    r_sum, s_sum = float((a * (c + d) / n).sum()), float((c * (a + b) / n).sum())
    variance = float((((a + b) * (c + d) * (a + c) - a * c * n) / n**2).sum()) / (r_sum * s_sum)
    se = math.sqrt(max(variance, 0.0))
    z = float(norm.ppf(1 - (1 - CONFIDENCE) / 2))
    z_corrected = float(norm.ppf(1 - alpha / max(1, tests) / 2))
    adjusted = bonferroni(p, tests)
    low_corrected = ratio * math.exp(-z_corrected * se)
    record.update(
        method="Cochran–Mantel–Haenszel, Mantel–Haenszel risk ratio (Greenland–Robins interval)",
        riskRatio=_finite(ratio), low=_finite(ratio * math.exp(-z * se)), high=_finite(ratio * math.exp(z * se)),
        lowCorrected=_finite(low_corrected), pValue=float(f"{p:.4g}"), pAdjusted=float(f"{adjusted:.4g}"),
        credible=bool(adjusted < alpha and low_corrected > 1.0),
    )
    return record


def holds(record: Mapping[str, Any]) -> bool:
    """A within-task contrast whose risk ratio's 95 % interval lies above 1."""
    low = record.get("low")
    return isinstance(low, (int, float)) and low > 1.0


def ratio_number(record: Mapping[str, Any]) -> float | None:
    """A within-task record's risk ratio as a number (inf for "inf"; None when not defined)."""
    value = record.get("riskRatio")
    if value == "inf":
        return math.inf
    return float(value) if isinstance(value, (int, float)) else None
