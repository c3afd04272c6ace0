"""The statistics behind a mined candidate's evidence, from scipy.stats:

- rate(k, n): the share with its Wilson score interval (``binomtest(k, n).proportion_ci(method="wilson")``);
- lift(a, n_a, b, n_b): P(feature | a) / P(feature | b) with a conservative interval: the ratio of the
  two Wilson bounds, each at confidence 1 - (1 - level) / 2, so that both hold together with at least
  `level` (Bonferroni). It stays defined when a count is zero (then the upper or the lower end is
  infinite), which the Katz log interval of ``scipy.stats.contingency.relative_risk`` is not;
- fisher(a, n_a, b, n_b): Fisher's exact test of the 2×2 table, one-sided "a shows it more often";
- multiple testing: Bonferroni (p × m, at most 1), the correction the family-wise
  significance level of an agent promises, for m tests of one family (the skeletons of a run, or the
  forbidden features of one candidate);
- within_task: followers vs the other sessions within tasks, pooled over tasks (the gate and the
  backtest): the Cochran–Mantel–Haenszel test and the Mantel–Haenszel risk ratio with its
  Greenland–Robins interval, as statsmodels' StratifiedTable computes them, from sums accumulated
  task by task in constant memory (WithinTaskSums) instead of the tables; the tail probabilities
  from scipy.stats (chi2, norm).

Units are distinct tasks (repeated trials of one task are one observation) unless a field says
sessions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from scipy.stats import binomtest, chi2, fisher_exact, norm

CONFIDENCE = 0.95


def _finite(value: float) -> float | None:
    """JSON has no infinity: an unbounded end is None ("no upper bound")."""
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return round(float(value), 4)


try:
    # binomtest() also computes an exact p-value, 1–5 ms per call, which a page of a hundred rates
    # cannot afford; the interval depends on k and n only, so the result object is built directly
    # (tests compare it with binomtest's on a grid, so a SciPy upgrade that changes this shows).
    from scipy.stats._result_classes import BinomTestResult
except ImportError:  # pragma: no cover - older or newer SciPy layouts
    BinomTestResult = None


@lru_cache(maxsize=65536)
def wilson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The Wilson score interval of k in n, (low, high), or None when n is 0: the project's one
    (the miner's rates, the metrics pages, a rollout's arms). Cached: a run asks for the same
    (count, total) many times (every tool of an intent shares the totals)."""
    if n <= 0:
        return None
    k, n = int(k), int(n)
    if BinomTestResult is not None:
        result = BinomTestResult(k=k, n=n, alternative="two-sided", statistic=k / n, pvalue=math.nan)
    else:  # pragma: no cover
        result = binomtest(k, n)
    interval = result.proportion_ci(confidence_level=confidence, method="wilson")
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


def lift_interval(
    a: int, n_a: int, b: int, n_b: int, confidence: float = CONFIDENCE
) -> tuple[float | None, float, float]:
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


def _sums_of(a: float, b: float, c: float, d: float) -> tuple[float, ...]:
    """What one stratum adds to the estimators, with statsmodels' own operations (StratifiedTable):
    a, E[a] and Var[a] under the null (the CMH statistic), a(c+d)/n and c(a+b)/n (the
    Mantel–Haenszel risk ratio's numerator and denominator) and ((a+b)(c+d)(a+c) - acn)/n² (the
    Greenland–Robins variance of its logarithm); then the last three again with 0.5 added to every
    cell (Haldane), for when a zero makes the ratio 0 or unbounded."""
    n = a + b + c + d
    apb, apc, bpd, cpd = a + b, a + c, b + d, c + d
    found = [
        a,
        apb * apc / n,
        apb * apc * bpd * cpd / (n**2 * (n - 1)),
        a * cpd / n,
        c * apb / n,
        (apb * cpd * apc - a * c * n) / n**2,
    ]
    a, b, c, d = a + 0.5, b + 0.5, c + 0.5, d + 0.5
    n = a + b + c + d
    apb, apc, cpd = a + b, a + c, c + d
    found += [a * cpd / n, c * apb / n, (apb * cpd * apc - a * c * n) / n**2]
    return tuple(found)


# the positions in WithinTaskSums.sums
A, EXPECTED, VARIANCE, R, S, P, R_HALF, S_HALF, P_HALF = range(9)


class WithinTaskSums:
    """The within-task contrast of one set of tasks, accumulated task by task (add) in constant
    memory: what the estimators need, not the tables. A task whose sessions compare (some follow,
    some do not) is its own stratum and adds its _sums_of; a task whose sessions do not compare (one
    session; or all follow, or none does) goes into one pooled stratum as one observation (each of
    its n sessions weighs 1/n), whose sums are added at the end: one session per task is then exactly
    the plain comparison, and a task retried the same way counts once, as in the distinct-task
    counts. record() gives the contrast (within_task)."""

    __slots__ = ("totals", "tasks", "compared", "first", "pooled", "sums")

    def __init__(self) -> None:
        self.totals = [0, 0, 0, 0]  # sessions, per cell
        self.tasks = 0
        self.compared = 0  # tasks that are their own stratum
        self.first: Table | None = None  # the first of them (the only stratum when it is alone)
        self.pooled = [0.0, 0.0, 0.0, 0.0]
        self.sums = [0.0] * 9

    @classmethod
    def of(cls, tables: Mapping[Table, int] | Iterable[Table]) -> WithinTaskSums:
        """From task tables: table → how many tasks have it, or one table per task."""
        found = cls()
        for table, count in tables.items() if isinstance(tables, Mapping) else ((t, 1) for t in tables):
            found.add(table, count)
        return found

    def add(self, table: Table, count: int = 1) -> None:
        """`count` tasks with this table."""
        a, b, c, d = table
        total = a + b + c + d
        if not total or count <= 0:
            return
        totals = self.totals
        totals[0] += a * count
        totals[1] += b * count
        totals[2] += c * count
        totals[3] += d * count
        self.tasks += count
        if (a or b) and (c or d):
            if not self.compared:
                self.first = (a, b, c, d)
            self.compared += count
            sums = self.sums
            for i, value in enumerate(_sums_of(a, b, c, d)):
                sums[i] += value * count
        else:
            pooled = self.pooled
            pooled[0] += a * count / total
            pooled[1] += b * count / total
            pooled[2] += c * count / total
            pooled[3] += d * count / total

    def _pooled_compares(self) -> bool:
        pooled = self.pooled
        return bool((pooled[0] + pooled[1]) and (pooled[2] + pooled[3]))

    @property
    def strata(self) -> int:
        return self.compared + (1 if self._pooled_compares() else 0)

    def final_sums(self) -> list[float]:
        """The sums over every stratum, the pooled one included."""
        sums = list(self.sums)
        if self._pooled_compares():
            for i, value in enumerate(_sums_of(*self.pooled)):
                sums[i] += value
        return sums

    def only_stratum(self) -> tuple[float, ...] | None:
        """The one stratum when there is exactly one."""
        if self.strata != 1:
            return None
        return tuple(float(x) for x in self.first) if self.compared else tuple(self.pooled)

    def record(self, *, tests: int = 1, alpha: float = 0.05) -> dict[str, Any]:
        return within_task(self, tests=tests, alpha=alpha)


def cmh_test(sums: Sequence[float]) -> tuple[float, float, float]:
    """(statistic, two-sided p, sum of a - E[a]): the Cochran–Mantel–Haenszel test with continuity
    correction exactly as statsmodels' StratifiedTable.test_null_odds(correction=True) computes it
    (1.0 where its p-value is not finite). A sum of a - E[a] within 1e-9 of 0 is 0: the order in
    which tasks were added must not decide the side."""
    difference = sums[A] - sums[EXPECTED]
    if abs(difference) < 1e-9:
        difference = 0.0
    numerator = (abs(difference) - 0.5) ** 2
    if sums[VARIANCE]:
        statistic = numerator / sums[VARIANCE]
    else:  # numpy's division, as statsmodels divides: x / 0 is inf, 0 / 0 is nan
        statistic = math.inf if numerator else math.nan
    p_two = float(1 - chi2.cdf(statistic, 1))
    return statistic, (p_two if math.isfinite(p_two) else 1.0), difference


def cmh_p_value(sums: Sequence[float]) -> float:
    """The one-sided p-value that followers succeed more often: cmh_test's two-sided p halved on the
    side the sum of a - E[a] points to."""
    _, p_two, difference = cmh_test(sums)
    return p_two / 2 if difference > 0 else 1 - p_two / 2


def mh_risk_ratio(sums: Sequence[float]) -> tuple[float, float, bool]:
    """(Mantel–Haenszel risk ratio, Greenland–Robins variance of its logarithm, zero-corrected): when a
    zero makes the ratio 0 or unbounded, the sums of the tables with 0.5 added to every cell."""
    r, s, p, corrected = sums[R], sums[S], sums[P], False
    if not r or not s:
        r, s, p, corrected = sums[R_HALF], sums[S_HALF], sums[P_HALF], True
    return r / s, p / (r * s), corrected


def within_task(tables: Mapping[Table, int] | WithinTaskSums, *, tests: int = 1, alpha: float = 0.05) -> dict[str, Any]:
    """Followers vs the other sessions, compared within each task and pooled over tasks, from the
    accumulated sums (WithinTaskSums) or from task tables (table → how many tasks have it): the
    Cochran–Mantel–Haenszel test (as statsmodels' StratifiedTable computes it, with continuity
    correction, made one-sided: followers succeed more often) and the Mantel–Haenszel risk ratio
    (StratifiedTable.riskratio_pooled) with the Greenland–Robins interval of its logarithm, at 95 %
    and at the level corrected for `tests` (Bonferroni). Single-session tasks form one pooled
    stratum. When a zero makes the ratio 0 or unbounded, 0.5 is added to every cell of the compared
    strata (Haldane), and `zeroCorrected` says so. `credible`: adjusted p < alpha and the corrected
    lower end > 1."""
    found = tables if isinstance(tables, WithinTaskSums) else WithinTaskSums.of(tables)
    totals = found.totals
    record: dict[str, Any] = {
        "unit": "sessions, within tasks",
        "followers": rate(totals[0], totals[0] + totals[1]),
        "others": rate(totals[2], totals[2] + totals[3]),
        "tasks": found.tasks,
        "strata": found.strata,
        "tests": max(1, tests),
        "alpha": alpha,
        "riskRatio": None,
        "low": None,
        "high": None,
        "lowCorrected": None,
        "pValue": 1.0,
        "pAdjusted": 1.0,
        "zeroCorrected": False,
        "credible": False,
        "method": "no task compares",
    }
    if not record["strata"]:
        return record
    only = found.only_stratum()
    if only is not None:
        # one stratum (one session per task, or one task): the plain comparison, exactly as the
        # distinct-task contrast makes it: Fisher's exact test and the Wilson-ratio interval
        a, b, c, d = (int(round(x)) for x in only)  # a pooled stratum's task weights sum to whole tasks
        ratio, low, high = lift_interval(a, a + b, c, c + d)
        _, low_corrected, _ = lift_interval(a, a + b, c, c + d, 1 - alpha / max(1, tests))
        p = fisher_greater(a, a + b, c, c + d)
        adjusted = bonferroni(p, tests)
        record.update(
            riskRatio=None if ratio is None else ("inf" if math.isinf(ratio) else _finite(ratio)),
            low=None if math.isinf(low) else _finite(low),
            high=_finite(high),
            lowCorrected=None if math.isinf(low_corrected) else _finite(low_corrected),
            pValue=float(f"{p:.4g}"),
            pAdjusted=float(f"{adjusted:.4g}"),
            method="Fisher exact test, ratio of score intervals (one stratum)",
            credible=bool(adjusted < alpha and low_corrected > 1.0),
        )
        return record
    sums = found.final_sums()
    p = cmh_p_value(sums)
    ratio, variance, corrected = mh_risk_ratio(sums)
    se = math.sqrt(max(variance, 0.0))
    z = float(norm.ppf(1 - (1 - CONFIDENCE) / 2))
    z_corrected = float(norm.ppf(1 - alpha / max(1, tests) / 2))
    adjusted = bonferroni(p, tests)
    low_corrected = ratio * math.exp(-z_corrected * se)
    record.update(
        method="Cochran–Mantel–Haenszel, Mantel–Haenszel risk ratio (Greenland–Robins interval)",
        riskRatio=_finite(ratio),
        low=_finite(ratio * math.exp(-z * se)),
        high=_finite(ratio * math.exp(z * se)),
        lowCorrected=_finite(low_corrected),
        pValue=float(f"{p:.4g}"),
        pAdjusted=float(f"{adjusted:.4g}"),
        zeroCorrected=corrected,
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
