"""The rates of the metrics (a share with its Wilson interval), and whether a version's resolution rate in reported
sessions is significantly below the pass rate of its approving eval run (the metric warning).

"Significantly below" is a one-sided two-proportion z-test (pooled variance); α and the minimum
number of labelled sessions are settings (PROCMEM_METRIC_WARNING_ALPHA, _MIN_SESSIONS)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.conf import settings

from library import formatting
from library.mining.evidence_statistics import wilson


def setting(name: str, default):
    return getattr(settings, name, default)


@dataclass(frozen=True)
class Rate:
    hits: int
    total: int

    @property
    def value(self) -> float | None:
        return self.hits / self.total if self.total else None

    @property
    def percent(self) -> str:
        return "—" if self.total == 0 else f"{100 * self.hits / self.total:.1f} %"

    def __add__(self, other: Rate) -> Rate:
        return Rate(self.hits + other.hits, self.total + other.total)

    @property
    def interval(self) -> tuple[float, float] | None:
        """The Wilson score 95 % interval of the rate, or None without observations."""
        return wilson_interval(self.hits, self.total)

    @property
    def interval_percent(self) -> str:
        """ "95 % CI 61.2–88.0 %", or "" without observations."""
        ci = self.interval
        return "" if ci is None else f"95 % CI {100 * ci[0]:.1f}–{100 * ci[1]:.1f} %"


def wilson_interval(hits: int, total: int) -> tuple[float, float] | None:
    """The Wilson score 95 % interval (library/mining/evidence_statistics.py `wilson`) as (low, high)."""
    return wilson(hits, total, 0.95)


def normal_sf(z: float) -> float:
    """P(Z ≥ z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2))


@dataclass(frozen=True)
class DropTest:
    significant: bool
    observed: Rate
    expected: Rate
    z: float | None
    p_value: float | None
    reason: str


def resolution_drop_test(
    *, observed: Rate, expected: Rate, alpha: float | None = None, min_sessions: int | None = None
) -> DropTest:
    """Is the observed resolution rate significantly below the expected (eval) rate?

    One-sided two-proportion z-test with pooled variance: H0 p_observed ≥ p_expected,
    z = (p̂_e − p̂_o) / sqrt(p̄ (1 − p̄) (1/n_e + 1/n_o)), p = P(Z ≥ z). Both are binomial samples:
    the eval run's candidate arm is a small sample too, so a perfect 10 of 10 in the eval does not
    turn one failed session in a hundred into an alarm. Significant when p < alpha and there are at
    least `min_sessions` labelled sessions."""
    alpha = setting("PROCMEM_METRIC_WARNING_ALPHA", 0.01) if alpha is None else alpha
    min_sessions = setting("PROCMEM_METRIC_WARNING_MIN_SESSIONS", 30) if min_sessions is None else min_sessions
    if expected.total == 0:
        return DropTest(False, observed, expected, None, None, "no eval result to compare with")
    if observed.total < min_sessions:
        return DropTest(False, observed, expected, None, None, f"fewer than {min_sessions} labelled sessions")
    p_o, p_e = observed.value, expected.value
    pooled = (observed.hits + expected.hits) / (observed.total + expected.total)
    variance = pooled * (1 - pooled) * (1 / observed.total + 1 / expected.total)
    if variance == 0:
        return DropTest(False, observed, expected, 0.0, 1.0, "no variation in either sample")
    z = (p_e - p_o) / math.sqrt(variance)
    p_value = normal_sf(z)
    significant = p_o < p_e and p_value < alpha
    reason = (
        f"{observed.percent} of {observed.total} sessions vs {expected.percent} in the eval run "
        f"(z = {z:.2f}, {formatting.p_value(p_value, 'one-sided p')}, α = {alpha})"
    )
    return DropTest(significant, observed, expected, z, p_value, reason)
