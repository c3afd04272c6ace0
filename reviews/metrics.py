"""Metrics per procedure version, from the sessions agents report.

What is measured (docs/operations.md "Metrics per procedure version"):
- selected: sessions whose `injected` list names the version (id and version number);
- resolution rate with it: of those sessions with an outcome, the share resolved and not escalated
  (the same success label mining uses);
- resolution rate without it: sessions of the version's intent, with an outcome, that did not
  receive it — the comparison the issue asks for;
- no-procedure rate: sessions of the intent that received no procedure at all, over the days on
  which the version was ACTIVE (so the intent had one to give);
- instruction length p95 of the sessions that received it.

Why a rollup. A metrics page must answer in well under 300 ms over a million sessions; scanning
and unnesting `injected` on every request takes seconds. `metrics_refresh` folds sessions into two
daily tables (reviews.models.IntentDayRollup and VersionDayRollup, one row per day, intent or
version, and model) and the pages sum at most a few thousand of those rows. The refresh is
incremental: it reads sessions received since its watermark (minus an overlap, because a session
row can commit after a later one) and recomputes every day they fall on from scratch, so a
redelivered task, an overlap or a late session never counts anything twice. p95 over any range of
days comes from a mergeable log-bucket histogram (`CharsHistogram`, the DDSketch idea): each bucket
spans 2 % of its value, so the p95 shown is within 1 % of the exact nearest-rank value, whatever
the number of sessions, and merging days is adding counts.

The warning. A version's resolution rate in reported sessions is compared with the pass rate of its
approving eval run's candidate arm on the version's intent (`eval_resolution_rates`). "Significantly
below" is a one-sided two-proportion z-test (pooled variance) at α = 0.01 over the last 14 days,
and only with at least 30 labelled sessions (`resolution_drop_test`; all three are settings). An
alert is opened once and the `metric_warning` signal sent once; it clears when a later check no
longer finds a significant drop.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any, Iterable

from django.conf import settings
from django.db import transaction
from django.db.models import Q, Sum
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from library.models import (
    Agent,
    AgentSession,
    AuditEvent,
    EvalCaseResult,
    ProcedureVersion,
    Status,
)

from .models import IntentDayRollup, MetricAlert, MetricsState, VersionDayRollup

# A session may commit after one that was received later; the refresh re-reads this far back.
REFRESH_OVERLAP = timedelta(minutes=10)
# The windows (days, ending today) the metrics pages offer; their p95s are precomputed at refresh.
WINDOWS = (7, 30, 90, 365)
ACTIVATING = {AuditEvent.Action.APPROVE, AuditEvent.Action.ROLLBACK}
DEACTIVATING = {AuditEvent.Action.RETIRE, AuditEvent.Action.AUTO_RETIRE}


def _setting(name: str, default):
    return getattr(settings, name, default)


# ---------------------------------------------------------------------------------------------- histogram


class CharsHistogram:
    """A mergeable histogram with relative accuracy ALPHA: a value x > 0 falls in bucket
    ceil(log_γ x) with γ = (1 + α) / (1 − α); the bucket's representative value 2γ^i / (γ + 1) is
    within α of every value in it. Zero has its own bucket (index 0 is reserved for it)."""

    ALPHA = 0.01
    GAMMA = (1 + ALPHA) / (1 - ALPHA)
    _LOG_GAMMA = math.log(GAMMA)

    def __init__(self, counts: dict[int, int] | None = None) -> None:
        self.counts: dict[int, int] = defaultdict(int)
        for key, value in (counts or {}).items():
            self.counts[int(key)] += int(value)

    @classmethod
    def index(cls, value: float) -> int:
        if value <= 0:
            return 0
        # +1 keeps index 0 free for zero; values in (0, 1] land in bucket 1.
        return max(1, math.ceil(math.log(value) / cls._LOG_GAMMA) + 1)

    @classmethod
    def representative(cls, index: int) -> float:
        if index <= 0:
            return 0.0
        return 2 * cls.GAMMA ** (index - 1) / (cls.GAMMA + 1)

    def add(self, value: float, count: int = 1) -> None:
        self.counts[self.index(value)] += count

    def merge(self, other: dict[str, int] | dict[int, int] | "CharsHistogram") -> None:
        items = other.counts.items() if isinstance(other, CharsHistogram) else other.items()
        for key, value in items:
            self.counts[int(key)] += int(value)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def quantile(self, q: float) -> float | None:
        """Nearest-rank quantile: the smallest value with at least q of the values at or below it."""
        total = self.total
        if total == 0:
            return None
        rank = max(1, math.ceil(q * total))
        seen = 0
        for index in sorted(self.counts):
            seen += self.counts[index]
            if seen >= rank:
                return self.representative(index)
        return self.representative(max(self.counts))  # unreachable: seen reaches total

    def to_json(self) -> dict[str, int]:
        return {str(k): v for k, v in sorted(self.counts.items()) if v}


# ---------------------------------------------------------------------------------------------- refresh


def _day_bounds(day: date) -> tuple[datetime, datetime]:
    start = timezone.make_aware(datetime.combine(day, time.min))
    return start, timezone.make_aware(datetime.combine(day + timedelta(days=1), time.min))


def is_resolved(resolved: bool | None, escalated: bool | None) -> bool:
    """The success label of a session, as mining uses it: resolved and not escalated."""
    return resolved is True and escalated is not True


@dataclass
class _Counts:
    sessions: int = 0
    labelled: int = 0
    resolved: int = 0
    bare_sessions: int = 0
    bare_labelled: int = 0
    bare_resolved: int = 0
    hist: CharsHistogram | None = None


def _injected_version_ids(injected: Any, versions: dict[tuple[str, int], int]) -> set[int]:
    found: set[int] = set()
    if not isinstance(injected, list):
        return found
    for item in injected:
        if not isinstance(item, dict):
            continue
        try:
            key = (str(item.get("id")), int(item.get("version")))
        except (TypeError, ValueError):
            continue
        version_id = versions.get(key)
        if version_id is not None:
            found.add(version_id)
    return found


@dataclass
class _Folded:
    by_intent: dict[tuple, _Counts] = field(default_factory=dict)  # (day, intent_id, model)
    by_version: dict[tuple, _Counts] = field(default_factory=dict)  # (day, version_id, intent_id, model)
    rows: int = 0


def _aggregate(agent: Agent, sessions: Iterable[tuple]) -> _Folded:
    """Folds (ended_at, received_at, intent_id, model, resolved, escalated, injected, chars) rows
    into per-day counts by (intent, model) and by (version, intent, model)."""
    versions = {
        (key, number): pk
        for pk, key, number in ProcedureVersion.objects.filter(procedure__agent=agent).values_list(
            "pk", "procedure__key", "number"
        )
    }
    by_intent: dict[tuple, _Counts] = defaultdict(_Counts)
    by_version: dict[tuple, _Counts] = defaultdict(_Counts)
    tz = timezone.get_current_timezone()
    rows = 0
    for ended_at, received_at, intent_id, model, resolved, escalated, injected, chars in sessions:
        rows += 1
        day = (ended_at or received_at).astimezone(tz).date()
        model = model or ""
        labelled = resolved is not None
        success = is_resolved(resolved, escalated)
        bare = not injected
        if intent_id is not None:
            counts = by_intent[(day, intent_id, model)]
            counts.sessions += 1
            counts.labelled += labelled
            counts.resolved += success
            if bare:
                counts.bare_sessions += 1
                counts.bare_labelled += labelled
                counts.bare_resolved += success
        if bare:
            continue
        for version_id in _injected_version_ids(injected, versions):
            counts = by_version[(day, version_id, intent_id, model)]
            counts.sessions += 1
            counts.labelled += labelled
            counts.resolved += success
            if chars is not None:
                if counts.hist is None:
                    counts.hist = CharsHistogram()
                counts.hist.add(chars)
    return _Folded(by_intent=by_intent, by_version=by_version, rows=rows)


def _session_rows(queryset) -> Iterable[tuple]:
    return queryset.values_list(
        "ended_at", "received_at", "intent_id", "model", "resolved", "escalated", "injected", "instruction_chars"
    ).iterator(chunk_size=5000)


def _sessions_of_days(sessions, days: set[date]) -> Iterable[tuple]:
    """The sessions that fall on `days`: by ended_at, or by received_at when ended_at is missing.
    Two index range scans per day rather than one OR over the table."""
    for day in sorted(days):
        start, end = _day_bounds(day)
        yield from _session_rows(sessions.filter(ended_at__gte=start, ended_at__lt=end))
        yield from _session_rows(sessions.filter(ended_at__isnull=True, received_at__gte=start, received_at__lt=end))


def _replace_days(agent: Agent, days: set[date] | None, folded: _Folded) -> None:
    """Caller holds the agent's MetricsState lock. `days` None means every day of the agent."""
    intent_rows = IntentDayRollup.objects.filter(agent=agent)
    version_rows = VersionDayRollup.objects.filter(agent=agent)
    if days is not None:
        intent_rows = intent_rows.filter(day__in=days)
        version_rows = version_rows.filter(day__in=days)
    intent_rows.delete()
    version_rows.delete()
    IntentDayRollup.objects.bulk_create(
        [
            IntentDayRollup(
                agent=agent, day=day, intent_id=intent_id, model=model, sessions=c.sessions, labelled=c.labelled,
                resolved=c.resolved, bare_sessions=c.bare_sessions, bare_labelled=c.bare_labelled,
                bare_resolved=c.bare_resolved,
            )
            for (day, intent_id, model), c in folded.by_intent.items()
        ],
        batch_size=2000,
    )
    VersionDayRollup.objects.bulk_create(
        [
            VersionDayRollup(
                agent=agent, day=day, version_id=version_id, intent_id=intent_id, model=model, sessions=c.sessions,
                labelled=c.labelled, resolved=c.resolved, chars_hist=c.hist.to_json() if c.hist else {},
            )
            for (day, version_id, intent_id, model), c in folded.by_version.items()
        ],
        batch_size=2000,
    )


def window_p95s(agent: Agent, *, today: date | None = None) -> dict[str, Any]:
    """p95 of instruction length per version over each of WINDOWS (ending today): one pass over
    the day histograms, newest day first, snapshotting each version's running merge as the pass
    crosses a window's first day."""
    today = today or timezone.localdate()
    longest = max(WINDOWS)
    starts = sorted(((today - timedelta(days=d - 1)), d) for d in WINDOWS)[::-1]  # newest start first
    running: dict[int, dict[int, int]] = defaultdict(dict)
    result: dict[str, dict[str, float | None]] = {str(d): {} for d in WINDOWS}
    rows = (
        VersionDayRollup.objects.filter(agent=agent, day__gt=today - timedelta(days=longest), day__lte=today)
        .exclude(chars_hist={})
        .order_by("-day")
        .values_list("version_id", "day", "chars_hist")
    )

    def snapshot(days: int) -> None:
        result[str(days)] = {str(v): CharsHistogram(counts).quantile(0.95) for v, counts in running.items()}

    pending = list(starts)
    for version_id, day, hist in rows.iterator(chunk_size=2000):
        while pending and day < pending[0][0]:
            snapshot(pending.pop(0)[1])
        _merge_counts(running[version_id], hist)
    for _start, days in pending:
        snapshot(days)
    return {"as_of": today.isoformat(), "windows": result}


@dataclass(frozen=True)
class RefreshResult:
    agent: str
    full: bool
    days: int
    sessions_read: int


def metrics_refresh(*, agent: Agent, full: bool = False) -> RefreshResult:
    """Brings the agent's daily rollup up to date. Incremental unless `full` (or first run): the
    days on which sessions received since the watermark fall are recomputed from all their sessions.
    Two refreshes of one agent are serialised by the MetricsState row lock."""
    MetricsState.objects.get_or_create(agent=agent)
    started = timezone.now()
    with transaction.atomic():
        state = MetricsState.objects.select_for_update().get(agent=agent)
        sessions = AgentSession.objects.filter(agent=agent)
        if full or state.refreshed_until is None:
            full = True
            days = None
            folded = _aggregate(agent, _session_rows(sessions))
        else:
            fresh = sessions.filter(received_at__gte=state.refreshed_until - REFRESH_OVERLAP)
            days = {
                d
                for d in fresh.annotate(d=TruncDate(Coalesce("ended_at", "received_at"))).values_list("d", flat=True).distinct()
                if d is not None
            }
            folded = _aggregate(agent, _sessions_of_days(sessions, days)) if days else _Folded()
        if days is None or days:
            _replace_days(agent, days, folded)
        day_count = len({key[0] for key in folded.by_intent} | {key[0] for key in folded.by_version}) if days is None else len(days)
        state.window_p95 = window_p95s(agent)
        state.refreshed_until = started
        state.refreshed_at = timezone.now()
        state.days_recomputed = day_count
        state.save(update_fields=["refreshed_until", "refreshed_at", "days_recomputed", "window_p95"])
    return RefreshResult(agent=agent.name, full=full, days=day_count, sessions_read=folded.rows)


# ---------------------------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class Rate:
    hits: int
    total: int

    @property
    def value(self) -> float | None:
        return self.hits / self.total if self.total else None

    @property
    def percent(self) -> str:
        return "—" if self.total == 0 else f"{100 * self.hits / self.total:.1f} %"

    def __add__(self, other: "Rate") -> "Rate":
        return Rate(self.hits + other.hits, self.total + other.total)


def normal_sf(z: float) -> float:
    """P(Z ≥ z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2))


@dataclass(frozen=True)
class DropTest:
    significant: bool
    observed: Rate
    expected: Rate
    z: float | None
    p_value: float | None
    reason: str


def resolution_drop_test(*, observed: Rate, expected: Rate, alpha: float | None = None, min_sessions: int | None = None) -> DropTest:
    """Is the observed resolution rate significantly below the expected (eval) rate?

    One-sided two-proportion z-test with pooled variance: H0 p_observed ≥ p_expected,
    z = (p̂_e − p̂_o) / sqrt(p̄ (1 − p̄) (1/n_e + 1/n_o)), p = P(Z ≥ z). Both are binomial samples:
    the eval run's candidate arm is a small sample too, so a perfect 10 of 10 in the eval does not
    turn one failed session in a hundred into an alarm. Significant when p < alpha and there are at
    least `min_sessions` labelled sessions."""
    alpha = _setting("PROCMEM_METRIC_WARNING_ALPHA", 0.01) if alpha is None else alpha
    min_sessions = _setting("PROCMEM_METRIC_WARNING_MIN_SESSIONS", 30) if min_sessions is None else min_sessions
    if expected.total == 0:
        return DropTest(False, observed, expected, None, None, "no eval result to compare with")
    if observed.total < min_sessions:
        return DropTest(False, observed, expected, None, None, f"fewer than {min_sessions} labelled sessions")
    p_o, p_e = observed.value, expected.value
    pooled = (observed.hits + expected.hits) / (observed.total + expected.total)
    variance = pooled * (1 - pooled) * (1 / observed.total + 1 / expected.total)
    if variance == 0:
        return DropTest(False, observed, expected, 0.0, 1.0, "no variation in either sample")
    z = (p_e - p_o) / math.sqrt(variance)
    p_value = normal_sf(z)
    significant = p_o < p_e and p_value < alpha
    reason = (
        f"{observed.percent} of {observed.total} sessions vs {expected.percent} in the eval run "
        f"(z = {z:.2f}, one-sided p = {p_value:.4f}, α = {alpha})"
    )
    return DropTest(significant, observed, expected, z, p_value, reason)


def eval_resolution_rates(versions: Iterable[ProcedureVersion]) -> dict[int, Rate]:
    """Per version: the pass rate of its approving eval run's candidate arm on the version's own
    intent. Errored cases (passed is None) do not count. Rate(0, 0) when the run recorded no such
    cases (e.g. the demo data's seeded approvals) or the version was never approved."""
    versions = [v for v in versions]
    runs = {v.approval_eval_run_id: v for v in versions if v.approval_eval_run_id}
    rates = {v.pk: Rate(0, 0) for v in versions}
    if not runs:
        return rates
    rows = (
        EvalCaseResult.objects.filter(run_id__in=runs, arm=EvalCaseResult.Arm.CANDIDATE, passed__isnull=False)
        .values_list("run_id", "case__intent_id", "passed")
    )
    for run_id, intent_id, passed in rows:
        version = runs[run_id]
        if intent_id == version.procedure.intent_id:
            rates[version.pk] += Rate(int(passed), 1)
    return rates


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

    @property
    def difference(self) -> float | None:
        if self.with_rate.value is None or self.without_rate.value is None:
            return None
        return self.with_rate.value - self.without_rate.value

    @property
    def difference_points(self) -> str:
        """With minus without, in percentage points ("+12.5 pts"), or "—"."""
        diff = self.difference
        return "—" if diff is None else f"{diff * 100:+.1f} pts"


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


def _merge_counts(target: dict[int, int], source: dict) -> None:
    for key, value in source.items():
        key = int(key)
        target[key] = target.get(key, 0) + value


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
        for version_id, day, hist in VersionDayRollup.objects.filter(version_id__in=version_ids, **in_window).values_list(
            "version_id", "day", "chars_hist"
        ):
            if hist:
                _merge_counts(hists[version_id], hist)
                if daily:
                    _merge_counts(day_hists[(version_id, day)], hist)

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
                        day=day, selected=d_s, with_rate=Rate(d_r, d_l),
                        # same intent, without this version: the intent's sessions minus those that got it
                        without_rate=Rate(i_r - d_or, i_l - d_ol),
                        bare_rate=Rate(i_b, i_s) if is_active else Rate(0, 0),
                        p95_chars=CharsHistogram(day_hists.get((version.pk, day))).quantile(0.95),
                        model=models_by_day.get(day, ""), active=is_active,
                    )
                )
        results.append(
            VersionFigures(
                version=version, selected=sessions, with_rate=Rate(resolved, labelled),
                without_rate=Rate(all_r - own_r, all_l - own_l), bare_rate=Rate(bare_hits, bare_total),
                p95_chars=(
                    precomputed.get(str(version.pk)) if precomputed is not None and not daily
                    else CharsHistogram(hists.get(version.pk)).quantile(0.95)
                ),
                eval_rate=eval_rates[version.pk],
                alert=alerts.get(version.pk), days=series,
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
        .annotate(sessions=Sum("sessions"), labelled=Sum("labelled"), resolved=Sum("resolved"), bare=Sum("bare_sessions"))
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
            day, {"day": day, "sessions": 0, "resolution": Rate(0, 0), "bare": Rate(0, 0), "model": models_by_day.get(day, "")}
        )
        acc["sessions"] += row["sessions"]
        acc["resolution"] += Rate(row["resolved"], row["labelled"])
        if (row["intent_id"], day) in covered:
            acc["bare"] += Rate(row["bare"], row["sessions"])
    return [per_day[day] for day in sorted(per_day)]


# ---------------------------------------------------------------------------------------------- warnings


def metric_warnings_check(*, agent: Agent, today: date | None = None) -> list[MetricAlert]:
    """Opens an alert (and sends `metric_warning` once, after commit) for every ACTIVE version whose
    resolution rate over the last PROCMEM_METRIC_WARNING_DAYS days is significantly below its eval
    result; clears open alerts whose version recovered or is no longer ACTIVE. Returns the alerts
    opened now."""
    from .signals import metric_warning

    days = _setting("PROCMEM_METRIC_WARNING_DAYS", 14)
    start, end = window(days, today=today)
    versions = list(
        ProcedureVersion.objects.filter(procedure__agent=agent, status=Status.ACTIVE).select_related(
            "procedure__intent", "procedure__agent"
        )
    )
    figures = {f.version.pk: f for f in version_figures(versions, start, end)}
    opened: list[MetricAlert] = []
    with transaction.atomic():
        open_alerts = {
            a.version_id: a
            for a in MetricAlert.objects.select_for_update().filter(
                version__procedure__agent=agent, cleared_at__isnull=True
            )
        }
        for version in versions:
            fig = figures[version.pk]
            test = resolution_drop_test(observed=fig.with_rate, expected=fig.eval_rate)
            if test.significant and version.pk not in open_alerts:
                message = (
                    f"{version.procedure.key} v{version.number} ({agent.name}): resolution rate over the last "
                    f"{days} days fell significantly below its eval result: {test.reason}."
                )
                alert = MetricAlert.objects.create(
                    version=version,
                    message=message,
                    figures={
                        "observed": [test.observed.hits, test.observed.total],
                        "expected": [test.expected.hits, test.expected.total],
                        "z": test.z, "p": test.p_value, "from": start.isoformat(), "to": end.isoformat(),
                    },
                )
                opened.append(alert)
                transaction.on_commit(
                    lambda vid=version.pk, msg=message: metric_warning.send(sender=MetricAlert, version_id=vid, message=msg),
                    robust=True,
                )
            elif not test.significant and version.pk in open_alerts:
                open_alerts[version.pk].cleared_at = timezone.now()
                open_alerts[version.pk].save(update_fields=["cleared_at"])
        active_ids = {v.pk for v in versions}
        for version_id, alert in open_alerts.items():
            if version_id not in active_ids:
                alert.cleared_at = timezone.now()
                alert.save(update_fields=["cleared_at"])
    return opened
