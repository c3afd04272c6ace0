"""The server-drawn charts: geometry stays inside the plot, gaps break lines, markers land on their day."""

from __future__ import annotations

from datetime import date, timedelta

from hypothesis import given
from hypothesis import strategies as st

from reviews.charts import SeriesSpec, ticks, time_chart

DAYS = [date(2026, 11, 1) + timedelta(days=i) for i in range(10)]


def test_bar_and_line_charts_keep_the_requested_width_and_stay_inside_the_plot():
    chart = time_chart(
        title="t",
        days=DAYS,
        width=560,
        series=[
            SeriesSpec("bars", [i * 10 for i in range(10)], "s1", kind="bar"),
            SeriesSpec("line", [0.5, 0.6, None, 0.7, 0.8, None, None, 0.9, None, 1.0], "s2"),
        ],
        markers=[(DAYS[3], "m-2", "model m-1 → m-2")],
    )
    assert chart.width == 560 and chart.plot_right == 560 - 16
    bars = chart.series[0].bars
    assert len(bars) == 9  # a zero draws no bar
    for x, y, w, h, _title in bars:
        assert (
            chart.plot_left <= x
            and x + w <= chart.plot_right
            and chart.plot_top <= y
            and y + h <= chart.plot_bottom + 0.1
        )
    line = chart.series[1]
    assert len(line.segments) == 2  # days 0-1 and 3-4; days 7 and 9 are lone points drawn as dots
    assert {title.split(":")[0] for _x, _y, title in line.dots} >= {"2026-11-08", "2026-11-10"}
    (marker,) = chart.markers
    assert marker.label == "m-2" and chart.plot_left < marker.x < chart.plot_right


def test_percent_chart_scale_and_empty_chart():
    chart = time_chart(
        title="t", days=DAYS, series=[SeriesSpec("r", [None] * 10, "s1")], percent=True, reference=(0.9, "eval 90.0 %")
    )
    assert chart.empty and chart.grid[-1][1] == "100 %"
    assert chart.reference[0] == round(chart.plot_bottom - (chart.plot_bottom - chart.plot_top) * 0.9, 1)


@given(top=st.one_of(st.integers(0, 5000), st.floats(0.01, 100_000, allow_nan=False)))
def test_the_y_axis_ticks_increase_evenly_and_each_label_is_its_value(top):
    """Issue 39: "Times selected" was labelled 0, 1, 2, 4, 5 at equal spacing (ticks at 1.25, 2.5, 3.75
    written rounded). Ticks are strictly increasing, evenly spaced in value and on the page, cover
    the largest value, and each label writes its tick exactly."""
    chart = time_chart(title="t", days=DAYS[:2], series=[SeriesSpec("bars", [top, 0], "s1", kind="bar")])
    values = ticks(top, percent=False)
    assert values[0] == 0 and values[-1] >= top and len(values) <= 6
    steps = {round(b - a, 9) for a, b in zip(values, values[1:])}
    assert len(steps) == 1 and steps.pop() > 0
    ys = [y for y, _label in chart.grid]
    assert all(a > b for a, b in zip(ys, ys[1:]))  # upwards on the page
    assert max(abs((a - b) - (ys[0] - ys[1])) for a, b in zip(ys, ys[1:])) <= 0.11  # rounding to 0.1 px
    for value, (_y, label) in zip(values, chart.grid):
        number = float(label[:-1]) * 1000 if label.endswith("k") else float(label)
        assert number == value, (values, [label for _y, label in chart.grid])


def test_a_count_of_four_is_drawn_on_the_four_line():
    chart = time_chart(title="t", days=DAYS[:3], series=[SeriesSpec("s", [4, 5, 1], "s1", kind="bar")])
    assert [label for _y, label in chart.grid] == ["0", "1", "2", "3", "4", "5"]
    four_line = dict((label, y) for y, label in chart.grid)["4"]
    assert chart.series[0].bars[0][1] == four_line


def test_a_day_of_too_few_sessions_is_a_hollow_point_with_its_count():
    """A day with 1-3 sessions is not drawn as a rate like any other day: hollow, not joined, its count on hover."""
    chart = time_chart(
        title="t",
        days=DAYS[:4],
        percent=True,
        series=[SeriesSpec("r", [0.5, 0.6, 1.0, 0.7], "s1", counts=[40, 50, 2, 60])],
    )
    line = chart.series[0]
    assert line.segments == [" ".join(f"{x},{y}" for x, y, _t in line.dots[:2])]
    ((_x, _y, title),) = line.thin
    assert title == "2026-11-03: 100 % of 2 sessions (too few to read as a rate)"
    assert all(" of " in t for _x, _y, t in line.dots) and chart.min_count == 5
