"""The within-task estimator (library/mining/evidence_statistics.py: WithinTaskSums, within_task) and the second
reading that feeds it (library/mining/within.py). The estimator keeps, per table set, only the sums
the Cochran–Mantel–Haenszel test and the Mantel–Haenszel risk ratio with its Greenland–Robins interval
need; these tests hold it to statsmodels' StratifiedTable on the same tables."""

import math
import random
import tracemalloc
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst
from scipy.stats import norm
from statsmodels.stats.contingency_tables import StratifiedTable

from library.mining import evidence_statistics as st
from library.mining import within
from library.mining.skeletons import MiningParams

CELL = hst.integers(min_value=0, max_value=9)
# a task's table: (followers succeeded, followers failed, others succeeded, others failed), zeros included
TABLE = hst.tuples(CELL, CELL, CELL, CELL)
# a single-session task: one session in one cell (what the pooled stratum is made of)
SINGLE = hst.sampled_from([(1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)])
# a task whose sessions all follow (or none does): pooled too, weighing 1/n a session
ONE_SIDED = hst.one_of(
    hst.tuples(CELL, CELL).map(lambda t: (t[0], t[1], 0, 0)),
    hst.tuples(CELL, CELL).map(lambda t: (0, 0, t[0], t[1])),
)
TASKS = hst.lists(hst.tuples(hst.one_of(TABLE, SINGLE, ONE_SIDED), hst.integers(min_value=1, max_value=4)), max_size=30)


def _cube(tasks) -> np.ndarray:
    """The strata built the plain way, one per task (each task's table repeated by its count), the
    tasks that do not compare pooled into one stratum at 1/n a session: K × 2 × 2."""
    strata: list[tuple[float, ...]] = []
    pooled = np.zeros(4)
    for table, count in tasks:
        total = sum(table)
        if not total:
            continue
        if (table[0] or table[1]) and (table[2] or table[3]):
            strata += [tuple(float(x) for x in table)] * count
        else:
            pooled += np.asarray(table, dtype=float) * count / total
    if (pooled[0] + pooled[1]) and (pooled[2] + pooled[3]):
        strata.append(tuple(pooled))
    return np.asarray(strata, dtype=float).reshape(-1, 2, 2)


def _sums(tasks) -> st.WithinTaskSums:
    found = st.WithinTaskSums()
    for table, count in tasks:
        found.add(table, count)
    return found


def _reference(cube: np.ndarray) -> dict:
    """statsmodels on the same strata: the CMH test with continuity correction (two-sided p and the
    side), the pooled risk ratio (0.5 added to every cell when a zero makes it 0 or unbounded), and
    the Greenland–Robins variance of its logarithm, computed on the whole array at once."""
    table = StratifiedTable(cube.transpose(1, 2, 0))
    with np.errstate(divide="ignore", invalid="ignore"):  # a variance sum of 0, as statsmodels divides
        test = table.test_null_odds(correction=True)
    a, b, c, d = cube[:, 0, 0], cube[:, 0, 1], cube[:, 1, 0], cube[:, 1, 1]
    n = a + b + c + d
    difference = float((a - (a + b) * (a + c) / n).sum())
    p_two = float(test.pvalue) if np.isfinite(test.pvalue) else 1.0
    corrected = not (a * (c + d) / n).sum() or not (c * (a + b) / n).sum()
    if corrected:
        cube = cube + 0.5
        table = StratifiedTable(cube.transpose(1, 2, 0))
        a, b, c, d = cube[:, 0, 0], cube[:, 0, 1], cube[:, 1, 0], cube[:, 1, 1]
        n = a + b + c + d
    r, s = float((a * (c + d) / n).sum()), float((c * (a + b) / n).sum())
    variance = float((((a + b) * (c + d) * (a + c) - a * c * n) / n**2).sum()) / (r * s)
    return {
        "p_two": p_two,
        "difference": difference,
        "ratio": float(table.riskratio_pooled),
        "variance": variance,
        "corrected": corrected,
    }


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TASKS)
def test_the_streamed_sums_give_what_statsmodels_gives_on_the_same_tables(tasks):
    cube = _cube(tasks)
    found = _sums(tasks)
    assert found.strata == len(cube)
    if len(cube) < 2:
        return  # one stratum is the plain comparison (Fisher), below
    expected = _reference(cube)
    sums = found.final_sums()
    statistic, p_two, difference = st.cmh_test(sums)
    assert p_two == pytest.approx(expected["p_two"], rel=1e-9, abs=1e-12)
    assert difference == pytest.approx(expected["difference"], abs=1e-9)
    ratio, variance, corrected = st.mh_risk_ratio(sums)
    assert corrected == expected["corrected"]
    assert ratio == pytest.approx(expected["ratio"], rel=1e-9)
    assert variance == pytest.approx(expected["variance"], rel=1e-9, abs=1e-12)
    # the one-sided p: half the two-sided one on the side followers' successes exceed chance
    side = expected["difference"] if abs(expected["difference"]) >= 1e-9 else 0.0
    assert st.cmh_p_value(sums) == pytest.approx(p_two / 2 if side > 0 else 1 - p_two / 2, rel=1e-9, abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(TASKS, hst.integers(min_value=1, max_value=200))
def test_the_record_is_the_estimator_on_the_tables_in_any_order_and_grouping(tasks, tests):
    record = st.within_task(_sums(tasks), tests=tests)
    # the same tables one task at a time, in reverse order, as a Counter of tables
    single = [(table, 1) for table, count in reversed(tasks) for _ in range(count)]
    again = st.within_task(Counter(dict(Counter(t for t, _ in single))), tests=tests)
    for key in ("followers", "others", "tasks", "strata", "method", "zeroCorrected", "credible", "tests"):
        assert record[key] == again[key], key
    for key in ("riskRatio", "low", "high", "lowCorrected", "pValue", "pAdjusted"):
        if isinstance(record[key], float):
            assert record[key] == pytest.approx(again[key], rel=1e-3, abs=1e-4), key
        else:
            assert record[key] == again[key], key
    cube = _cube(tasks)
    assert record["strata"] == len(cube) and record["tasks"] == sum(count for table, count in tasks if sum(table))
    if len(cube) >= 2:
        expected = _reference(cube)
        assert (
            record["method"].startswith("Cochran–Mantel–Haenszel") and record["zeroCorrected"] == expected["corrected"]
        )
        z = norm.ppf(0.975)
        assert record["riskRatio"] == pytest.approx(expected["ratio"], rel=1e-3, abs=1e-4)
        assert record["low"] == pytest.approx(
            expected["ratio"] * math.exp(-z * math.sqrt(max(expected["variance"], 0))), rel=1e-3, abs=1e-4
        )


def test_one_session_per_task_is_the_plain_comparison():
    # the demo's worked example as single-session tasks: 118 of 140 followers vs 9 of 60 others
    tasks = Counter({(1, 0, 0, 0): 118, (0, 1, 0, 0): 22, (0, 0, 1, 0): 9, (0, 0, 0, 1): 51})
    record = st.within_task(tasks)
    assert record["strata"] == 1 and record["tasks"] == 200 and record["method"].startswith("Fisher exact test")
    assert (
        record["followers"]["count"],
        record["followers"]["of"],
        record["others"]["count"],
        record["others"]["of"],
    ) == (118, 140, 9, 60)
    assert record["riskRatio"] == 5.619 and record["credible"]


def test_one_table_in_several_tasks_is_several_strata():
    # three tasks with the same table: three strata (a stratum per task), not one
    record = st.within_task(Counter({(3, 1, 1, 3): 3}))
    assert record["strata"] == 3 and record["method"].startswith("Cochran–Mantel–Haenszel")
    assert record["riskRatio"] == 3.0
    alone = st.within_task(Counter({(3, 1, 1, 3): 1}))
    assert alone["strata"] == 1 and alone["method"].startswith("Fisher exact test")


def test_a_zero_that_makes_the_ratio_unbounded_is_haldane_corrected():
    # no other session of any task succeeded: the ratio's denominator is 0, so 0.5 goes into every cell
    tasks = Counter({(4, 0, 0, 2): 2, (2, 1, 0, 3): 1})
    record = st.within_task(tasks)
    assert record["zeroCorrected"] and record["riskRatio"] > 1 and record["low"] > 0
    cube = _cube(tasks.items())
    assert record["riskRatio"] == round(float(StratifiedTable((cube + 0.5).transpose(1, 2, 0)).riskratio_pooled), 4)


def _tasks(rng: random.Random, count: int, sessions: int = 50):
    """Tasks of `sessions` sessions from 4 models; outcome and skeleton drawn per session."""
    skeletons = [("a", "b", "c"), ("b", "a", "c"), ("a", "c"), ("d", "a", "b", "c")]
    models = ["gpt-4", "claude-2", "llama-2-70b", "mistral-7b"]
    for _ in range(count):
        found: Counter = Counter()
        for _ in range(sessions):
            resolved = rng.random() < 0.6
            found[(resolved, False, rng.random() < 0.2, rng.choice(skeletons), rng.choice(models))] += 1
        yield found


def test_the_second_reading_keeps_constant_memory_however_many_tasks():
    """What the within-task reading keeps does not grow with tasks: 2,000 more tasks of 50 sessions
    (thousands of distinct tables) leave its memory where 2,000 tasks had brought it."""
    rng = random.Random(31)
    tables = within.TaskTables(MiningParams(min_tool_calls=1), {"refund": [("a", "b", "c"), ("a", "c")]})
    for sessions in _tasks(rng, 2000):
        tables.add_tasks("refund", sessions)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for sessions in _tasks(rng, 2000):
            tables.add_tasks("refund", sessions)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, grown
    assert all(isinstance(value, st.WithinTaskSums) for sets in tables.tables.values() for value in sets.values())
    gate = tables.gate("refund", ("a", "b", "c"), tests=2, alpha=0.05)
    assert gate["tasks"] == 4000 and gate["strata"] == 4000
