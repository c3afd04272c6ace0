"""What the metrics pages and their JSON show of quality (reviews.metrics.quality and .decisions):
the figures of an agent or a version over a window, their charts, and one `to_dict` for the JSON."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from library.models import Agent, ProcedureVersion

from .. import charts
from .decisions import ESCAPE_DAYS, EscapeFigures, ReviewerFigures, escape_figures, reviewer_figures
from .interval_chart import IntervalChart, interval_chart
from .quality import QualityFigures, agent_quality, version_quality, version_quality_days

SERIES = (  # label, figure, chart class
    ("adherence", "adherence", "s1"),
    ("tool-call accuracy", "accuracy", "s4"),
    ("conflict rate", "conflict", "s3"),
    ("stale use", "stale", "s2"),
)


def _days(start: date, end: date) -> list[date]:
    return [date.fromordinal(o) for o in range(start.toordinal(), end.toordinal() + 1)]


def _quality_chart(title: str, by_day: dict[date, QualityFigures], start: date, end: date, width: int) -> charts.Chart:
    days = _days(start, end)
    return charts.time_chart(
        title=title,
        days=days,
        percent=True,
        width=width,
        series=[
            charts.SeriesSpec(
                label,
                [getattr(by_day[d], name).value if d in by_day else None for d in days],
                css,
                counts=[getattr(by_day[d], name).total if d in by_day else None for d in days],
            )
            for label, name, css in SERIES
        ],
    )


@dataclass
class VersionRow:
    version: ProcedureVersion
    figures: QualityFigures

    def to_dict(self) -> dict[str, Any]:
        v = self.version
        return {
            "pk": v.pk,
            "id": v.procedure.key,
            "version": v.number,
            "status": v.status,
            "reviewBy": v.review_by.isoformat() if v.review_by else None,
            **self.figures.to_dict(),
        }


@dataclass
class AgentQualityReport:
    agent: Agent
    start: date
    end: date
    total: QualityFigures
    versions: list[VersionRow]
    reviewers: list[ReviewerFigures]
    escapes: EscapeFigures
    chart: charts.Chart | None = None
    adherence_chart: IntervalChart | None = None
    reviewer_chart: IntervalChart | None = None
    escape_days: int = ESCAPE_DAYS

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent.name,
            "from": self.start.isoformat(),
            "to": self.end.isoformat(),
            "agentFigures": {**self.total.to_dict(), "sessionsGivenTwoOrMore": self.total.multi},
            "versions": [row.to_dict() for row in self.versions],
            "reviewers": [r.to_dict() for r in self.reviewers],
            "badWriteEscape": self.escapes.to_dict(),
        }


def agent_quality_report(
    agent: Agent, versions: list[ProcedureVersion], start: date, end: date, *, with_charts: bool = True
) -> AgentQualityReport:
    """Versions as reviews.metrics.reads.versions_with_metrics gives them (procedure selected)."""
    quality = agent_quality(agent, start, end)
    per_version = version_quality([v.pk for v in versions], start, end)
    report = AgentQualityReport(
        agent=agent,
        start=start,
        end=end,
        total=quality.total,
        versions=[VersionRow(v, per_version[v.pk]) for v in versions],
        reviewers=reviewer_figures(agent, start, end),
        escapes=escape_figures(agent, start, end),
    )
    if with_charts:
        report.chart = _quality_chart(f"{agent.name}: quality of use per day", quality.days, start, end, charts.WIDTH)
        report.adherence_chart = interval_chart(
            title="Adherence per version (95 % Wilson interval)",
            items=[
                (f"{row.version.procedure.key} v{row.version.number}", row.figures.adherence) for row in report.versions
            ],
        )
        report.reviewer_chart = interval_chart(
            title="Approval rate per reviewer (95 % Wilson interval)",
            items=[(r.user, r.approval) for r in report.reviewers],
        )
    return report


@dataclass
class VersionQualityReport:
    version: ProcedureVersion
    start: date
    end: date
    figures: QualityFigures
    days: dict[date, QualityFigures]
    chart: charts.Chart | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **VersionRow(self.version, self.figures).to_dict(),
            "from": self.start.isoformat(),
            "to": self.end.isoformat(),
            "days": [{"day": d.isoformat(), **self.days[d].to_dict()} for d in sorted(self.days)],
        }


def version_quality_report(
    version: ProcedureVersion, start: date, end: date, *, width: int = charts.WIDTH, with_chart: bool = True
) -> VersionQualityReport:
    days = version_quality_days(version.pk, start, end)
    figures = version_quality([version.pk], start, end)[version.pk]
    report = VersionQualityReport(version=version, start=start, end=end, figures=figures, days=days)
    if with_chart:
        report.chart = _quality_chart("Quality of use per day", days, start, end, width)
    return report
