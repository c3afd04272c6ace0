"""Writing the metrics rollup: `metrics_refresh` folds an agent's sessions into two daily tables
(reviews.models.IntentDayRollup and VersionDayRollup, one row per day, intent or version, and model).

Why a rollup. A metrics page must answer in well under 300 ms over a million sessions; scanning
and unnesting `injected` on every request takes seconds; the pages sum at most a few thousand rollup
rows instead. The refresh is incremental: it reads sessions received since its watermark (minus an
overlap, because a session row can commit after a later one) and recomputes every day they fall on
from scratch, so a redelivered task, an overlap or a late session never counts anything twice. p95
over any range of days comes from merging day histograms (reviews.metrics.histogram); the p95s of
the WINDOWS the pages offer are precomputed here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db import transaction
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from library.models import Agent, AgentSession, ProcedureVersion

from ..models import IntentDayRollup, MetricsState, VersionDayRollup
from .histogram import CharsHistogram, merge_counts
from .quality import QualityFold

# A session may commit after one that was received later; the refresh re-reads this far back.
REFRESH_OVERLAP = timedelta(minutes=10)
# The windows (days, ending today) the metrics pages offer; their p95s are precomputed at refresh.
WINDOWS = (7, 30, 90, 365)


def _day_bounds(day: date) -> dict[str, datetime]:
    """Lookups for the instants of `day`. The last day a date can hold has no next day: rows stored
    before ingestion refused far-future times must not stop every later refresh."""
    bounds = {"gte": timezone.make_aware(datetime.combine(day, time.min))}
    if day < date.max:
        bounds["lt"] = timezone.make_aware(datetime.combine(day + timedelta(days=1), time.min))
    return bounds


def is_resolved(resolved: bool | None, escalated: bool | None) -> bool:
    """Whether the metrics count a session as resolved: resolved and not escalated. Stricter than
    mining, for which a resolved escalation (the transfer was the right end) is a success too: an
    operator counts every escalation as a person's time (docs/operations.md "Metrics per procedure version")."""
    return resolved is True and escalated is not True


@dataclass
class _Tally:
    """Sessions, those with an outcome, and those resolved (SessionOutcomesDay's three counts)."""

    sessions: int = 0
    labelled: int = 0
    resolved: int = 0

    def add(self, *, labelled: bool, success: bool) -> None:
        self.sessions += 1
        self.labelled += labelled
        self.resolved += success

    def fields(self, prefix: str = "") -> dict[str, int]:
        return {
            f"{prefix}sessions": self.sessions,
            f"{prefix}labelled": self.labelled,
            f"{prefix}resolved": self.resolved,
        }


@dataclass
class _Counts:
    every: _Tally = field(default_factory=_Tally)
    bare: _Tally = field(default_factory=_Tally)  # sessions that received no procedure
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
    quality: QualityFold | None = None  # adherence, accuracy, conflicts, stale use (reviews.metrics.quality)


def _aggregate(agent: Agent, sessions: Iterable[tuple]) -> _Folded:
    """Folds (ended_at, received_at, intent_id, model, resolved, escalated, injected, chars,
    tool_calls) rows into per-day counts by (intent, model) and by (version, intent, model), and
    the quality counts per version and day."""
    versions = {
        (key, number): pk
        for pk, key, number in ProcedureVersion.objects.filter(procedure__agent=agent).values_list(
            "pk", "procedure__key", "number"
        )
    }
    by_intent: dict[tuple, _Counts] = defaultdict(_Counts)
    by_version: dict[tuple, _Counts] = defaultdict(_Counts)
    quality = QualityFold(agent)
    tz = timezone.get_current_timezone()
    rows = 0
    for ended_at, received_at, intent_id, model, resolved, escalated, injected, chars, tool_calls in sessions:
        rows += 1
        day = (ended_at or received_at).astimezone(tz).date()
        model = model or ""
        labelled = resolved is not None
        success = is_resolved(resolved, escalated)
        bare = not injected
        if intent_id is not None:
            counts = by_intent[(day, intent_id, model)]
            counts.every.add(labelled=labelled, success=success)
            if bare:
                counts.bare.add(labelled=labelled, success=success)
        if bare:
            continue
        version_ids = _injected_version_ids(injected, versions)
        quality.add(day=day, at=ended_at or received_at, version_ids=version_ids, tool_calls=tool_calls)
        for version_id in version_ids:
            counts = by_version[(day, version_id, intent_id, model)]
            counts.every.add(labelled=labelled, success=success)
            if chars is not None:
                if counts.hist is None:
                    counts.hist = CharsHistogram()
                counts.hist.add(chars)
    return _Folded(by_intent=by_intent, by_version=by_version, rows=rows, quality=quality)


def _session_rows(queryset) -> Iterable[tuple]:
    return queryset.values_list(
        "ended_at",
        "received_at",
        "intent_id",
        "model",
        "resolved",
        "escalated",
        "injected",
        "instruction_chars",
        "tool_calls",
    ).iterator(chunk_size=5000)


def _sessions_of_days(sessions, days: set[date]) -> Iterable[tuple]:
    """The sessions that fall on `days`: by ended_at, or by received_at when ended_at is missing.
    Two index range scans per day rather than one OR over the table."""
    for day in sorted(days):
        bounds = _day_bounds(day)
        yield from _session_rows(sessions.filter(**{f"ended_at__{op}": at for op, at in bounds.items()}))
        yield from _session_rows(
            sessions.filter(ended_at__isnull=True, **{f"received_at__{op}": at for op, at in bounds.items()})
        )


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
                agent=agent, day=day, intent_id=intent_id, model=model, **c.every.fields(), **c.bare.fields("bare_")
            )
            for (day, intent_id, model), c in folded.by_intent.items()
        ],
        batch_size=2000,
    )
    VersionDayRollup.objects.bulk_create(
        [
            VersionDayRollup(
                agent=agent,
                day=day,
                version_id=version_id,
                intent_id=intent_id,
                model=model,
                **c.every.fields(),
                chars_hist=c.hist.to_json() if c.hist else {},
            )
            for (day, version_id, intent_id, model), c in folded.by_version.items()
        ],
        batch_size=2000,
    )
    (folded.quality or QualityFold(agent)).replace_days(agent, days)


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
        merge_counts(running[version_id], hist)
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
                for d in fresh.annotate(d=TruncDate(Coalesce("ended_at", "received_at")))
                .values_list("d", flat=True)
                .distinct()
                if d is not None
            }
            folded = _aggregate(agent, _sessions_of_days(sessions, days)) if days else _Folded()
        if days is None or days:
            _replace_days(agent, days, folded)
        day_count = (
            len({key[0] for key in folded.by_intent} | {key[0] for key in folded.by_version})
            if days is None
            else len(days)
        )
        state.window_p95 = window_p95s(agent)
        state.refreshed_until = started
        state.refreshed_at = timezone.now()
        state.days_recomputed = day_count
        state.save(update_fields=["refreshed_until", "refreshed_at", "days_recomputed", "window_p95"])
    return RefreshResult(agent=agent.name, full=full, days=day_count, sessions_read=folded.rows)
