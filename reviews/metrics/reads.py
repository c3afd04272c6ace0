"""Reading the metrics rollup for the pages: figures per version over a window of days (with the
per-day series for the version page), the agent's daily figures and the model changes.

What is measured (docs, "Operating"):
- selected: sessions whose `injected` list names the version (id and version number);
- resolution rate with it: of those sessions with an outcome, the share resolved and not escalated
  (stricter than mining, which also counts a resolved escalation as a success; see is_resolved);
- resolution rate without it: sessions of the version's intent, with an outcome, that did not
  receive it;
- no-procedure rate: sessions of the intent that received no procedure at all, over the days on
  which the version was ACTIVE (so the intent had one to give);
- instruction length p95 of the sessions that received it;
- eval rate: the pass rate of the approving eval run's candidate arm on the version's intent.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from django.db.models import Q, Sum
from django.utils import timezone

from library import formatting
from library.models import Agent, AuditEvent, EvalCaseResult, ProcedureVersion, Status

from ..models import IntentDayRollup, MetricAlert, MetricsState, VersionDayRollup
from .histogram import CharsHistogram, merge_counts
from .rates import Rate
from .rollup import WINDOWS

ACTIVATING = {AuditEvent.Action.APPROVE, AuditEvent.Action.ROLLBACK}
DEACTIVATING = {AuditEvent.Action.RETIRE, AuditEvent.Action.AUTO_RETIRE}


def eval_resolution_rates(versions: Iterable[ProcedureVersion]) -> dict[int, Rate]:
    """Per version: the pass rate of its approving eval run's candidate arm on the version's own
    intent. Errored cases (passed is None) do not count. Rate(0, 0) when the run recorded no such
    cases (e.g. the demo data's seeded approvals) or the version was never approved."""
    versions = [v for v in versions]
    runs = {v.approval_eval_run_id: v for v in versions if v.approval_eval_run_id}
    rates = {v.pk: Rate(0, 0) for v in versions}
    if not runs:
        return rates
    rows = EvalCaseResult.objects.filter(
        run_id__in=runs, arm=EvalCaseResult.Arm.CANDIDATE, passed__isnull=False
    ).values_list("run_id", "case__intent_id", "passed")
    for run_id, intent_id, passed in rows:
        version = runs[run_id]
        if intent_id == version.procedure.intent_id:
            rates[version.pk] += Rate(int(passed), 1)
    return rates


def eval_rate_absence(version: ProcedureVersion) -> str:
    """Why the version has no eval result on its intent, in words for the metrics page: a figure
    of "0 of 0" reads as a measured failure. Only meaningful when eval_resolution_rates gave
    Rate(0, 0) for the version."""
    run_id = version.approval_eval_run_id
    if run_id is None:
        return "none: it was never approved through an eval run"
    # one query for the intents the run's candidate arm has cases of (a 0-of-0 figure: few or none)
    intents = set(
        EvalCaseResult.objects.filter(run_id=run_id, arm=EvalCaseResult.Arm.CANDIDATE)
        .values_list("case__intent_id", flat=True)
        .distinct()
    )
    if not intents:
        # the demo's and the lifecycle tests' seeded approvals: a passing run recorded without a replay
        note = (version.approval_eval_run.verdict_detail or {}).get("note", "")
        return f"none: eval run #{run_id} replayed no cases" + (f" ({note.rstrip('.')})" if note else "")
    intent = version.procedure.intent.name
    if version.procedure.intent_id not in intents:
        return f"none: eval run #{run_id} had no case of intent {intent}"
    return f"none: every case of intent {intent} errored in eval run #{run_id}"


# ---------------------------------------------------------------------------------------------- reading the rollup


def active_days(versions: Iterable[ProcedureVersion], start: date, end: date) -> dict[int, set[date]]:
    """The days in [start, end] on which each version was ACTIVE at some moment, from the audit log
    (approve and rollback make a version ACTIVE; retire and auto-retire end it)."""
    versions = list(versions)
    events = (
        AuditEvent.objects.filter(version__in=versions, action__in=ACTIVATING | DEACTIVATING)
        .order_by("at", "id")
        .values_list("version_id", "action", "at")
    )
    tz = timezone.get_current_timezone()
    spans: dict[int, list[list[date | None]]] = defaultdict(list)
    for version_id, action, at in events:
        day = at.astimezone(tz).date()
        if action in ACTIVATING:
            spans[version_id].append([day, None])
        elif spans[version_id] and spans[version_id][-1][1] is None:
            spans[version_id][-1][1] = day
    result: dict[int, set[date]] = {}
    for version in versions:
        days: set[date] = set()
        for begin, finish in spans.get(version.pk, []):
            first = max(begin, start)
            last = min(finish or end, end)
            days.update(first + timedelta(days=i) for i in range((last - first).days + 1))
        result[version.pk] = days
    return result


@dataclass
class DayFigures:
    day: date
    selected: int = 0
    with_rate: Rate = field(default_factory=lambda: Rate(0, 0))
    without_rate: Rate = field(default_factory=lambda: Rate(0, 0))
    bare_rate: Rate = field(default_factory=lambda: Rate(0, 0))
    p95_chars: float | None = None
    model: str = ""
    active: bool = False


@dataclass
class VersionFigures:
    version: ProcedureVersion
    selected: int
    with_rate: Rate
    without_rate: Rate
    bare_rate: Rate
    p95_chars: float | None
    eval_rate: Rate
    alert: MetricAlert | None = None
    days: list[DayFigures] = field(default_factory=list)
    later_in_window: bool = False  # a newer version of the procedure is in the same window

    @property
    def difference(self) -> float | None:
        if self.with_rate.value is None or self.without_rate.value is None:
            return None
        return self.with_rate.value - self.without_rate.value

    @property
    def difference_points(self) -> str:
        """With minus without, in percentage points ("+12.5 pts"), or "—"."""
        diff = self.difference
        if diff is None:
            return "—"
        return formatting.points(diff * 100, digits=1)  # "±0.0 pts", never "−0.0"


@dataclass(frozen=True)
class ModelChange:
    day: date
    before: str
    after: str


def window(days: int, *, today: date | None = None) -> tuple[date, date]:
    today = today or timezone.localdate()
    return today - timedelta(days=days - 1), today


def dominant_models(agent: Agent, start: date, end: date) -> dict[date, str]:
    """Per day, the model that ran most of the agent's sessions."""
    rows = (
        IntentDayRollup.objects.filter(agent=agent, day__gte=start, day__lte=end)
        .values("day", "model")
        .annotate(n=Sum("sessions"))
        .order_by("day", "-n", "model")
    )
    result: dict[date, str] = {}
    for row in rows:
        result.setdefault(row["day"], row["model"])
    return result


def model_changes(models_by_day: dict[date, str]) -> list[ModelChange]:
    changes: list[ModelChange] = []
    previous: str | None = None
    for day in sorted(models_by_day):
        model = models_by_day[day]
        if previous is not None and model != previous:
            changes.append(ModelChange(day=day, before=previous, after=model))
        previous = model
    return changes


def _precomputed_p95(agent_id: int, start: date, end: date) -> dict[str, float | None] | None:
    """The refresh's p95 per version for this window, if it computed that very window."""
    days = (end - start).days + 1
    if days not in WINDOWS:
        return None
    state = MetricsState.objects.filter(agent_id=agent_id).values_list("window_p95", flat=True).first()
    if not state or state.get("as_of") != end.isoformat():
        return None
    return state.get("windows", {}).get(str(days))


def version_figures(
    versions: list[ProcedureVersion], start: date, end: date, *, daily: bool = False
) -> list[VersionFigures]:
    """Figures per version over [start, end] from the rollup; with `daily`, the per-day series too.
    Versions must belong to one agent; select_related("procedure") is expected. The database sums
    the counts (models collapsed); p95 comes from the refresh's per-window merge when the window is
    one of WINDOWS ending on the day of the last refresh, otherwise from merging day histograms."""
    if not versions:
        return []
    agent_id = versions[0].procedure.agent_id
    version_ids = [v.pk for v in versions]
    intent_ids = {v.procedure.intent_id for v in versions}
    in_window = {"day__gte": start, "day__lte": end}

    # per intent and day: sessions, labelled, resolved, bare sessions
    intent_day: dict[tuple[int, date], tuple[int, int, int, int]] = {
        (row["intent_id"], row["day"]): (row["s"], row["l"], row["r"], row["b"])
        for row in IntentDayRollup.objects.filter(agent_id=agent_id, intent_id__in=intent_ids, **in_window)
        .values("intent_id", "day")
        .annotate(s=Sum("sessions"), l=Sum("labelled"), r=Sum("resolved"), b=Sum("bare_sessions"))
        .order_by()
    }
    intent_total: dict[int, list[int]] = defaultdict(lambda: [0, 0])  # labelled, resolved
    for (intent_id, _day), (_s, labelled, resolved, _b) in intent_day.items():
        intent_total[intent_id][0] += labelled
        intent_total[intent_id][1] += resolved

    # per version (and day, for the series) and the session's intent
    group = ["version_id", "intent_id", "day"] if daily else ["version_id", "intent_id"]
    version_rows = (
        VersionDayRollup.objects.filter(version_id__in=version_ids, **in_window)
        .values(*group)
        .annotate(s=Sum("sessions"), l=Sum("labelled"), r=Sum("resolved"))
        .order_by()
    )
    totals: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])  # sessions, labelled, resolved, own l, own r
    by_day: dict[tuple[int, date], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    intent_of = {v.pk: v.procedure.intent_id for v in versions}
    for row in version_rows:
        own = row["intent_id"] == intent_of[row["version_id"]]
        targets = [totals[row["version_id"]]] + ([by_day[(row["version_id"], row["day"])]] if daily else [])
        for acc in targets:
            acc[0] += row["s"]
            acc[1] += row["l"]
            acc[2] += row["r"]
            if own:
                acc[3] += row["l"]
                acc[4] += row["r"]

    precomputed = _precomputed_p95(agent_id, start, end)
    hists: dict[int, dict[int, int]] = defaultdict(dict)
    day_hists: dict[tuple[int, date], dict[int, int]] = defaultdict(dict)
    if daily or precomputed is None:
        for version_id, day, hist in VersionDayRollup.objects.filter(
            version_id__in=version_ids, **in_window
        ).values_list("version_id", "day", "chars_hist"):
            if hist:
                merge_counts(hists[version_id], hist)
                if daily:
                    merge_counts(day_hists[(version_id, day)], hist)

    active = active_days(versions, start, end)
    alerts = {a.version_id: a for a in MetricAlert.objects.filter(version_id__in=version_ids, cleared_at__isnull=True)}
    models_by_day = dominant_models(versions[0].procedure.agent, start, end) if daily else {}
    eval_rates = eval_resolution_rates(versions)

    results: list[VersionFigures] = []
    for version in versions:
        intent_id = version.procedure.intent_id
        sessions, labelled, resolved, own_l, own_r = totals.get(version.pk, [0, 0, 0, 0, 0])
        all_l, all_r = intent_total.get(intent_id, [0, 0])
        version_active = active.get(version.pk, set())
        bare_hits = bare_total = 0
        for day in version_active:
            s, _l, _r, b = intent_day.get((intent_id, day), (0, 0, 0, 0))
            bare_hits += b
            bare_total += s
        series: list[DayFigures] = []
        if daily:
            days = sorted({d for (i, d) in intent_day if i == intent_id} | {d for (v, d) in by_day if v == version.pk})
            for day in days:
                d_s, d_l, d_r, d_ol, d_or = by_day.get((version.pk, day), [0, 0, 0, 0, 0])
                i_s, i_l, i_r, i_b = intent_day.get((intent_id, day), (0, 0, 0, 0))
                is_active = day in version_active
                series.append(
                    DayFigures(
                        day=day,
                        selected=d_s,
                        with_rate=Rate(d_r, d_l),
                        # same intent, without this version: the intent's sessions minus those that got it
                        without_rate=Rate(i_r - d_or, i_l - d_ol),
                        bare_rate=Rate(i_b, i_s) if is_active else Rate(0, 0),
                        p95_chars=CharsHistogram(day_hists.get((version.pk, day))).quantile(0.95),
                        model=models_by_day.get(day, ""),
                        active=is_active,
                    )
                )
        results.append(
            VersionFigures(
                version=version,
                selected=sessions,
                with_rate=Rate(resolved, labelled),
                without_rate=Rate(all_r - own_r, all_l - own_l),
                bare_rate=Rate(bare_hits, bare_total),
                p95_chars=(
                    precomputed.get(str(version.pk))
                    if precomputed is not None and not daily
                    else CharsHistogram(hists.get(version.pk)).quantile(0.95)
                ),
                eval_rate=eval_rates[version.pk],
                alert=alerts.get(version.pk),
                days=series,
            )
        )
    return results


def versions_with_metrics(agent: Agent, start: date, end: date) -> list[ProcedureVersion]:
    """The ACTIVE versions of the agent plus every version selected in [start, end]."""
    selected_ids = (
        VersionDayRollup.objects.filter(agent=agent, day__gte=start, day__lte=end).values("version_id").distinct()
    )
    return list(
        ProcedureVersion.objects.filter(Q(procedure__agent=agent, status=Status.ACTIVE) | Q(pk__in=selected_ids))
        .select_related("procedure__intent", "procedure__agent", "approved_by")
        .order_by("procedure__key", "-number")
    )


def agent_daily(agent: Agent, start: date, end: date) -> list[dict[str, Any]]:
    """Per day for the whole agent: sessions, resolution rate, dominant model, and the share of
    sessions that received no procedure among the sessions of intents that had an ACTIVE
    procedure that day (from the audit log)."""
    rows = (
        IntentDayRollup.objects.filter(agent=agent, day__gte=start, day__lte=end)
        .values("day", "intent_id")
        .annotate(
            sessions=Sum("sessions"), labelled=Sum("labelled"), resolved=Sum("resolved"), bare=Sum("bare_sessions")
        )
        .order_by("day")
    )
    versions = list(
        ProcedureVersion.objects.filter(procedure__agent=agent, approved_at__isnull=False).select_related("procedure")
    )
    covered: set[tuple[int, date]] = set()
    for version_id, days in active_days(versions, start, end).items():
        intent_id = next(v.procedure.intent_id for v in versions if v.pk == version_id)
        covered.update((intent_id, day) for day in days)
    models_by_day = dominant_models(agent, start, end)
    per_day: dict[date, dict[str, Any]] = {}
    for row in rows:
        day = row["day"]
        acc = per_day.setdefault(
            day,
            {
                "day": day,
                "sessions": 0,
                "resolution": Rate(0, 0),
                "bare": Rate(0, 0),
                "model": models_by_day.get(day, ""),
            },
        )
        acc["sessions"] += row["sessions"]
        acc["resolution"] += Rate(row["resolved"], row["labelled"])
        if (row["intent_id"], day) in covered:
            acc["bare"] += Rate(row["bare"], row["sessions"])
    return [per_day[day] for day in sorted(per_day)]
