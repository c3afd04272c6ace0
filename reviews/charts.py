"""Server-drawn SVG time charts for the metrics pages: geometry here, markup in
templates/reviews/ops/_chart.html (auto-escaped). No chart library and no CDN: a page is a few
polylines, bars and labelled vertical markers (the agent's model changes)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date

WIDTH = 720
HEIGHT = 200
PAD_LEFT = 48
PAD_RIGHT = 16
PAD_TOP = 26
PAD_BOTTOM = 28


# A day's rate from fewer sessions than this is drawn hollow and not joined to its neighbours: one
# session of two is "50 %" like a day of two hundred, and a reader should not take it as one.
MIN_POINT_COUNT = 5


@dataclass(frozen=True)
class SeriesSpec:
    label: str
    values: list[float | None]  # one per day, None where there is nothing to plot
    css: str  # a class of static/css/procmem.css: s1, s2, s3 …
    kind: str = "line"  # "line" or "bar"
    counts: list[int | None] | None = None  # per day, the sessions a rate is of (shown on hover)
    min_count: int = MIN_POINT_COUNT  # with counts: fewer than this is a thin point


@dataclass
class DrawnSeries:
    label: str
    css: str
    kind: str
    segments: list[str] = field(default_factory=list)  # polyline "x,y x,y …", broken where a day has no value
    dots: list[tuple[float, float, str]] = field(default_factory=list)  # lone points and hover titles
    thin: list[tuple[float, float, str]] = field(default_factory=list)  # points of too few sessions (hollow)
    bars: list[tuple[float, float, float, float, str]] = field(default_factory=list)  # x, y, w, h, title


@dataclass
class Marker:
    x: float
    label: str
    title: str


@dataclass
class Chart:
    title: str
    width: int
    height: int
    plot_left: int
    plot_right: int
    plot_top: int
    plot_bottom: int
    series: list[DrawnSeries]
    grid: list[tuple[float, str]]  # y, label
    x_labels: list[tuple[float, str]]
    markers: list[Marker]
    reference: tuple[float, str] | None
    empty: bool
    min_count: int | None = None  # set when some point was drawn thin (the legend says so)


def _fmt(value: float, percent: bool) -> str:
    if percent:
        return f"{value * 100:.0f} %"
    if value >= 1000:
        return f"{value / 1000:.1f}k".replace(".0k", "k")
    return f"{value:.0f}" if float(value).is_integer() else f"{value:g}"


def ticks(value: float, percent: bool) -> list[float]:
    """The y axis' tick values: 0 up to the first tick at or above `value`, evenly spaced by a
    "nice" step (1, 2 or 5 times a power of ten), at most five intervals. A rate's axis is 0-100 %
    by quarters. Every tick is a value its label writes exactly (no 1.25 shown as "1")."""
    if percent:
        return [0.0, 0.25, 0.5, 0.75, 1.0]
    if value <= 0:
        return [0.0, 1.0]
    magnitude = 10 ** math.floor(math.log10(value / 5)) if value >= 5 else 1
    for factor in (1, 2, 5, 10):
        step = factor * magnitude
        if value / step <= 5:
            break
    count = math.ceil(value / step - 1e-9)
    return [step * i for i in range(count + 1)]


def time_chart(
    *,
    title: str,
    days: list[date],
    series: list[SeriesSpec],
    percent: bool = False,
    markers: list[tuple[date, str, str]] = (),
    reference: tuple[float, str] | None = None,
    width: int = WIDTH,
) -> Chart:
    """One chart over `days` (ascending). `markers` are (day, short label, hover text), drawn as
    vertical lines at the start of that day; `reference` is a horizontal line (value, label)."""
    left, right = PAD_LEFT, width - PAD_RIGHT
    top, bottom = PAD_TOP, HEIGHT - PAD_BOTTOM
    values = [v for s in series for v in s.values if v is not None]
    y_ticks = ticks(max(values + ([reference[0]] if reference else []), default=0), percent)
    y_max = y_ticks[-1]
    n = max(len(days), 1)
    step = (right - left) / n

    def x_of(index: int) -> float:
        return round(left + step * (index + 0.5), 1)

    def y_of(value: float) -> float:
        return round(bottom - (bottom - top) * min(max(value / y_max, 0.0), 1.0), 1)

    drawn: list[DrawnSeries] = []
    thin_drawn = False
    for spec in series:
        out = DrawnSeries(label=spec.label, css=spec.css, kind=spec.kind)
        if spec.kind == "bar":
            bar = max(step * 0.7, 1.0)
            for i, value in enumerate(spec.values):
                if value:
                    y = y_of(value)
                    out.bars.append(
                        (
                            round(x_of(i) - bar / 2, 1),
                            y,
                            round(bar, 1),
                            round(bottom - y, 1),
                            f"{days[i]:%Y-%m-%d}: {_fmt(value, percent)}",
                        )
                    )
        else:
            show_every_dot = len(spec.values) <= 62

            def hover(j: int) -> str:
                count = spec.counts[j] if spec.counts else None
                of = "" if count is None else f" of {count} session{'s' if count != 1 else ''}"
                return f"{days[j]:%Y-%m-%d}: {_fmt(spec.values[j], percent)}{of}"

            def is_thin(j: int) -> bool:
                return bool(spec.counts) and (spec.counts[j] or 0) < spec.min_count

            run: list[int] = []
            for i, value in enumerate(spec.values + [None]):
                if value is not None and not is_thin(i):
                    run.append(i)
                    continue
                if value is not None:  # too few sessions: a hollow point of its own, not joined
                    out.thin.append((x_of(i), y_of(value), hover(i) + " (too few to read as a rate)"))
                    thin_drawn = True
                if len(run) > 1:
                    out.segments.append(" ".join(f"{x_of(j)},{y_of(spec.values[j])}" for j in run))
                if len(run) == 1 or show_every_dot:
                    out.dots.extend((x_of(j), y_of(spec.values[j]), hover(j)) for j in run)
                run = []
        drawn.append(out)

    grid = [(y_of(tick), _fmt(tick, percent)) for tick in y_ticks]
    label_every = max(1, len(days) // (6 if width >= WIDTH else 4))
    x_labels = [(x_of(i), f"{d:%b %d}") for i, d in enumerate(days) if i % label_every == 0]
    index_of = {d: i for i, d in enumerate(days)}
    drawn_markers = [
        Marker(x=round(left + step * index_of[d], 1), label=label, title=hover)
        for d, label, hover in markers
        if d in index_of
    ]
    ref = (y_of(reference[0]), reference[1]) if reference else None
    return Chart(
        title=title,
        width=width,
        height=HEIGHT,
        plot_left=left,
        plot_right=right,
        plot_top=top,
        plot_bottom=bottom,
        series=drawn,
        grid=grid,
        x_labels=x_labels,
        markers=drawn_markers,
        reference=ref,
        empty=not values,
        min_count=min(s.min_count for s in series if s.counts) if thin_drawn else None,
    )
