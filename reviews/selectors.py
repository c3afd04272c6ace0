"""Reads of the review workspace: the queue with its filters, groups and sorting; what a candidate
page shows next to the version (the active version, siblings, the latest eval run, evidence).

Every function here issues a fixed number of queries whatever the size of the queue (tested with
`django_assert_num_queries` at 10 and 1,000 candidates)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import (
    Case,
    Count,
    Exists,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce

from library.models import Agent, AgentSession, EvalRun, Intent, Procedure, ProcedureVersion, Status
from reviews.models import Comment

SORTS = {
    "group": ("procedure__agent__name", "procedure__intent__name", "-support", "created_at", "id"),
    "evidence": ("-support", "created_at", "id"),
    "oldest": ("created_at", "id"),
    "newest": ("-created_at", "-id"),
}
SORT_LABELS = {
    "group": "agent and intent",
    "evidence": "evidence strength",
    "oldest": "oldest first",
    "newest": "newest first",
}
TRI_STATE = {"", "yes", "no"}


@dataclass(frozen=True)
class QueueFilters:
    agent: str = ""
    intent: str = ""
    quarantined: str = ""  # "", "yes", "no"
    passing: str = ""  # has a passing eval on its exact content: "", "yes", "no"
    mine: bool = False  # waiting for me as approver
    sort: str = "group"

    @classmethod
    def from_query(cls, query) -> "QueueFilters":
        """Unknown values fall back to "no filter" rather than an error: these come from URLs people
        share and edit by hand."""
        quarantined = query.get("quarantined", "")
        passing = query.get("passing", "")
        sort = query.get("sort", "group")
        return cls(
            agent=query.get("agent", "").strip()[:64],
            intent=query.get("intent", "").strip()[:100],
            quarantined=quarantined if quarantined in TRI_STATE else "",
            passing=passing if passing in TRI_STATE else "",
            mine=query.get("mine", "") in {"1", "on", "yes", "true"},
            sort=sort if sort in SORTS else "group",
        )

    def as_query(self, **override) -> dict[str, str]:
        values = {
            "agent": self.agent,
            "intent": self.intent,
            "quarantined": self.quarantined,
            "passing": self.passing,
            "mine": "1" if self.mine else "",
            "sort": self.sort if self.sort != "group" else "",
        }
        values.update({k: ("" if v is None else str(v)) for k, v in override.items()})
        return {k: v for k, v in values.items() if v}

    @property
    def sort_label(self) -> str:
        return SORT_LABELS[self.sort]

    @property
    def active(self) -> bool:
        return bool(self.agent or self.intent or self.quarantined or self.passing or self.mine)


def _passing_eval_exists():
    return Exists(
        EvalRun.objects.filter(
            version=OuterRef("pk"),
            content_hash=OuterRef("content_hash"),
            state=EvalRun.State.DONE,
            verdict=EvalRun.Verdict.PASS,
        )
    )


def _latest_eval(column: str):
    return Subquery(
        EvalRun.objects.filter(version=OuterRef("pk"), content_hash=OuterRef("content_hash"))
        .order_by("-created_at", "-id")
        .values(column)[:1]
    )


def evidence_support():
    """The evidence's support number as an integer for sorting; 0 when absent or not a number (the
    regex guard keeps PostgreSQL from casting a non-numeric string)."""
    return Case(
        When(evidence__support__regex=r"^[0-9]{1,9}$", then=Cast(KT("evidence__support"), IntegerField())),
        default=Value(0),
        output_field=IntegerField(),
    )


def approvable_procedures_q(user) -> Q:
    """Versions of procedures `user` may approve (object permission on the procedure or its agent,
    directly or through a group), as a Q for a ProcedureVersion queryset. Lazy: subqueries."""
    from guardian.shortcuts import get_objects_for_user

    if not (user and user.is_authenticated and user.is_active):
        return Q(pk__in=[])
    if user.is_superuser:
        return Q()
    procedures = get_objects_for_user(user, "library.approve_procedure", klass=Procedure, accept_global_perms=True)
    agents = get_objects_for_user(user, "library.approve_agent_procedures", klass=Agent, accept_global_perms=True)
    return Q(procedure__in=procedures.values("pk")) | Q(procedure__agent__in=agents.values("pk"))


def waiting_for_approver(user) -> QuerySet[ProcedureVersion]:
    """Candidates `user` could decide as approver: holds the permission and is neither the proposer
    nor the last editor. (Whether an eval passed is a separate filter.)"""
    return (
        ProcedureVersion.objects.filter(status=Status.CANDIDATE)
        .filter(approvable_procedures_q(user))
        .exclude(proposed_by=user)
        .exclude(edited_by=user)
    )


def candidate_queue(user, filters: QueueFilters, *, visible_agents: QuerySet[Agent]) -> QuerySet[ProcedureVersion]:
    """The queue: CANDIDATE versions of visible agents, filtered and sorted; quarantined first."""
    qs = _filtered(user, filters, visible_agents=visible_agents)
    if filters.agent:
        qs = qs.filter(procedure__agent__name=filters.agent)
    if filters.intent:
        qs = qs.filter(procedure__intent__name=filters.intent)
    return (
        qs.select_related("procedure__agent", "procedure__intent", "proposed_by", "edited_by")
        .annotate(
            support=evidence_support(),
            eval_state=_latest_eval("state"),
            eval_verdict=_latest_eval("verdict"),
            comment_count=Coalesce(
                # a correlated count: one scalar per page row, not a join over every comment
                Subquery(
                    Comment.objects.filter(version=OuterRef("pk"))
                    .order_by()
                    .values("version")
                    .annotate(n=Count("id"))
                    .values("n")[:1],
                    output_field=IntegerField(),
                ),
                Value(0),
            ),
        )
        .order_by("-quarantined", *SORTS[filters.sort])
    )


def _filtered(user, filters: QueueFilters, *, visible_agents) -> QuerySet[ProcedureVersion]:
    """Every filter except agent and intent (the groups panel lists those to pick from)."""
    qs = ProcedureVersion.objects.filter(status=Status.CANDIDATE, procedure__agent__in=visible_agents).annotate(
        has_passing_eval=_passing_eval_exists()
    )
    if filters.quarantined == "yes":
        qs = qs.filter(quarantined=True)
    elif filters.quarantined == "no":
        qs = qs.filter(quarantined=False)
    if filters.passing == "yes":
        qs = qs.filter(has_passing_eval=True)
    elif filters.passing == "no":
        qs = qs.filter(has_passing_eval=False)
    if filters.mine:
        qs = qs.filter(pk__in=waiting_for_approver(user).values("pk"))
    return qs


@dataclass
class QueueGroup:
    agent: str
    intent: str
    count: int
    quarantined: int


@dataclass
class AgentGroups:
    agent: str
    count: int = 0
    quarantined: int = 0
    intents: list[QueueGroup] = field(default_factory=list)


def queue_groups(user, filters: QueueFilters, *, visible_agents) -> list[AgentGroups]:
    """Counts per agent and intent (one GROUP BY query), under every filter but agent/intent."""
    rows = (
        _filtered(user, filters, visible_agents=visible_agents)
        .values("procedure__agent__name", "procedure__intent__name")
        .annotate(n=Count("id"), q=Count("id", filter=Q(quarantined=True)))
        .order_by("procedure__agent__name", "procedure__intent__name")
    )
    groups: dict[str, AgentGroups] = {}
    for row in rows:
        agent = groups.setdefault(row["procedure__agent__name"], AgentGroups(row["procedure__agent__name"]))
        agent.count += row["n"]
        agent.quarantined += row["q"]
        agent.intents.append(QueueGroup(agent.agent, row["procedure__intent__name"], row["n"], row["q"]))
    return list(groups.values())


def filter_choices(*, visible_agents) -> dict[str, list[str]]:
    agents = list(visible_agents.order_by("name").values_list("name", flat=True))
    intents = sorted(set(Intent.objects.filter(agent__in=visible_agents).values_list("name", flat=True)))
    return {"agents": agents, "intents": intents}


# ------------------------------------------------------------------------------------------- the candidate page


def active_version_of(procedure: Procedure) -> ProcedureVersion | None:
    return (
        ProcedureVersion.objects.filter(procedure=procedure, status=Status.ACTIVE)
        .select_related("approved_by")
        .first()
    )


def versions_of(procedure: Procedure) -> list[ProcedureVersion]:
    return list(
        ProcedureVersion.objects.filter(procedure=procedure)
        .select_related("approved_by", "proposed_by", "edited_by")
        .order_by("-number")
    )


def other_active_versions(version: ProcedureVersion) -> list[ProcedureVersion]:
    """ACTIVE versions of the agent's *other* procedures (the overlap lint compares against them)."""
    return list(
        ProcedureVersion.objects.filter(procedure__agent_id=version.procedure.agent_id, status=Status.ACTIVE)
        .exclude(procedure_id=version.procedure_id)
        .select_related("procedure")
        .only("number", "applies_when", "procedure__key")
    )


def latest_eval_run(version: ProcedureVersion) -> EvalRun | None:
    """The newest run on this version's exact content (runs of older content no longer count)."""
    return (
        EvalRun.objects.filter(version=version, content_hash=version.content_hash)
        .select_related("started_by")
        .order_by("-created_at", "-id")
        .first()
    )


EXCERPT_LIMIT = 5
_SESSION_ID_KEYS = ("sessions", "sessionIds", "session_ids", "exampleSessions", "examples")


def evidence_session_ids(evidence: dict[str, Any]) -> list[str]:
    for key in _SESSION_ID_KEYS:
        value = evidence.get(key)
        if isinstance(value, list):
            ids = [item if isinstance(item, str) else (item or {}).get("session_id") or (item or {}).get("id") for item in value]
            return [str(i) for i in ids if i]
    return []


def evidence_sessions(version: ProcedureVersion) -> list[AgentSession]:
    """Example sessions named in the evidence (only their redacted excerpts are shown)."""
    ids = evidence_session_ids(version.evidence or {})[:EXCERPT_LIMIT]
    if not ids:
        return []
    by_id = {
        s.session_id: s
        for s in AgentSession.objects.filter(agent_id=version.procedure.agent_id, session_id__in=ids).only(
            "session_id", "redacted_excerpt", "resolved", "escalated", "ended_at", "agent_id"
        )
    }
    return [by_id[i] for i in ids if i in by_id]
