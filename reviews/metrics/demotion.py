"""The demotion check: proposes retiring ACTIVE versions that agents rarely receive, or whose
resolution rate is significantly below their eval result, with the figures. It never retires
anything; an admin confirms or dismisses each proposal (reviews.services.demotion_confirm /
demotion_dismiss).

Over the last PROCMEM_DEMOTION_WINDOW_DAYS days (from the metrics rollup):
- rarely selected: ACTIVE for the whole window and served to fewer than
  PROCMEM_DEMOTION_MIN_SELECTED sessions;
- below the eval: at least PROCMEM_DEMOTION_MIN_SESSIONS labelled sessions with it, and Fisher's
  exact test (scipy.stats.fisher_exact, one-sided "less": the odds of resolving with the version
  in production are lower than in its approval eval's candidate arm) gives p < PROCMEM_DEMOTION_ALPHA.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time

from django.utils import timezone
from scipy import stats

from library import formatting
from library.models import Agent, ProcedureVersion, Status

from .rates import setting
from .reads import VersionFigures, version_figures, window


@dataclass(frozen=True)
class DemotionFinding:
    version: ProcedureVersion
    kind: str
    figures: dict
    message: str


def below_eval_test(*, resolved: int, labelled: int, eval_passed: int, eval_total: int) -> float | None:
    """One-sided Fisher exact p-value that production resolution is below the eval's; None when
    either sample is empty."""
    if labelled == 0 or eval_total == 0:
        return None
    table = [[resolved, labelled - resolved], [eval_passed, eval_total - eval_passed]]
    return float(stats.fisher_exact(table, alternative="less").pvalue)


def _active_since(version: ProcedureVersion) -> datetime | None:
    return version.status_changed_at or version.approved_at


def demotion_findings(*, agent: Agent, today: date | None = None) -> list[DemotionFinding]:
    days = setting("PROCMEM_DEMOTION_WINDOW_DAYS", 30)
    min_selected = setting("PROCMEM_DEMOTION_MIN_SELECTED", 5)
    min_sessions = setting("PROCMEM_DEMOTION_MIN_SESSIONS", 30)
    alpha = setting("PROCMEM_DEMOTION_ALPHA", 0.01)
    start, end = window(days, today=today)
    window_start = timezone.make_aware(datetime.combine(start, time.min))
    versions = list(
        ProcedureVersion.objects.filter(procedure__agent=agent, status=Status.ACTIVE).select_related(
            "procedure__intent", "procedure__agent"
        )
    )
    findings: list[DemotionFinding] = []
    for fig in version_figures(versions, start, end):
        findings.extend(
            _findings_for(
                fig,
                days=days,
                start=start,
                end=end,
                window_start=window_start,
                min_selected=min_selected,
                min_sessions=min_sessions,
                alpha=alpha,
            )
        )
    return findings


def _findings_for(
    fig: VersionFigures, *, days, start, end, window_start, min_selected, min_sessions, alpha
) -> list[DemotionFinding]:
    version = fig.version
    label = f"{version.procedure.key} v{version.number}"
    base = {
        "from": start.isoformat(),
        "to": end.isoformat(),
        "days": days,
        "selected": fig.selected,
        "resolved": fig.with_rate.hits,
        "labelled": fig.with_rate.total,
        "evalPassed": fig.eval_rate.hits,
        "evalTotal": fig.eval_rate.total,
    }
    out: list[DemotionFinding] = []
    since = _active_since(version)
    if since is not None and since <= window_start and fig.selected < min_selected:
        out.append(
            DemotionFinding(
                version,
                "rarely_selected",
                {**base, "minSelected": min_selected},
                f"{label} was served to {formatting.count(fig.selected, 'sessions')} in the last {days} days (fewer than {min_selected}).",
            )
        )
    if fig.with_rate.total >= min_sessions:
        p = below_eval_test(
            resolved=fig.with_rate.hits,
            labelled=fig.with_rate.total,
            eval_passed=fig.eval_rate.hits,
            eval_total=fig.eval_rate.total,
        )
        if p is not None and p < alpha:
            out.append(
                DemotionFinding(
                    version,
                    "below_eval",
                    {**base, "p": p, "alpha": alpha, "test": "fisher_exact one-sided less"},
                    f"{label} resolved {fig.with_rate.hits} of {fig.with_rate.total} sessions in the last {days} days vs "
                    f"{fig.eval_rate.hits} of {fig.eval_rate.total} in its eval run (Fisher exact, {formatting.p_value(p, 'one-sided p')} < {alpha}).",
                )
            )
    return out
