"""The metrics pages of the operations area: per agent (every version's figures and the agent's
daily chart) and per version (four charts). The figures come from the rollup (reviews.metrics)."""

from __future__ import annotations

from datetime import date

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .. import charts
from ..access import get_agent_for_user, get_version_for_user, signed_in
from ..metrics import reads
from ..metrics.quality_report import agent_quality_report, version_quality_report
from ..metrics.rates import resolution_drop_test
from ..metrics.rollup import WINDOWS
from ..models import MetricsState

METRIC_WINDOWS = WINDOWS
SMALL_CHART = 560  # the version page shows its four charts two by two


def _window_days(request: HttpRequest) -> int:
    try:
        days = int(request.GET.get("days", 30))
    except ValueError:
        days = 30
    return days if days in METRIC_WINDOWS else 30


def _all_days(start: date, end: date) -> list[date]:
    return [date.fromordinal(o) for o in range(start.toordinal(), end.toordinal() + 1)]


def _markers(changes: list[reads.ModelChange]) -> list[tuple[date, str, str]]:
    return [
        (c.day, c.after or "(none)", f"{c.day:%Y-%m-%d}: model {c.before or '(none)'} → {c.after or '(none)'}")
        for c in changes
    ]


@require_GET
@signed_in
def ops_metrics(request: HttpRequest, agent: str) -> HttpResponse:
    agent_obj = get_agent_for_user(request, agent, for_="operate")
    days = _window_days(request)
    start, end = reads.window(days)
    versions = reads.versions_with_metrics(agent_obj, start, end)
    figures = reads.version_figures(versions, start, end)
    # "without it" of an older version counts the sessions that received a newer one: say so on its row
    newest = {}
    for f in figures:
        newest[f.version.procedure_id] = max(newest.get(f.version.procedure_id, 0), f.version.number)
    for f in figures:
        f.later_in_window = f.version.number < newest[f.version.procedure_id]
    daily = reads.agent_daily(agent_obj, start, end)
    by_day = {row["day"]: row for row in daily}
    day_list = _all_days(start, end)
    changes = reads.model_changes({row["day"]: row["model"] for row in daily})
    chart = charts.time_chart(
        title=f"{agent_obj.name}: resolution rate and sessions without a procedure, per day",
        days=day_list,
        percent=True,
        series=[
            charts.SeriesSpec(
                "resolution rate",
                [by_day[d]["resolution"].value if d in by_day else None for d in day_list],
                "s1",
                counts=[by_day[d]["resolution"].total if d in by_day else None for d in day_list],
            ),
            charts.SeriesSpec(
                "no procedure received (intents that had one)",
                [by_day[d]["bare"].value if d in by_day else None for d in day_list],
                "s3",
                counts=[by_day[d]["bare"].total if d in by_day else None for d in day_list],
            ),
        ],
        markers=_markers(changes),
    )
    state = MetricsState.objects.filter(agent=agent_obj).first()
    return render(
        request,
        "reviews/ops/metrics.html",
        {
            "agent": agent_obj,
            "figures": figures,
            "chart": chart,
            "changes": changes,
            "days": days,
            "windows": METRIC_WINDOWS,
            "start": start,
            "end": end,
            "state": state,
            "sessions": sum(row["sessions"] for row in daily),
            "warning": {
                "days": settings.PROCMEM_METRIC_WARNING_DAYS,
                "alpha": settings.PROCMEM_METRIC_WARNING_ALPHA,
                "min_sessions": settings.PROCMEM_METRIC_WARNING_MIN_SESSIONS,
            },
            "quality": agent_quality_report(agent_obj, versions, start, end),
            "tab": "metrics",
        },
    )


@require_GET
@signed_in
def ops_version_metrics(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_version_for_user(request, pk, for_="operate")
    agent = version.procedure.agent
    days = _window_days(request)
    start, end = reads.window(days)
    (fig,) = reads.version_figures([version], start, end, daily=True)
    by_day = {d.day: d for d in fig.days}
    day_list = _all_days(start, end)
    changes = reads.model_changes({d.day: d.model for d in fig.days if d.model or d.selected})
    markers = _markers(changes)

    def series(getter):
        return [getter(by_day[d]) if d in by_day else None for d in day_list]

    eval_value = fig.eval_rate.value
    resolution = charts.time_chart(
        title="Resolution rate: sessions that received it vs the same intent without it",
        days=day_list,
        percent=True,
        series=[
            charts.SeriesSpec(
                "with this version",
                series(lambda d: d.with_rate.value),
                "s1",
                counts=series(lambda d: d.with_rate.total),
            ),
            charts.SeriesSpec(
                "same intent, without it",
                series(lambda d: d.without_rate.value),
                "s2",
                counts=series(lambda d: d.without_rate.total),
            ),
        ],
        markers=markers,
        reference=(eval_value, f"eval {fig.eval_rate.percent}") if eval_value is not None else None,
        width=SMALL_CHART,
    )
    selected = charts.time_chart(
        title="Times selected (sessions that received it), per day",
        days=day_list,
        series=[charts.SeriesSpec("sessions", series(lambda d: d.selected or None), "s1", kind="bar")],
        markers=markers,
        width=SMALL_CHART,
    )
    bare = charts.time_chart(
        title="Sessions of its intent that received no procedure while it was ACTIVE",
        days=day_list,
        percent=True,
        series=[
            charts.SeriesSpec(
                "no procedure", series(lambda d: d.bare_rate.value), "s3", counts=series(lambda d: d.bare_rate.total)
            )
        ],
        markers=markers,
        width=SMALL_CHART,
    )
    chars = charts.time_chart(
        title="Instruction length p95 (characters), per day",
        days=day_list,
        series=[charts.SeriesSpec("p95", series(lambda d: d.p95_chars), "s4")],
        markers=markers,
        width=SMALL_CHART,
    )
    return render(
        request,
        "reviews/ops/version_metrics.html",
        {
            "agent": agent,
            "version": version,
            "fig": fig,
            "drop": resolution_drop_test(observed=fig.with_rate, expected=fig.eval_rate),
            "eval_absence": reads.eval_rate_absence(version) if fig.eval_rate.total == 0 else "",
            "charts": [resolution, selected, bare, chars],
            "quality": version_quality_report(version, start, end),
            "changes": changes,
            "days": days,
            "windows": METRIC_WINDOWS,
            "start": start,
            "end": end,
            "tab": "metrics",
        },
    )
