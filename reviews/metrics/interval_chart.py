"""A server-drawn SVG interval chart (a forest plot): one row per item, the rate as a dot and its
Wilson 95 % interval as a whisker on a 0–100 % axis. Geometry here, markup in
templates/reviews/ops/_interval_chart.html (auto-escaped, no inline styles: CSP)."""

from __future__ import annotations

from dataclasses import dataclass

from .rates import Rate

WIDTH = 720
LABEL_WIDTH = 230
PAD_RIGHT = 24
PAD_TOP = 30
ROW = 22
PAD_BOTTOM = 26


@dataclass(frozen=True)
class IntervalRow:
    label: str
    y: float
    x: float | None  # the rate; None without observations
    x_low: float | None
    x_high: float | None
    title: str


@dataclass(frozen=True)
class IntervalChart:
    title: str
    rows: list[IntervalRow]
    grid: list[tuple[float, str]]  # x, label
    width: int
    height: int
    plot_top: int
    plot_bottom: int
    plot_left: int
    plot_right: int


def interval_chart(*, title: str, items: list[tuple[str, Rate]], width: int = WIDTH) -> IntervalChart:
    """`items` are (label, rate); a rate without observations gets a row with no dot."""
    left, right = LABEL_WIDTH, width - PAD_RIGHT
    top = PAD_TOP
    bottom = top + ROW * max(len(items), 1)

    def x_of(value: float) -> float:
        return round(left + (right - left) * min(max(value, 0.0), 1.0), 1)

    rows = []
    for i, (label, rate) in enumerate(items):
        ci = rate.interval
        y = round(top + ROW * (i + 0.5), 1)
        title_text = (
            f"{label}: {rate.percent} ({rate.hits} of {rate.total}, {rate.interval_percent})"
            if ci
            else f"{label}: nothing to count yet"
        )
        rows.append(
            IntervalRow(
                label=label,
                y=y,
                x=x_of(rate.value) if rate.value is not None else None,
                x_low=x_of(ci[0]) if ci else None,
                x_high=x_of(ci[1]) if ci else None,
                title=title_text,
            )
        )
    grid = [(x_of(f), f"{f * 100:.0f} %") for f in (0, 0.25, 0.5, 0.75, 1.0)]
    return IntervalChart(
        title=title,
        width=width,
        height=bottom + PAD_BOTTOM,
        plot_left=left,
        plot_right=right,
        plot_top=top,
        plot_bottom=bottom,
        rows=rows,
        grid=grid,
    )
