"""The verdict rule on hand-made paired outcomes, at its edges."""

from __future__ import annotations

import pytest

from library.evals.verdict import (
    FAIL,
    INCONCLUSIVE,
    PASS,
    PairedOutcome,
    Thresholds,
    binomial_tail,
    judge,
    mcnemar_exact_two_sided,
)

T = Thresholds(alpha=0.05, regression_alpha=0.10, max_pass_rate_drop=0.25, min_cases=5, max_error_rate=0.20)


def pairs(intent: str, *cells: tuple[bool | None, bool | None, int]) -> list[PairedOutcome]:
    out: list[PairedOutcome] = []
    for baseline, candidate, count in cells:
        out += [
            PairedOutcome(case_id=len(out) + i, intent=intent, baseline=baseline, candidate=candidate)
            for i in range(count)
        ]
    return out


def intent(detail: dict, name: str) -> dict:
    return next(row for row in detail["intents"] if row["intent"] == name)


def test_exact_binomial_tail_values():
    assert binomial_tail(5, 5) == pytest.approx(1 / 32)
    assert binomial_tail(4, 5) == pytest.approx(6 / 32)
    assert binomial_tail(0, 0) == 1.0
    assert mcnemar_exact_two_sided(0, 6) == pytest.approx(2 / 64)
    assert mcnemar_exact_two_sided(3, 3) == 1.0


def test_improves_passes_with_every_number_stored():
    outcomes = pairs("refund", (False, True, 8)) + pairs("status", (True, True, 4), (False, False, 1))
    detail = judge(outcomes, target_intent="refund", thresholds=T)
    assert detail["verdict"] == PASS
    target = intent(detail, "refund")
    assert (target["improved"], target["regressed"], target["paired"]) == (8, 0, 8)
    assert target["p_improve"] == pytest.approx(1 / 256)
    assert target["baseline_rate"] == 0.0 and target["candidate_rate"] == 1.0
    assert intent(detail, "status")["status"] == "unchanged"
    assert detail["thresholds"] == T.to_dict()
    assert detail["intents"][0]["intent"] == "refund" and detail["intents"][0]["target"]


def test_smallest_significant_improvement_passes_and_one_less_fails():
    # 5 of 5 discordant pairs improve: one-sided p = 1/32 ≤ 0.05
    assert judge(pairs("refund", (False, True, 5)), target_intent="refund", thresholds=T)["verdict"] == PASS
    # 5 improve, 1 regresses: p = P(X ≥ 5 | 6) = 7/64 > 0.05 → not beyond noise
    detail = judge(pairs("refund", (False, True, 5), (True, False, 1)), target_intent="refund", thresholds=T)
    assert detail["verdict"] == FAIL
    assert intent(detail, "refund")["status"] == "not_improved"
    assert "did not improve beyond noise" in detail["reasons"][0]


def test_ties_fail_because_nothing_improved():
    detail = judge(pairs("refund", (True, True, 6), (False, False, 4)), target_intent="refund", thresholds=T)
    assert detail["verdict"] == FAIL
    row = intent(detail, "refund")
    assert (row["improved"], row["regressed"], row["p_improve"]) == (0, 0, 1.0)


def test_regression_elsewhere_fails_even_when_the_target_improves():
    outcomes = pairs("refund", (False, True, 8)) + pairs("status", (True, False, 4), (True, True, 6))
    detail = judge(outcomes, target_intent="refund", thresholds=T)
    assert detail["verdict"] == FAIL
    assert intent(detail, "status")["status"] == "regressed"
    assert intent(detail, "status")["p_regress"] == pytest.approx(1 / 16)
    assert "Intent status got worse" in detail["reasons"][0]


def test_one_regression_among_many_cases_is_noise():
    outcomes = pairs("refund", (False, True, 8)) + pairs("status", (True, False, 1), (True, True, 19))
    detail = judge(outcomes, target_intent="refund", thresholds=T)
    assert detail["verdict"] == PASS
    assert intent(detail, "status")["status"] == "unchanged"


def test_large_drop_on_a_small_intent_counts_although_the_test_cannot_reach_significance():
    # 2 of 3 regress: p = 1/4 > 0.10, but the pass rate drops by 67 % > 25 %
    outcomes = pairs("refund", (False, True, 8)) + pairs("address", (True, False, 2), (True, True, 1))
    detail = judge(outcomes, target_intent="refund", thresholds=T)
    assert detail["verdict"] == FAIL
    assert intent(detail, "address")["status"] == "regressed"


def test_too_few_target_cases_is_inconclusive_with_the_reason():
    detail = judge(pairs("refund", (False, True, 4)), target_intent="refund", thresholds=T)
    assert detail["verdict"] == INCONCLUSIVE
    assert "Only 4 paired cases of the target intent refund; at least 5" in detail["reasons"][0]
    assert intent(detail, "refund")["status"] == "too_few"


def test_no_cases_at_all_is_inconclusive():
    detail = judge([], target_intent="refund", thresholds=T)
    assert detail["verdict"] == INCONCLUSIVE
    assert detail["totals"]["cases"] == 0


def test_errors_are_left_out_of_the_test_and_too_many_make_it_inconclusive():
    # 8 improvements and 1 errored pair: 1/9 errors < 20 % → judged on the 8 paired
    ok = judge(pairs("refund", (False, True, 8), (None, True, 1)), target_intent="refund", thresholds=T)
    assert ok["verdict"] == PASS and intent(ok, "refund")["errors"] == 1 and intent(ok, "refund")["paired"] == 8
    # 8 improvements and 3 errored pairs: 3/11 > 20 %
    bad = judge(pairs("refund", (False, True, 8), (False, None, 3)), target_intent="refund", thresholds=T)
    assert bad["verdict"] == INCONCLUSIVE
    assert "errored in the runner" in bad["reasons"][0]


def test_thresholds_are_settings_that_change_the_verdict():
    outcomes = pairs("refund", (False, True, 5))
    assert judge(outcomes, target_intent="refund", thresholds=T)["verdict"] == PASS
    strict = Thresholds(alpha=0.01, min_cases=5)
    assert judge(outcomes, target_intent="refund", thresholds=strict)["verdict"] == FAIL


def test_a_target_that_clearly_gets_worse_fails_even_with_too_few_cases():
    detail = judge(pairs("status", (True, False, 4)), target_intent="status", thresholds=T)
    assert detail["verdict"] == FAIL
    assert intent(detail, "status")["status"] == "regressed"
    assert detail["reasons"][0].startswith("The target intent status got worse")
