"""The server-drawn charts: geometry stays inside the plot, gaps break lines, markers land on their day."""

from __future__ import annotations

from datetime import date, timedelta

from reviews.charts import SeriesSpec, time_chart

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
