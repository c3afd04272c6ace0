"""Reads of the review workspace: the queue with its filters, groups and sorting; what a candidate
page shows next to the version (the active version, siblings, the latest eval run, evidence); the
active set as the operations pages show it.

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
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils import timezone

from library.models import Agent, AgentSession, EvalRun, Intent, Procedure, ProcedureVersion, Status
from library.selectors import active_versions_for_agent
from library.serving import missing_tools
from reviews.models import CandidateClaim, Comment

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
ASSIGNED = {"", "me", "none"}


@dataclass(frozen=True)
class QueueFilters:
    agent: str = ""
    intent: str = ""
    quarantined: str = ""  # "", "yes", "no"
    passing: str = ""  # has a passing eval on its exact content: "", "yes", "no"
    mine: bool = False  # waiting for me as approver
    assigned: str = ""  # "", "me" (a live claim of mine), "none" (no live claim)
    sort: str = "group"

    @classmethod
    def from_query(cls, query) -> "QueueFilters":
        """Unknown values fall back to "no filter" rather than an error: these come from URLs people
        share and edit by hand."""
        quarantined = query.get("quarantined", "")
        passing = query.get("passing", "")
        sort = query.get("sort", "group")
        assigned = query.get("assigned", "")
        return cls(
            agent=query.get("agent", "").strip()[:64],
            intent=query.get("intent", "").strip()[:100],
            quarantined=quarantined if quarantined in TRI_STATE else "",
            passing=passing if passing in TRI_STATE else "",
            mine=query.get("mine", "") in {"1", "on", "yes", "true"},
            assigned=assigned if assigned in ASSIGNED else "",
            sort=sort if sort in SORTS else "group",
        )

    def as_query(self, **override) -> dict[str, str]:
        values = {
            "agent": self.agent,
            "intent": self.intent,
            "quarantined": self.quarantined,
            "passing": self.passing,
            "mine": "1" if self.mine else "",
            "assigned": self.assigned,
            "sort": self.sort if self.sort != "group" else "",
        }
        values.update({k: ("" if v is None else str(v)) for k, v in override.items()})
        return {k: v for k, v in values.items() if v}

    @property
    def sort_label(self) -> str:
        return SORT_LABELS[self.sort]

    @property
    def active(self) -> bool:
        return bool(self.agent or self.intent or self.quarantined or self.passing or self.mine or self.assigned)


def _passing_eval_exists():
    return Exists(
        EvalRun.objects.filter(
            version=OuterRef("pk"),
            content_hash=OuterRef("content_hash"),
            state=EvalRun.State.DONE,
            verdict=EvalRun.Verdict.PASS,
        )
    )


def evidence_support():
    """The evidence's support number as an integer for sorting; 0 when absent or not a number (the
    regex guard keeps PostgreSQL from casting a non-numeric string)."""
    return Case(
        When(evidence__support__regex=r"^[0-9]{1,9}$", then=Cast(KT("evidence__support"), IntegerField())),
        default=Value(0),
        output_field=IntegerField(),
    )


@dataclass(frozen=True)
class ApproveScope:
    """Where a user holds the approve right: every procedure (superuser), or these procedures,
    every procedure of these agents and every procedure in these namespaces — object permissions
    held directly or through a group, the
    same rules as `library.permissions.user_can_approve` (guardian checks object permissions only;
    a model-wide permission does not count)."""

    everything: bool
    procedure_ids: frozenset[int]
    agent_ids: frozenset[int]
    namespace_ids: frozenset[int] = frozenset()

    @property
    def is_empty(self) -> bool:
        return not (self.everything or self.procedure_ids or self.agent_ids or self.namespace_ids)

    def as_q(self) -> Q:
        """For a ProcedureVersion queryset. Id lists, not OR-ed subqueries: an approver holds few
        rights, and PostgreSQL plans `procedure_id IN (…)` far better than four correlated IN
        subqueries joined by OR over a large queue."""
        if self.everything:
            return Q()
        if self.is_empty:
            return Q(pk__in=[])
        return (
            Q(procedure_id__in=sorted(self.procedure_ids))
            | Q(procedure__agent_id__in=sorted(self.agent_ids))
            | Q(procedure__namespace_id__in=sorted(self.namespace_ids))
        )


def approve_scope(user) -> ApproveScope:
    """Three queries, remembered on the user object for the rest of the request (navigation, queue
    filter and role all ask)."""
    from library.models import (
        AgentGroupObjectPermission,
        AgentUserObjectPermission,
        NamespaceGroupObjectPermission,
        NamespaceUserObjectPermission,
        ProcedureGroupObjectPermission,
        ProcedureUserObjectPermission,
    )

    if not (user and user.is_authenticated and user.is_active):
        return ApproveScope(False, frozenset(), frozenset())
    cached = getattr(user, "_procmem_approve_scope", None)
    if cached is not None:
        return cached
    if user.is_superuser:
        scope = ApproveScope(True, frozenset(), frozenset())
    else:
        on_procedure = Q(permission__codename="approve_procedure", permission__content_type__app_label="library")
        on_agent = Q(permission__codename="approve_agent_procedures", permission__content_type__app_label="library")
        procedures = ProcedureUserObjectPermission.objects.filter(on_procedure, user=user).values_list("content_object_id", flat=True).union(
            ProcedureGroupObjectPermission.objects.filter(on_procedure, group__user=user).values_list("content_object_id", flat=True)
        )
        agents = AgentUserObjectPermission.objects.filter(on_agent, user=user).values_list("content_object_id", flat=True).union(
            AgentGroupObjectPermission.objects.filter(on_agent, group__user=user).values_list("content_object_id", flat=True)
        )
        on_namespace = Q(permission__codename="approve_namespace_procedures", permission__content_type__app_label="library")
        namespaces = NamespaceUserObjectPermission.objects.filter(on_namespace, user=user).values_list("content_object_id", flat=True).union(
            NamespaceGroupObjectPermission.objects.filter(on_namespace, group__user=user).values_list("content_object_id", flat=True)
        )
        scope = ApproveScope(False, frozenset(procedures), frozenset(agents), frozenset(namespaces))
    user._procmem_approve_scope = scope
    return scope


def holds_any_approve_right(user) -> bool:
    """Whether `user` may approve anything at all (the navigation's "approver" role)."""
    return not approve_scope(user).is_empty


def waiting_for_approver(user) -> QuerySet[ProcedureVersion]:
    """Candidates `user` could decide as approver: holds the permission and is neither the proposer
    nor the last editor. (Whether an eval passed is a separate filter.)"""
    return (
        ProcedureVersion.objects.filter(status=Status.CANDIDATE)
        .filter(approve_scope(user).as_q())
        .exclude(proposed_by=user)
        .exclude(edited_by=user)
    )


def candidate_queue(user, filters: QueueFilters, *, visible_agents: QuerySet[Agent]) -> QuerySet[ProcedureVersion]:
    """The queue's order as a narrow queryset of primary keys: CANDIDATE versions of visible
    agents, filtered and sorted, quarantined first. Paginate it, then load the page's rows with
    `queue_rows` — sorting 10,000 full rows (steps, evidence, joined agents) would carry every
    column through the sort; sorting keys and ids does not."""
    qs = _filtered(user, filters, visible_agents=visible_agents)
    if filters.agent:
        qs = qs.filter(procedure__agent__name=filters.agent)
    if filters.intent:
        qs = qs.filter(procedure__intent__name=filters.intent)
    return qs.annotate(support=evidence_support()).order_by("-quarantined", *SORTS[filters.sort]).values_list("pk", flat=True)


def queue_rows(pks: list[int]) -> list[ProcedureVersion]:
    """The rows of one queue page, in the order of `pks`, with what the table shows. Three queries
    over the page's ids (versions, their eval runs, their comment counts) rather than correlated
    subqueries per row."""
    rows = (
        ProcedureVersion.objects.filter(pk__in=pks)
        .select_related("procedure__agent", "procedure__intent", "proposed_by", "edited_by", "claim__assignee")
        .annotate(support=evidence_support())
    )
    by_pk = {row.pk: row for row in rows}
    now = timezone.now()
    latest: dict[int, EvalRun] = {}
    passing: set[int] = set()
    for run in EvalRun.objects.filter(version_id__in=by_pk).only(
        "version_id", "content_hash", "state", "verdict", "created_at"
    ).order_by("-created_at", "-id"):
        version = by_pk[run.version_id]
        if run.content_hash != version.content_hash:
            continue  # a run of older content no longer counts
        latest.setdefault(run.version_id, run)
        if run.is_passing:
            passing.add(run.version_id)
    comments = dict(
        Comment.objects.filter(version_id__in=by_pk).order_by().values("version_id").annotate(n=Count("id")).values_list("version_id", "n")
    )
    for pk, row in by_pk.items():
        run = latest.get(pk)
        row.eval_state = run.state if run else None
        row.eval_verdict = run.verdict if run else None
        row.has_passing_eval = pk in passing
        row.comment_count = comments.get(pk, 0)
        row.live_claim = live_claim_of(row, now)
        row.age = age_badge(row, now)
    return [by_pk[pk] for pk in pks if pk in by_pk]


def live_claim_of(version: ProcedureVersion, now) -> CandidateClaim | None:
    """The version's claim (selected with it) unless it has expired."""
    try:
        claim = version.claim
    except CandidateClaim.DoesNotExist:
        return None
    return claim if claim.expires_at > now else None


@dataclass(frozen=True)
class AgeBadge:
    """How long a candidate has waited against its agent's review target: "fresh" under half the
    target, "due" from half, "overdue" past it."""

    level: str
    hours: float
    target_hours: int

    @property
    def label(self) -> str:
        return {"fresh": "fresh", "due": "due soon", "overdue": "overdue"}[self.level]


def age_badge(version: ProcedureVersion, now) -> AgeBadge:
    target = max(1, version.procedure.agent.review_target_hours)
    hours = max(0.0, (now - version.created_at).total_seconds() / 3600)
    level = "overdue" if hours >= target else "due" if hours >= target / 2 else "fresh"
    return AgeBadge(level, hours, target)


def _filtered(user, filters: QueueFilters, *, visible_agents) -> QuerySet[ProcedureVersion]:
    """Every filter except agent and intent (the groups panel lists those to pick from)."""
    qs = ProcedureVersion.objects.filter(status=Status.CANDIDATE, procedure__agent__in=visible_agents)
    return apply_filters(qs, user, filters)


def apply_filters(qs: QuerySet[ProcedureVersion], user, filters: QueueFilters) -> QuerySet[ProcedureVersion]:
    """The queue's filters except agent and intent, on any version queryset (search uses them too)."""
    if filters.assigned:
        live = Exists(CandidateClaim.objects.filter(version=OuterRef("pk"), expires_at__gt=timezone.now()))
        if filters.assigned == "me":
            qs = qs.filter(
                pk__in=CandidateClaim.objects.filter(assignee=user, expires_at__gt=timezone.now()).values("version_id")
            )
        else:
            qs = qs.filter(~live)
    if filters.quarantined == "yes":
        qs = qs.filter(quarantined=True)
    elif filters.quarantined == "no":
        qs = qs.filter(quarantined=False)
    if filters.passing == "yes":
        qs = qs.filter(_passing_eval_exists())
    elif filters.passing == "no":
        qs = qs.filter(~_passing_eval_exists())
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
    """Counts per agent and intent, under every filter but agent/intent: one GROUP BY on the intent
    id (the intent fixes the agent), then the names from the intents table."""
    rows = (
        _filtered(user, filters, visible_agents=visible_agents)
        .values("procedure__intent_id")
        .annotate(n=Count("id"), q=Count("id", filter=Q(quarantined=True)))
        .order_by()
    )
    counts = {row["procedure__intent_id"]: (row["n"], row["q"]) for row in rows}
    if not counts:
        return []
    groups: dict[str, AgentGroups] = {}
    for intent_id, intent_name, agent_name in (
        Intent.objects.filter(pk__in=counts).order_by("agent__name", "name").values_list("pk", "name", "agent__name")
    ):
        n, q = counts[intent_id]
        agent = groups.setdefault(agent_name, AgentGroups(agent_name))
        agent.count += n
        agent.quarantined += q
        agent.intents.append(QueueGroup(agent_name, intent_name, n, q))
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
_SESSION_ID_KEYS = ("sessionIds", "sessions", "session_ids", "exampleSessions")


def evidence_session_ids(evidence: dict[str, Any]) -> list[str]:
    for key in _SESSION_ID_KEYS:
        value = evidence.get(key)
        if isinstance(value, list):
            ids = [
                item if isinstance(item, (str, int)) and not isinstance(item, bool)
                else (item.get("sessionId") or item.get("session_id") or item.get("id")) if isinstance(item, dict)
                else None
                for item in value
            ]
            return [str(i) for i in ids if i not in (None, "")]
    return []


def evidence_sessions(version: ProcedureVersion) -> list[AgentSession]:
    """Example sessions named in the evidence, for evidence that carries no excerpts of its own
    (the miner stores them inline; an import may only name sessions). Only the redacted excerpts
    are shown."""
    from reviews.panels import inline_excerpts

    if inline_excerpts(version.evidence or {}):
        return []
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


# ------------------------------------------------------------------------------------------- operations


def version_missing_tools(version: ProcedureVersion, agent: Agent) -> list[str]:
    """The agent API's own load-time check (library.serving), so the operations pages and the JSON
    agree on what is refused at load."""
    return missing_tools(required=list(version.required_tools), available=list(agent.tools))


def served_and_refused(agent: Agent) -> tuple[list[ProcedureVersion], list[tuple[ProcedureVersion, list[str]]]]:
    """The active set as the agent receives it: ACTIVE versions whose required tools the agent has
    (served), and ACTIVE versions refused at load with the tools they miss. Read-only: unlike an
    agent's fetch (serving.active_set_for_agent) looking at this records no refusal and raises no
    alert."""
    served: list[ProcedureVersion] = []
    refused: list[tuple[ProcedureVersion, list[str]]] = []
    if not agent.procedural_memory_enabled:
        return [], []
    for version in active_versions_for_agent(agent):
        missing = version_missing_tools(version, agent)
        if missing:
            refused.append((version, missing))
        else:
            served.append(version)
    return served, refused


def agents_overview(agents: QuerySet[Agent]) -> list[Agent]:
    """The agents with `active` and `candidates` version counts and `refused_count`, the ACTIVE
    versions whose required tools the agent lacks (three queries whatever the number of agents)."""
    agents = list(
        agents.select_related("namespace").annotate(
            active=Count("procedures__versions", filter=Q(procedures__versions__status=Status.ACTIVE)),
            candidates=Count("procedures__versions", filter=Q(procedures__versions__status=Status.CANDIDATE)),
        )
    )
    tools = {a.pk: set(a.tools) for a in agents}
    refused: dict[int, int] = {}
    for row in ProcedureVersion.objects.filter(procedure__agent__in=agents, status=Status.ACTIVE).values(
        "procedure__agent_id", "required_tools"
    ):
        agent_id = row["procedure__agent_id"]
        refused[agent_id] = refused.get(agent_id, 0) + bool(set(row["required_tools"]) - tools[agent_id])
    for agent in agents:
        agent.refused_count = refused.get(agent.pk, 0)
    return agents
