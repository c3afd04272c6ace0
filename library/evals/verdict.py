"""The verdict of an eval run, from paired outcomes. Pure Python: no Django.

Every regression case runs twice — without the candidate (baseline arm) and with it (candidate
arm) — so each case gives a *pair* of outcomes. Per intent the pairs fall into four cells:

    both passed | both failed | improved (failed → passed, "c") | regressed (passed → failed, "b")

Only the discordant pairs carry information about the candidate. McNemar's exact test asks, under
the null hypothesis that the candidate changes nothing, how likely at least `c` of the `b + c`
discordant pairs are improvements: a binomial tail with p = 1/2. It is one-sided in each direction
(improvement on the target intent, regression on the others) because each question is directional
and fixed before the data is seen.

The rule (every threshold is a setting, stored with the run and written into the verdict):
1. A pair where either arm errored (the runner failed, not the agent) is left out of the test and
   counted as an error. More errors than `max_error_rate` of all pairs → INCONCLUSIVE.
2. Any intent (the target included) that is worse beyond noise → FAIL. Worse beyond noise: more
   regressions than improvements and either the exact one-sided p ≤ `regression_alpha`, or a drop
   in pass rate larger than `max_pass_rate_drop` (intents with few cases can never reach
   significance; a large drop still counts).
3. Fewer than `min_cases` paired cases of the target intent → INCONCLUSIVE (too few to judge).
4. The target intent must improve: c > b and the exact one-sided p ≤ `alpha`; otherwise FAIL.
5. Otherwise PASS.

A retirement or rollback run (`require_improvement=False`) asks only the "nothing gets worse" half:
rules 1–3, then PASS — the target intent (the retired version's) must not get worse either.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from math import comb

from .. import formatting

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"


@dataclass(frozen=True)
class Thresholds:
    alpha: float = 0.05
    regression_alpha: float = 0.10
    max_pass_rate_drop: float = 0.25
    min_cases: int = 5
    max_error_rate: float = 0.20
    # approval: the candidate must be injected in at least this share of its intent's cases
    # (checked by library.services.approval_blockers against the run's selection, not by the verdict)
    min_injected_share: float = 0.5

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Thresholds:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


@dataclass(frozen=True)
class PairedOutcome:
    """One case's two outcomes. `None` means that arm errored (no outcome)."""

    case_id: int
    intent: str
    baseline: bool | None
    candidate: bool | None


def binomial_tail(k: int, n: int) -> float:
    """P(X ≥ k) for X ~ Binomial(n, 1/2): the exact one-sided McNemar p-value with k of n
    discordant pairs going the tested way. n = 0 gives 1.0 (no evidence either way)."""
    if n <= 0 or k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return sum(comb(n, i) for i in range(k, n + 1)) / 2**n


def mcnemar_exact_two_sided(b: int, c: int) -> float:
    """The two-sided exact McNemar p-value, reported alongside the one-sided ones."""
    n = b + c
    if n == 0:
        return 1.0
    return min(1.0, 2 * binomial_tail(max(b, c), n))


@dataclass
class IntentStats:
    intent: str
    target: bool
    cases: int = 0
    paired: int = 0
    errors: int = 0
    baseline_passed: int = 0
    candidate_passed: int = 0
    both_passed: int = 0
    both_failed: int = 0
    improved: int = 0
    regressed: int = 0
    p_improve: float = 1.0
    p_regress: float = 1.0
    p_two_sided: float = 1.0
    baseline_rate: float | None = None
    candidate_rate: float | None = None
    status: str = "unchanged"
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _intent_stats(intent: str, target: bool, pairs: list[PairedOutcome]) -> IntentStats:
    stats = IntentStats(intent=intent, target=target, cases=len(pairs))
    for pair in pairs:
        if pair.baseline is None or pair.candidate is None:
            stats.errors += 1
            continue
        stats.paired += 1
        stats.baseline_passed += pair.baseline
        stats.candidate_passed += pair.candidate
        if pair.baseline and pair.candidate:
            stats.both_passed += 1
        elif not pair.baseline and not pair.candidate:
            stats.both_failed += 1
        elif pair.candidate:
            stats.improved += 1
        else:
            stats.regressed += 1
    discordant = stats.improved + stats.regressed
    stats.p_improve = binomial_tail(stats.improved, discordant)
    stats.p_regress = binomial_tail(stats.regressed, discordant)
    stats.p_two_sided = mcnemar_exact_two_sided(stats.regressed, stats.improved)
    if stats.paired:
        stats.baseline_rate = stats.baseline_passed / stats.paired
        stats.candidate_rate = stats.candidate_passed / stats.paired
    return stats


def _regresses(stats: IntentStats, thresholds: Thresholds) -> bool:
    if stats.regressed <= stats.improved or not stats.paired:
        return False
    drop = (stats.regressed - stats.improved) / stats.paired
    return stats.p_regress <= thresholds.regression_alpha or drop > thresholds.max_pass_rate_drop


def judge(
    outcomes: Iterable[PairedOutcome], *, target_intent: str, thresholds: Thresholds, require_improvement: bool = True
) -> dict:
    """The verdict and every number behind it, as a JSON-ready dict (see library.evals.eval_runs for the
    shape stored in EvalRun.verdict_detail). `require_improvement` False: a retirement or rollback."""
    by_intent: dict[str, list[PairedOutcome]] = {target_intent: []}
    for outcome in outcomes:
        by_intent.setdefault(outcome.intent, []).append(outcome)
    stats = [_intent_stats(target_intent, True, by_intent[target_intent])]
    stats += [_intent_stats(name, False, pairs) for name, pairs in sorted(by_intent.items()) if name != target_intent]
    target = stats[0]

    total_cases = sum(s.cases for s in stats)
    total_errors = sum(s.errors for s in stats)
    reasons: list[str] = []
    regressions: list[str] = []
    inconclusive: list[str] = []

    error_rate = total_errors / total_cases if total_cases else 0.0
    if total_cases and error_rate > thresholds.max_error_rate:
        inconclusive.append(
            f"{total_errors} of {total_cases} cases errored in the runner ({formatting.percent(error_rate)}); "
            f"more than {formatting.percent(thresholds.max_error_rate)} makes the run inconclusive."
        )

    if _regresses(target, thresholds):
        target.status = "regressed"
        regressions.append(
            f"The target intent {target.intent} got worse: {target.regressed} cases regressed and {target.improved} "
            f"improved (pass rate {formatting.percent(target.baseline_rate)} → {formatting.percent(target.candidate_rate)}, exact one-sided "
            f"{formatting.p_value(target.p_regress)})."
        )
    for s in stats[1:]:
        if s.paired < thresholds.min_cases:
            s.notes.append(f"only {s.paired} paired cases: regressions are judged by the pass-rate drop alone")
        if _regresses(s, thresholds):
            s.status = "regressed"
            regressions.append(
                f"Intent {s.intent} got worse: {s.regressed} cases regressed and {s.improved} improved "
                f"(pass rate {formatting.percent(s.baseline_rate)} → {formatting.percent(s.candidate_rate)}, exact one-sided {formatting.p_value(s.p_regress)})."
            )
        elif s.improved > s.regressed:
            s.status = "improved"

    if target.status == "regressed":
        pass
    elif target.paired < thresholds.min_cases:
        target.status = "too_few"
        inconclusive.append(
            f"Only {target.paired} paired cases of the target intent {target.intent}; "
            f"at least {thresholds.min_cases} are needed to judge."
        )
    elif target.improved > target.regressed and target.p_improve <= thresholds.alpha:
        target.status = "improved"
    else:
        target.status = "not_improved"

    if regressions:
        verdict = FAIL
        reasons = regressions + inconclusive
    elif inconclusive:
        verdict = INCONCLUSIVE
        reasons = inconclusive
    elif not require_improvement:
        verdict = PASS
        reasons = [
            f"No intent got worse beyond noise without the change's version, the target intent {target.intent} "
            f"included (pass rate {formatting.percent(target.baseline_rate)} → {formatting.percent(target.candidate_rate)})."
        ]
    elif target.status != "improved":
        verdict = FAIL
        reasons = [
            f"The target intent {target.intent} did not improve beyond noise: {target.improved} cases improved, "
            f"{target.regressed} regressed (exact one-sided {formatting.p_value(target.p_improve)}, needs ≤ {thresholds.alpha})."
        ]
    else:
        verdict = PASS
        reasons = [
            f"The target intent {target.intent} improved: {target.improved} cases improved and {target.regressed} "
            f"regressed (pass rate {formatting.percent(target.baseline_rate)} → {formatting.percent(target.candidate_rate)}, exact one-sided "
            f"{formatting.p_value(target.p_improve)} ≤ {thresholds.alpha}); no other intent got worse beyond noise."
        ]

    return {
        "verdict": verdict,
        "reasons": reasons,
        "target_intent": target_intent,
        "test": "McNemar's exact test (binomial, p = 1/2, one-sided per direction)",
        "thresholds": thresholds.to_dict(),
        "totals": {
            "cases": total_cases,
            "paired": sum(s.paired for s in stats),
            "errors": total_errors,
            "baseline_passed": sum(s.baseline_passed for s in stats),
            "candidate_passed": sum(s.candidate_passed for s in stats),
            "improved": sum(s.improved for s in stats),
            "regressed": sum(s.regressed for s in stats),
        },
        "intents": [s.to_dict() for s in stats],
    }
