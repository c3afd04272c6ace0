"""A rollout's two arms compared: the sessions reported with the procedure injected in each arm
(`injected[].arm`, recorded by the agent from the served JSON), their resolution rates with 95 %
Wilson intervals, and Fisher's exact test between the arms (scipy).

A session counts for an arm when its `injected` list names the procedure with that arm and that
arm's version, and it was received from the rollout's start until its end (now while it runs).
Sessions without a label (resolved unknown) are counted but not in the rates."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone
from scipy.stats import fisher_exact

from library.models import AgentSession, ProcedureVersion, Rollout

from .rates import Rate


@dataclass(frozen=True)
class ArmFigures:
    arm: str
    label: str
    version: ProcedureVersion | None
    sessions: int
    rate: Rate  # resolved of the labelled sessions
    low: float | None  # 95 % Wilson interval of the rate
    high: float | None

    @property
    def interval(self) -> str:
        if self.low is None:
            return "—"
        return f"{100 * self.low:.1f}–{100 * self.high:.1f} %"


@dataclass(frozen=True)
class ArmsComparison:
    rollout: Rollout
    arms: list[ArmFigures]
    since: datetime
    until: datetime
    p_value: float | None  # Fisher's exact test, two-sided; None without labelled sessions in both arms


def _wilson(rate: Rate) -> tuple[float | None, float | None]:
    return rate.interval or (None, None)


def _counts(
    rollout: Rollout, arm: str, version: ProcedureVersion | None, since: datetime, until: datetime
) -> tuple[int, int, int]:
    """(sessions, labelled, resolved) of one arm."""
    if version is None:
        return 0, 0, 0
    entry = {"id": rollout.procedure.key, "version": version.number, "arm": arm}
    sessions = AgentSession.objects.filter(
        agent_id=rollout.procedure.agent_id, received_at__gte=since, received_at__lte=until
    )
    if connection.vendor == "postgresql":  # jsonb containment, on the agent's sessions of the window
        row = sessions.filter(injected__contains=[entry]).aggregate(
            n=Count("pk"),
            labelled=Count("pk", filter=Q(resolved__isnull=False)),
            resolved=Count("pk", filter=Q(resolved=True)),
        )
        return row["n"], row["labelled"], row["resolved"]
    n = labelled = resolved = 0  # SQLite (the demo) has no JSON containment: read the window
    for injected, outcome in sessions.values_list("injected", "resolved").iterator():
        if isinstance(injected, list) and any(
            isinstance(i, dict) and all(i.get(k) == v for k, v in entry.items()) for i in injected
        ):
            n += 1
            labelled += outcome is not None
            resolved += outcome is True
    return n, labelled, resolved


def rollout_arms(rollout: Rollout) -> ArmsComparison:
    since, until = rollout.started_at, rollout.ended_at or timezone.now()
    arms = []
    for arm, label, version in (
        (Rollout.Arm.ROLLOUT, f"rollout ({rollout.share} %)", rollout.version),
        (Rollout.Arm.CONTROL, f"control ({100 - rollout.share} %)", rollout.control_version),
    ):
        n, labelled, resolved = _counts(rollout, arm, version, since, until)
        rate = Rate(resolved, labelled)
        low, high = _wilson(rate)
        arms.append(ArmFigures(str(arm), label, version, n, rate, low, high))
    a, b = arms[0].rate, arms[1].rate
    p_value = None
    if a.total and b.total:
        p_value = float(fisher_exact([[a.hits, a.total - a.hits], [b.hits, b.total - b.hits]]).pvalue)
    return ArmsComparison(rollout, arms, since, until, p_value)


def interval_drawing(comparison: ArmsComparison, *, width: int = 560) -> list[dict]:
    """Coordinates of a small SVG: per arm a line over its interval and a dot at its rate, on a
    0–100 % scale (server-drawn: the Content-Security-Policy allows no inline style)."""
    left, right = 120, width - 20
    rows = []
    for index, figures in enumerate(comparison.arms):
        y = 24 + 30 * index
        row = {
            "y": y,
            "label": figures.label,
            "arm": figures.arm,
            "text": f"{figures.rate.percent} ({figures.interval})",
        }
        if figures.rate.total:
            scale = lambda v: round(left + (right - left) * v, 1)  # noqa: E731
            row.update(x1=scale(figures.low), x2=scale(figures.high), cx=scale(figures.rate.value))
        rows.append(row)
    return rows
