"""library/formatting.py: one way to write each kind of number (issue 39 item 3). Properties over
any input (Hypothesis), and the cases pages showed wrongly: "p = 0.000" beside "7.2e-33", "−0",
"1 candidates", an interval's lower bound written to four places on one page and two on another."""

from __future__ import annotations

import math
import re

from hypothesis import given
from hypothesis import strategies as st

from library import formatting

_numbers = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**9), 10**9)


@given(p=st.floats(min_value=0, max_value=1))
def test_a_p_value_is_never_zero_nor_in_scientific_notation(p):
    text = formatting.p_value(p)
    assert re.fullmatch(r"p (< 0\.001|= (1|0\.\d+))", text), text
    assert "e" not in text and text != "p = 0" and not re.search(r"= 0\.0+$", text)
    if p < 0.001:
        assert text == "p < 0.001"
    else:
        assert abs(float(text.removeprefix("p = ")) - p) <= max(0.0005, 0.005 * p)


def test_p_values_the_pages_showed_read_alike():
    assert formatting.p_value(7.2e-33) == formatting.p_value(0.0) == "p < 0.001"
    assert formatting.p_value(0.00391) == "p = 0.00391" and formatting.p_value(1.0) == "p = 1"
    assert formatting.p_value(0.0625, "adjusted p") == "adjusted p = 0.0625"
    assert formatting.p_value(None) == "p not computed" and formatting.p_value(True) == "p not computed"


@given(value=_numbers)
def test_ratios_and_points_never_print_a_negative_zero(value):
    for text in (formatting.ratio(value), formatting.points(value), formatting.points(value, digits=1)):
        assert not re.search(r"[-−]0(\.0+)?( |$)", text), text
        assert "-" not in text  # a true minus sign, never a hyphen
    if isinstance(value, float) and math.isnan(value):
        assert formatting.ratio(value) == "?" and formatting.points(value) == "—"


def test_points_and_signed_counts():
    assert formatting.points(75) == "+75 pts" and formatting.points(-3.4) == "−3 pts"
    assert formatting.points(-0.2) == "±0 pts" and formatting.points(-0.04, digits=1) == "±0.0 pts"
    assert [formatting.signed(n, s) for n, s in ((3, "+"), (0, "+"), (0, "-"), (2, "-"))] == ["+3", "0", "0", "−2"]


@given(low=st.floats(0, 1e6) | st.none(), high=st.floats(0, 1e6) | st.none() | st.just("inf"))
def test_an_interval_is_written_one_way(low, high):
    both = formatting.interval(low, high)
    lower = formatting.interval(low, lower_only=True)
    low_text = formatting.ratio(low if low is not None else 0)
    assert both.startswith(f"95 % {low_text}–") and lower == f"95 % from {low_text}"
    assert re.fullmatch(r"95 % from \d+\.\d\d", lower)
    assert both.endswith("∞") == (high is None or high == "inf" or math.isinf(float(high)))


def test_the_gate_interval_reads_the_same_on_the_run_page_and_the_candidate_page():
    assert formatting.interval(2.4659) == "95 % 2.47–∞"
    assert formatting.interval(2.4659, lower_only=True) == "95 % from 2.47"
    assert formatting.interval(1.1, 5.728, level=98.3) == "98.3 % 1.10–5.73"


@given(value=st.floats(min_value=-1, max_value=1))
def test_a_score_is_rounded_once_from_the_raw_value(value):
    # the playground's column and the ranking's reasons ("semantic 0.442 ≥ floor 0.35") write a score alike
    text = formatting.score(value)
    assert float(text.replace(formatting.MINUS, "-")) == float(f"{value:.3f}") and text != f"{formatting.MINUS}0.000"


def test_scores_the_playground_showed_twice_rounded():
    # 0.44246 first rounded to 0.4425, then to "0.443", beside the reason's "0.442"
    assert formatting.score(0.44246) == "0.442" and formatting.score(0.22249) == "0.222"
    assert formatting.score(None) == formatting.score(math.nan) == "not computed"
    assert formatting.score(-0.0001) == "0.000" and formatting.score(1) == "1.000"


@given(n=st.integers(0, 10**7), noun=st.sampled_from(sorted(formatting._SINGULAR)))
def test_a_count_agrees_with_its_noun(n, noun):
    text = formatting.count(n, noun)
    assert text == (f"1 {formatting._SINGULAR[noun]}" if n == 1 else f"{n:,} {noun}")


def test_counts_of_labels():
    assert formatting.count(1, "candidates") == "1 candidate"
    assert formatting.count(1, "failed tasks follow the skeleton") == "1 failed task follows the skeleton"
    assert formatting.count(1, "resolved by escalation") == "1 resolved by escalation"
    # the commands' labels: the noun after an adjective or a singular noun agrees too
    assert formatting.count(1, "stored excerpts") == "1 stored excerpt"
    assert formatting.count(1, "task family rules") == "1 task family rule"
    assert formatting.count(1, "later versions") == "1 later version"
    assert formatting.count(2, "bad files") == "2 bad files"
    assert (
        formatting.count(1250, "sessions") == "1,250 sessions" and formatting.count(0, "candidates") == "0 candidates"
    )


def test_an_evals_two_tests_figures_per_intent_and_their_words_once():
    assert formatting.eval_tests_figures(0.00391, 1.0) == "p\u00a0=\u00a00.00391 / p\u00a0=\u00a01"
    assert formatting.eval_tests_figures(None, 0.0001) == "p\u00a0not\u00a0computed / p\u00a0<\u00a00.001"
    assert "exact one-sided sign tests on the cases whose result changed" in formatting.EVAL_TESTS_WORDS


def test_a_share_is_written_with_the_space_the_intervals_use():
    # the candidate page read "(84%)" above "84 % (95 % 77–89 %)", the eval "pass rate 0% → 100%" beside "(100 %)"
    assert [formatting.percent(v) for v in (0.84, 0, 1, None, "x")] == ["84 %", "0 %", "100 %", "—", "—"]
    assert formatting.percent(0.4375, digits=1) == "43.8 %"
