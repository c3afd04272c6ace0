"""Quality of use per version and per agent, from the sessions agents report: adherence, tool-call
accuracy, conflict rate and stale use. Folded into the daily rollup by the refresh's single pass
over the sessions (reviews.metrics.rollup calls `QualityFold.add` for every session and
`QualityFold.replace_days` with its own rows), so a page sums day rows and never scans sessions.

Per version, over the sessions whose `injected` list names it (each counted once):
- adherence: of the sessions given a version with required tools, the share whose tool calls
  contain its required tools in the listed order (a subsequence: other calls may come between);
- tool-call accuracy: calls to its required tools among calls to its required tools plus calls to
  tools its forbidden actions forbid outright (library.conflicts.tools_forbidden_outright: an
  unconditional prohibition naming the tool; "not before X" does not forbid the tool);
- conflict rate: the share of its sessions that were also given a version it conflicts with
  (one requires what the other forbids, library.conflicts.requires_what_other_forbids, or a
  conflict the scan recorded for the pair);
- stale use: the share of its sessions that ended after its review-by date — the date in force
  then: a later re-review moved the date, and its audit row keeps the one before.
Per agent, over the sessions given at least one known version: the share given two versions that
conflict and the share given at least one version past its review-by date; adherence and
accuracy add up the versions' counts (a session given two procedures counts for each).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from itertools import combinations
from typing import Any

from django.db.models import Sum
from django.utils.dateparse import parse_date

from library.conflicts import requires_what_other_forbids, tools_forbidden_outright
from library.models import Agent, AuditEvent, ProcedureVersion, VersionConflict

from ..models import AgentDayQuality, VersionDayQuality
from .rates import Rate

VERSION_COUNTS = ("sessions", "checked", "followed", "required_calls", "forbidden_calls", "conflicted", "stale")
AGENT_COUNTS = ("served", "multi", "conflicted", "stale")


def follows_in_order(required: Iterable[str], calls: Iterable[str]) -> bool:
    """Whether `required` is a subsequence of `calls` (in order, other calls may come between)."""
    remaining = iter(calls)
    return all(tool in remaining for tool in required)


def tool_names(tool_calls: Any) -> list[str]:
    if not isinstance(tool_calls, list):
        return []
    return [c["name"] for c in tool_calls if isinstance(c, dict) and isinstance(c.get("name"), str)]


@dataclass(frozen=True)
class _Facts:
    """What the fold needs of one version (its content is immutable; review_by is not)."""

    required: tuple[str, ...]
    required_set: frozenset[str]
    forbidden: frozenset[str]
    review_by: date | None
    # (when, review-by date before it) of each re-review, oldest first
    re_reviews: tuple[tuple[datetime, date | None], ...] = ()

    def review_by_at(self, at: datetime) -> date | None:
        for when, before in self.re_reviews:
            if at < when:
                return before
        return self.review_by


class QualityFold:
    """Counts of one refresh, per (day, version) and per day. Built once per refresh: it reads
    the agent's versions, their re-reviews and the recorded conflicts (three queries)."""

    def __init__(self, agent: Agent) -> None:
        versions = list(ProcedureVersion.objects.filter(procedure__agent=agent).select_related("procedure"))
        tools = set(agent.tools or []) | {t for v in versions for t in v.required_tools}
        re_reviews: dict[int, list[tuple[datetime, date | None]]] = defaultdict(list)
        for version_id, at, before in (
            AuditEvent.objects.filter(version__in=versions, action=AuditEvent.Action.REVIEW)
            .order_by("at", "id")
            .values_list("version_id", "at", "before")
        ):
            re_reviews[version_id].append((at, parse_date((before or {}).get("reviewBy") or "")))
        self._versions = {v.pk: v for v in versions}
        self._facts = {
            v.pk: _Facts(
                required=tuple(v.required_tools),
                required_set=frozenset(v.required_tools),
                forbidden=frozenset(tools_forbidden_outright(v.forbidden_actions, tools)),
                review_by=v.review_by,
                re_reviews=tuple(re_reviews.get(v.pk, ())),
            )
            for v in versions
        }
        self._recorded = {
            (min(a, b), max(a, b))
            for a, b in VersionConflict.objects.filter(agent=agent).values_list("version_a_id", "version_b_id")
        }
        self._pairs: dict[tuple[int, int], bool] = {}
        self.by_version: dict[tuple[date, int], list[int]] = defaultdict(lambda: [0] * len(VERSION_COUNTS))
        self.by_day: dict[date, list[int]] = defaultdict(lambda: [0] * len(AGENT_COUNTS))

    def _conflict(self, a: int, b: int) -> bool:
        key = (a, b)
        if key not in self._pairs:
            va, vb = self._versions[a], self._versions[b]
            self._pairs[key] = key in self._recorded or (
                va.procedure_id != vb.procedure_id
                and bool(requires_what_other_forbids(va, vb) or requires_what_other_forbids(vb, va))
            )
        return self._pairs[key]

    def add(self, *, day: date, at: datetime, version_ids: set[int], tool_calls: Any) -> None:
        """One session that ended (or, without an end, was received) at `at`, on `day`."""
        if not version_ids:
            return
        ids = sorted(version_ids)
        conflicted: set[int] = set()
        for a, b in combinations(ids, 2):
            if self._conflict(a, b):
                conflicted.update((a, b))
        names = tool_names(tool_calls)
        calls = Counter(names)
        any_stale = False
        for version_id in ids:
            facts = self._facts[version_id]
            row = self.by_version[(day, version_id)]
            row[0] += 1
            if facts.required:
                row[1] += 1
                row[2] += follows_in_order(facts.required, names)
            row[3] += sum(calls[t] for t in facts.required_set)
            row[4] += sum(calls[t] for t in facts.forbidden)
            row[5] += version_id in conflicted
            review_by = facts.review_by_at(at)
            stale = review_by is not None and day > review_by
            row[6] += stale
            any_stale = any_stale or stale
        totals = self.by_day[day]
        totals[0] += 1
        totals[1] += len(ids) >= 2
        totals[2] += bool(conflicted)
        totals[3] += any_stale

    def replace_days(self, agent: Agent, days: set[date] | None) -> None:
        """Caller holds the agent's MetricsState lock (the rollup's). `days` None: every day."""
        for model in (VersionDayQuality, AgentDayQuality):
            rows = model.objects.filter(agent=agent)
            (rows if days is None else rows.filter(day__in=days)).delete()
        VersionDayQuality.objects.bulk_create(
            [
                VersionDayQuality(agent=agent, day=day, version_id=version_id, **dict(zip(VERSION_COUNTS, counts)))
                for (day, version_id), counts in self.by_version.items()
            ],
            batch_size=2000,
        )
        AgentDayQuality.objects.bulk_create(
            [
                AgentDayQuality(agent=agent, day=day, **dict(zip(AGENT_COUNTS, counts)))
                for day, counts in self.by_day.items()
            ],
            batch_size=2000,
        )


# ---------------------------------------------------------------------------------------------- reading


@dataclass
class QualityFigures:
    """Summed over a window (or one day). `sessions` is the denominator of conflict and stale use:
    sessions given the version, or for an agent, sessions given at least one version."""

    sessions: int = 0
    adherence: Rate = field(default_factory=lambda: Rate(0, 0))
    accuracy: Rate = field(default_factory=lambda: Rate(0, 0))
    forbidden_calls: int = 0
    conflict: Rate = field(default_factory=lambda: Rate(0, 0))
    stale: Rate = field(default_factory=lambda: Rate(0, 0))
    multi: int = 0  # agent only: sessions given two or more versions

    @classmethod
    def from_version_sums(cls, row: dict[str, int]) -> QualityFigures:
        required, forbidden = row["required_calls"] or 0, row["forbidden_calls"] or 0
        return cls(
            sessions=row["sessions"] or 0,
            adherence=Rate(row["followed"] or 0, row["checked"] or 0),
            accuracy=Rate(required, required + forbidden),
            forbidden_calls=forbidden,
            conflict=Rate(row["conflicted"] or 0, row["sessions"] or 0),
            stale=Rate(row["stale"] or 0, row["sessions"] or 0),
        )

    @property
    def rates(self) -> tuple[Rate, Rate, Rate, Rate]:
        """Adherence, accuracy, conflict and stale use, in the order the pages show them."""
        return (self.adherence, self.accuracy, self.conflict, self.stale)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "adherence": rate_dict(self.adherence),
            "toolCallAccuracy": {**rate_dict(self.accuracy), "forbiddenCalls": self.forbidden_calls},
            "conflictRate": rate_dict(self.conflict),
            "staleUse": rate_dict(self.stale),
        }


def rate_dict(rate: Rate) -> dict[str, Any]:
    ci = rate.interval
    return {"hits": rate.hits, "total": rate.total, "rate": rate.value, "ci95": list(ci) if ci else None}


_VERSION_SUMS = {name: Sum(name) for name in VERSION_COUNTS}


def version_quality(version_ids: list[int], start: date, end: date) -> dict[int, QualityFigures]:
    """Per version over [start, end] (one query); versions without sessions get empty figures."""
    rows = (
        VersionDayQuality.objects.filter(version_id__in=version_ids, day__gte=start, day__lte=end)
        .values("version_id")
        .annotate(**_VERSION_SUMS)
        .order_by()
    )
    found = {row["version_id"]: QualityFigures.from_version_sums(row) for row in rows}
    return {pk: found.get(pk, QualityFigures()) for pk in version_ids}


def version_quality_days(version_id: int, start: date, end: date) -> dict[date, QualityFigures]:
    rows = VersionDayQuality.objects.filter(version_id=version_id, day__gte=start, day__lte=end).values(
        "day", *VERSION_COUNTS
    )
    return {row["day"]: QualityFigures.from_version_sums(row) for row in rows}


@dataclass
class AgentQuality:
    total: QualityFigures
    days: dict[date, QualityFigures]


def agent_quality(agent: Agent, start: date, end: date) -> AgentQuality:
    """The agent's figures over [start, end] and per day (two queries)."""
    days: dict[date, QualityFigures] = defaultdict(QualityFigures)
    total = QualityFigures()
    for row in (
        VersionDayQuality.objects.filter(agent=agent, day__gte=start, day__lte=end)
        .values("day")
        .annotate(**_VERSION_SUMS)
        .order_by()
    ):
        day = QualityFigures.from_version_sums(row)
        days[row["day"]].adherence, days[row["day"]].accuracy = day.adherence, day.accuracy
        days[row["day"]].forbidden_calls = day.forbidden_calls
        total.adherence += day.adherence
        total.accuracy += day.accuracy
        total.forbidden_calls += day.forbidden_calls
    for row in AgentDayQuality.objects.filter(agent=agent, day__gte=start, day__lte=end).values("day", *AGENT_COUNTS):
        fig = days[row["day"]]
        fig.sessions, fig.multi = row["served"], row["multi"]
        fig.conflict, fig.stale = Rate(row["conflicted"], row["served"]), Rate(row["stale"], row["served"])
        total.sessions += row["served"]
        total.multi += row["multi"]
        total.conflict += fig.conflict
        total.stale += fig.stale
    return AgentQuality(total=total, days=dict(days))
