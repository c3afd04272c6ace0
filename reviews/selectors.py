"""Reads of the review workspace: the queue with its filters, groups and sorting; what a candidate
page shows next to the version (the active version, siblings, the latest eval run, evidence); the
active set as the operations pages show it.

Every function here issues a fixed number of queries whatever the size of the queue (tested with
`django_assert_num_queries` at 10 and 1,000 candidates)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from django.db import connections
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.db.models.lookups import GreaterThan, LessThan
from django.utils import timezone

from library.models import Agent, AgentSession, EvalRun, Intent, Procedure, ProcedureVersion, Status
from library.permissions import approve_scope
from library.selectors import active_versions_for_agent, evidence_session_ids
from library.serving.load_refusals import missing_tools
from reviews.access import of_agents
from reviews.models import CandidateClaim
from reviews.panels import inline_excerpts

# Within a segment of the queue (quarantined or not; for "group" also one intent, the segments in
# agent and intent name order) each sort is a key that a partial index on the candidates serves
# (library/migrations/0015_queue_indexes.py): the queue reads a page by walking that index from
# the previous page's last row (keyset), never sorting the whole queue. `neg_support` is the
# evidence's support negated, so that "strongest first, then oldest" is one ascending key.
SORTS = {
    "group": ("neg_support", "created_at", "id"),
    "evidence": ("neg_support", "created_at", "id"),
    "oldest": ("created_at", "id"),
    "newest": ("-created_at", "-id"),
}
SORT_LABELS = {
    "group": "agent and intent",
    "evidence": "evidence strength",
    "oldest": "oldest first",
    "newest": "newest first",
}
# Counts of the queue stop at this many per group (and the navigation's at this many in all): a
# count never walks more of the queue than a page needs. More shows as "1000+".
COUNT_CAP = 1000
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
    def from_query(cls, query) -> QueueFilters:
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


def passing_eval_exists():
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


def neg_support():
    """Minus `evidence_support()`: the expression of the queue's support index (the migration's
    SQL is compiled from this very expression, so the planner recognises it in ORDER BY)."""
    return -evidence_support()


class SubqueryCount(Subquery):
    """`(SELECT COUNT(*) FROM (<queryset>, at most `limit` rows))`: a count as an expression of
    another query."""

    template = "(SELECT COUNT(*) FROM (%(subquery)s) counted)"
    output_field = IntegerField()

    def __init__(self, queryset, limit: int | None = None):
        rows = queryset.order_by().values("pk")
        super().__init__(rows if limit is None else rows[:limit])


class CappedCount(SubqueryCount):
    """An exact count up to the cap, cap + 1 meaning "more"; costs at most cap + 1 rows of an
    index, whatever the table's size."""

    def __init__(self, queryset):
        super().__init__(queryset, COUNT_CAP + 1)


def capped_count(queryset) -> int:
    """The number of rows up to COUNT_CAP, COUNT_CAP + 1 when there are more (one query over at
    most COUNT_CAP + 1 rows)."""
    return queryset.order_by().values("pk")[: COUNT_CAP + 1].count()


def count_label(*counts: int) -> str:
    """The sum of capped counts for people: "1,000+" when any of them reached the cap."""
    capped = any(n > COUNT_CAP for n in counts)
    total = sum(min(n, COUNT_CAP) for n in counts)
    return f"{total:,}+" if capped else f"{total:,}"


def waiting_for_approver(user) -> QuerySet[ProcedureVersion]:
    """Candidates `user` could decide as approver: holds the permission and is neither the proposer
    nor the last editor. (Whether an eval passed is a separate filter.)"""
    return (
        ProcedureVersion.objects.filter(status=Status.CANDIDATE)
        .filter(approve_scope(user).as_q())
        .exclude(proposed_by=user)
        .exclude(edited_by=user)
    )


@dataclass(frozen=True)
class Segment:
    """A run of the queue that one index scan yields in order: quarantined or not, and for the
    "group" sort one intent. `rank` orders segments; `known` is how many rows it has at least."""

    rank: tuple
    quarantined: bool
    intent_id: int | None
    known: int


def _segments(filters: QueueFilters, groups: list[AgentGroups]) -> list[Segment]:
    """The queue's segments in page order (quarantined ones first), from the group counts."""
    shown = [g for agent in groups for g in agent.intents if group_selected(g, filters)]
    quarantined_first = [(True, 0), (False, 1)]
    if filters.sort != "group":
        total = sum(g.count for g in shown)
        quarantined = sum(g.quarantined for g in shown)
        return [
            Segment((order,), flag, None, quarantined if flag else max(0, total - quarantined))
            for flag, order in quarantined_first
            if (quarantined if flag else total > quarantined or any(g.capped for g in shown))
        ]
    segments = []
    for flag, order in quarantined_first:
        for g in shown:
            rows = g.quarantined if flag else max(0, g.count - g.quarantined)
            if rows or (not flag and g.capped):
                segments.append(Segment((order, g.agent, g.intent), flag, g.intent_id, rows))
    return segments


def group_selected(group: QueueGroup, filters: QueueFilters) -> bool:
    return (not filters.agent or group.agent == filters.agent) and (
        not filters.intent or group.intent == filters.intent
    )


def _keyset(sort: str, cursor: dict) -> Q:
    """Rows after the cursor's row in `sort`, as one row comparison the index can seek to."""
    if sort == "oldest":
        return Q(GreaterThan(_row(F("created_at"), F("id")), _row(Value(cursor["created_at"]), Value(cursor["pk"]))))
    if sort == "newest":
        return Q(LessThan(_row(F("created_at"), F("id")), _row(Value(cursor["created_at"]), Value(cursor["pk"]))))
    return Q(
        GreaterThan(
            _row(neg_support(), F("created_at"), F("id")),
            _row(Value(cursor["neg_support"]), Value(cursor["created_at"]), Value(cursor["pk"])),
        )
    )


def _row(*expressions) -> Func:
    # `(a, b, c)`: a row value both PostgreSQL and SQLite compare (SQLite has no ROW keyword)
    return Func(*expressions, function="", output_field=IntegerField())


def queue_page(
    user,
    filters: QueueFilters,
    *,
    visible_agents: QuerySet[Agent],
    groups: list[AgentGroups],
    after: int | None,
    size: int,
) -> tuple[list[int], bool]:
    """The ids of one page of the queue (CANDIDATE versions of visible agents, filtered and sorted,
    quarantined first) after the version `after` (None: the first page), and whether more follow.

    One query whatever the queue's length: a UNION ALL of one index-ordered, LIMITed scan per
    segment the page can reach (the group counts say how many rows each segment has, so the
    union stops at the segment that fills the page); the page's rows are loaded by
    reviews.views.queue_row.queue_rows."""
    segments = _segments(filters, groups)
    cursor = None
    if after is not None:
        cursor = (
            of_agents(ProcedureVersion.objects.filter(pk=after), visible_agents)
            .annotate(neg_support=neg_support())
            .values(
                "pk", "quarantined", "created_at", "neg_support", "procedure__agent__name", "procedure__intent__name"
            )
            .first()
        )
    if cursor is not None:
        at = (0 if cursor["quarantined"] else 1,)
        if filters.sort == "group":
            at += (cursor["procedure__agent__name"], cursor["procedure__intent__name"])
        segments = [s for s in segments if s.rank >= at]
    if filters.assigned == "me":
        claims = _my_claims(user, filters, visible_agents=visible_agents)
        if filters.agent:
            claims = claims.filter(agent__name=filters.agent)
        if filters.intent:
            claims = claims.filter(intent__name=filters.intent)
        return _page_of_my_claims(claims, filters, cursor, size)
    base = _filtered(user, filters, visible_agents=visible_agents)
    if filters.agent:
        base = base.filter(procedure__agent__name=filters.agent)
    if filters.intent:
        base = base.filter(procedure__intent__name=filters.intent)
    base = base.annotate(neg_support=neg_support())
    parts, reached = [], 0
    for number, segment in enumerate(segments):
        part = base.filter(quarantined=segment.quarantined)
        if segment.intent_id is not None:
            part = part.filter(procedure__intent_id=segment.intent_id)
        continues = cursor is not None and segment.rank == at
        if continues:
            part = part.filter(_keyset(filters.sort, cursor))
        parts.append(
            part.annotate(segment=Value(number)).order_by(*SORTS[filters.sort]).values_list("pk", "segment")[: size + 1]
        )
        reached += 0 if continues else segment.known
        if reached > size:
            break
    if not parts:
        return [], False
    if len(parts) == 1:
        rows = list(parts[0])
    elif connections[parts[0].db].features.supports_slicing_ordering_in_compound:
        rows = list(parts[0].union(*parts[1:], all=True))
    else:  # SQLite (the embedded default) refuses LIMIT inside a UNION: one query per segment
        rows = [row for part in parts for row in part]
    position = {pk: n for n, (pk, _) in enumerate(rows)}  # each part's rows come in its index order
    rows.sort(key=lambda row: (row[1], position[row[0]]))
    pks = [pk for pk, _ in rows]
    return pks[:size], len(pks) > size


def _my_claims(user, filters: QueueFilters, *, visible_agents) -> QuerySet[CandidateClaim]:
    """ "Assigned to me" as the person's live claims of candidates, under every filter: from the
    claims' own copies of their version's place in the queue (status, quarantine, support, age,
    agent, intent; kept true by triggers, reviews/migrations/0007_claim_queue_keys.py), so neither
    counting nor paging looks up each claimed version. Only "passing" and "waiting for me" ask the
    versions themselves. Like `_filtered`, every filter except agent and intent."""
    claims = of_agents(
        CandidateClaim.objects.filter(assignee=user, expires_at__gt=timezone.now(), version_status=Status.CANDIDATE),
        visible_agents,
        through="agent",
    )
    if filters.quarantined:
        claims = claims.filter(quarantined=filters.quarantined == "yes")
    if filters.passing or filters.mine:
        versions = apply_filters(ProcedureVersion.objects.all(), user, replace(filters, assigned="", quarantined=""))
        claims = claims.filter(version__in=versions.values("pk"))
    return claims


# the queue's sort keys (SORTS) as the claims' copies of them
_CLAIM_KEYS = {"neg_support": "neg_support", "created_at": "version_created_at", "id": "version_id"}


def _page_of_my_claims(
    claims: QuerySet[CandidateClaim], filters: QueueFilters, cursor: dict | None, size: int
) -> tuple[list[int], bool]:
    """One page of "assigned to me" after the cursor's version, in the queue's order (quarantined
    first; "group" by agent and intent name, as the segments; then the sort), read from the claims
    in one query: one person's live claims are few (each expires), so sorting them costs less
    than scanning the queue's indexes for the rows that are claimed."""
    keys = [("-" if key.startswith("-") else "") + _CLAIM_KEYS[key.lstrip("-")] for key in SORTS[filters.sort]]
    if filters.sort == "group":
        keys = ["agent__name", "intent__name"] + keys
    if cursor is not None:
        values = {
            "agent__name": cursor["procedure__agent__name"],
            "intent__name": cursor["procedure__intent__name"],
            "neg_support": cursor["neg_support"],
            "version_created_at": cursor["created_at"],
            "version_id": cursor["pk"],
        }
        columns = [key.lstrip("-") for key in keys]
        row, at = _row(*(F(c) for c in columns)), _row(*(Value(values[c]) for c in columns))
        within = Q(quarantined=cursor["quarantined"]) & Q(
            LessThan(row, at) if filters.sort == "newest" else GreaterThan(row, at)
        )
        claims = claims.filter(within | Q(quarantined=False) if cursor["quarantined"] else within)
    pks = list(claims.order_by("-quarantined", *keys).values_list("version_id", flat=True)[: size + 1])
    return pks[:size], len(pks) > size


def live_claim_of(version: ProcedureVersion, now) -> CandidateClaim | None:
    """The version's claim (selected with it) unless it has expired."""
    try:
        claim = version.claim
    except CandidateClaim.DoesNotExist:
        return None
    return claim if claim.expires_at > now else None


def _filtered(user, filters: QueueFilters, *, visible_agents) -> QuerySet[ProcedureVersion]:
    """Every filter except agent and intent (the groups panel lists those to pick from)."""
    qs = of_agents(ProcedureVersion.objects.filter(status=Status.CANDIDATE), visible_agents)
    return apply_filters(qs, user, filters)


def apply_filters(qs: QuerySet[ProcedureVersion], user, filters: QueueFilters) -> QuerySet[ProcedureVersion]:
    """The queue's filters except agent and intent, on any version queryset (search uses them too)."""
    if filters.assigned:
        live = Exists(CandidateClaim.objects.filter(version=OuterRef("pk"), expires_at__gt=timezone.now()))
        if filters.assigned == "me":
            # a join (one filter call, so one join): a person's live claims are few, and PostgreSQL
            # starts from them on the claims' (assignee, expires_at) index
            qs = qs.filter(claim__assignee=user, claim__expires_at__gt=timezone.now())
        else:
            qs = qs.filter(~live)
    if filters.quarantined == "yes":
        qs = qs.filter(quarantined=True)
    elif filters.quarantined == "no":
        qs = qs.filter(quarantined=False)
    if filters.passing == "yes":
        qs = qs.filter(passing_eval_exists())
    elif filters.passing == "no":
        qs = qs.filter(~passing_eval_exists())
    if filters.mine:
        qs = qs.filter(pk__in=waiting_for_approver(user).values("pk"))
    return qs


@dataclass
class QueueGroup:
    agent: str
    intent: str
    count: int  # up to COUNT_CAP exactly; COUNT_CAP + 1 means more
    quarantined: int
    intent_id: int | None = None

    @property
    def capped(self) -> bool:
        return self.count > COUNT_CAP

    @property
    def count_label(self) -> str:
        return count_label(self.count)


@dataclass
class AgentGroups:
    agent: str
    count: int = 0
    quarantined: int = 0
    intents: list[QueueGroup] = field(default_factory=list)

    @property
    def count_label(self) -> str:
        return count_label(*(g.count for g in self.intents))

    @property
    def quarantined_label(self) -> str:
        return count_label(*(g.quarantined for g in self.intents))


def _quarantined_per_intent(user, filters: QueueFilters, *, visible_agents) -> dict[int, int]:
    """The quarantined few (kept out of the library by the policy screen), counted in one pass over
    their own index, each row's intent looked up by key: a subquery PostgreSQL keeps per row,
    where a join would read every procedure of every intent."""
    intent_of = Subquery(
        of_agents(Procedure.objects.filter(pk=OuterRef("procedure_id")), visible_agents, through="agent")
        .order_by()
        .values("intent_id")[:1]
    )
    flagged = apply_filters(ProcedureVersion.objects.filter(status=Status.CANDIDATE, quarantined=True), user, filters)
    return dict(
        flagged.annotate(intent_of=intent_of)
        .order_by()
        .values("intent_of")
        .annotate(q=Count("pk"))
        .values_list("intent_of", "q")
    )


def queue_groups(user, filters: QueueFilters, *, visible_agents) -> list[AgentGroups]:
    """Counts per agent and intent, under every filter but agent/intent: candidates capped at
    COUNT_CAP (one query over the visible intents, each count reading at most COUNT_CAP + 1 rows
    of an index, so it costs the same for 1,000 or 1,000,000 candidates), quarantined ones exact
    (one query over those alone). Intents without candidates are left out."""
    intents = of_agents(Intent.objects.all(), visible_agents, through="agent").order_by("agent__name", "name")
    if filters.assigned == "me":
        # one person's claims are few: count them all, exactly, from the claims alone
        exact = {
            row["intent_id"]: (row["n"], row["q"])
            for row in _my_claims(user, filters, visible_agents=visible_agents)
            .values("intent_id")
            .annotate(n=Count("pk"), q=Count("pk", filter=Q(quarantined=True)))
            .order_by()
        }
        rows = [
            (pk, name, agent, exact[pk][0])
            for pk, name, agent in intents.filter(pk__in=exact).values_list("pk", "name", "agent__name")
        ]
        quarantined = {pk: q for pk, (_, q) in exact.items()}
    else:
        candidates = _filtered(user, filters, visible_agents=visible_agents)
        rows = intents.annotate(n=CappedCount(candidates.filter(procedure__intent_id=OuterRef("pk")))).values_list(
            "pk", "name", "agent__name", "n"
        )
        quarantined = _quarantined_per_intent(user, filters, visible_agents=visible_agents)
    groups: dict[str, AgentGroups] = {}
    for intent_id, intent_name, agent_name, n in rows:
        if not n:
            continue
        q = quarantined.get(intent_id, 0)
        agent = groups.setdefault(agent_name, AgentGroups(agent_name))
        agent.count += n
        agent.quarantined += q
        agent.intents.append(QueueGroup(agent_name, intent_name, n, q, intent_id))
    return list(groups.values())


def filter_choices(*, visible_agents) -> dict[str, list[str]]:
    agents = list(visible_agents.order_by("name").values_list("name", flat=True))
    intents = sorted(
        set(of_agents(Intent.objects.all(), visible_agents, through="agent").values_list("name", flat=True))
    )
    return {"agents": agents, "intents": intents}


# ------------------------------------------------------------------------------------------- the candidate page


def active_version_of(procedure: Procedure) -> ProcedureVersion | None:
    return (
        ProcedureVersion.objects.filter(procedure=procedure, status=Status.ACTIVE).select_related("approved_by").first()
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
    """The newest approval run on this version's exact content (runs of older content no longer
    count; retirement and rollback evals are shown on their confirm pages)."""
    return (
        EvalRun.objects.filter(version=version, content_hash=version.content_hash, kind=EvalRun.Kind.APPROVAL)
        .select_related("started_by")
        .order_by("-created_at", "-id")
        .first()
    )


EXCERPT_LIMIT = 5


def evidence_sessions(version: ProcedureVersion) -> list[AgentSession]:
    """Example sessions named in the evidence, for evidence that carries no excerpts of its own
    (the miner stores them inline; an import may only name sessions). Only the redacted excerpts
    are shown."""

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
    """The agent API's own load-time check (library.serving.active_set), so the operations pages and the JSON
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
