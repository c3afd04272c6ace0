"""Reads beyond a plain filter."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet, Value

from procmem_client.coding import Graph, build_graph, node_for

from .models import PRODUCTION, Agent, AgentSession, OtlpSpan, ProcedureRelease, ProcedureVersion, Status


def active_versions_for_agent(agent: Agent, *, using: str = "default") -> QuerySet[ProcedureVersion]:
    return (
        ProcedureVersion.objects.using(using)
        .filter(procedure__agent=agent, status=Status.ACTIVE)
        .select_related("procedure", "procedure__intent", "approved_by")
        .order_by("procedure__key")
    )


def active_set_hash(agent: Agent, *, using: str = "default") -> str:
    """A hash of which versions are ACTIVE for the agent (key, number, content hash): production's
    set. Eval runs pin their target environment's set hash (`environment_set_hash`) as their
    baseline; approval and promotion refuse a run whose baseline has moved."""
    return environment_set_hash(agent, PRODUCTION, using=using)


def environment_set_hash(agent: Agent, environment: str = PRODUCTION, *, using: str = "default") -> str:
    """A hash of the set `environment` serves the agent (`environment_versions_for_agent`): per
    procedure key, in the database's key order, the number and content hash of its version. One
    query; two environments that serve the same versions have the same hash, and production's is
    the hash eval runs pinned before they named an environment."""
    rows = ProcedureVersion.objects.using(using).filter(procedure__agent=agent)
    if environment == PRODUCTION:
        rows = rows.filter(status=Status.ACTIVE).annotate(released=Value(False))
    else:
        released = ProcedureRelease.objects.filter(version=OuterRef("pk"), environment=environment)
        rows = rows.annotate(released=Exists(released)).filter(Q(status=Status.ACTIVE) | Q(released=True))
    chosen: dict[str, tuple[int, str]] = {}
    for key, number, chash, is_released in rows.order_by("procedure__key").values_list(
        "procedure__key", "number", "content_hash", "released"
    ):
        if is_released or key not in chosen:  # the released version replaces the ACTIVE one in place
            chosen[key] = (number, chash)
    digest = hashlib.sha256()
    for key, (number, chash) in chosen.items():
        digest.update(f"{key}\x1f{number}\x1f{chash}\x1e".encode())
    return digest.hexdigest()


def environment_versions_for_agent(
    agent: Agent, environment: str = PRODUCTION, *, using: str = "default"
) -> list[ProcedureVersion]:
    """The versions `environment` serves the agent, as library/releases.served_for derives them for a
    fetch without a session id: production, the ACTIVE versions (a running rollout's control arm);
    another environment, per procedure the version released to it (an APPROVED version), else the
    ACTIVE one. In procedure key order, with procedure, intent and approver selected. (The served
    set then keeps what the agent's namespace and tools allow: serving.served_from_versions.)"""
    chosen = {v.procedure_id: v for v in active_versions_for_agent(agent, using=using)}
    if environment != PRODUCTION:
        released = (
            ProcedureVersion.objects.using(using)
            .filter(releases__environment=environment, releases__procedure__agent=agent)
            .select_related("procedure", "procedure__intent", "approved_by")
        )
        for version in released:
            chosen[version.procedure_id] = version
    return sorted(chosen.values(), key=lambda v: v.procedure.key)


def coding_graph_for_agent(agent: Agent) -> Graph:
    """Producer → consumer links between a coding agent's procedures: per procedure its ACTIVE
    version, or else its newest CANDIDATE (what a reviewer is about to add)."""
    chosen: dict[int, ProcedureVersion] = {}
    versions = (
        ProcedureVersion.objects.filter(procedure__agent=agent, status__in=[Status.ACTIVE, Status.CANDIDATE])
        .select_related("procedure")
        .only("procedure__key", "status", "number", "preconditions", "postconditions")
        .order_by("procedure_id", "-number")
    )
    for version in versions:
        current = chosen.get(version.procedure_id)
        if current is None or (version.status == Status.ACTIVE and current.status != Status.ACTIVE):
            chosen[version.procedure_id] = version
    return build_graph(
        [node_for(v.procedure.key, v.preconditions or [], v.postconditions or []) for v in chosen.values()]
    )


def session_sources_for_agent(agent: Agent) -> list[dict]:
    """Where the agent's sessions came from: per channel (client, file, OTLP, hook; "" before
    channels were recorded) how many and the last received, in the channels' order; and the OTLP
    spans still waiting for their session to complete."""
    rows = {
        row["channel"]: row
        for row in AgentSession.objects.filter(agent=agent)
        .values("channel")
        .annotate(sessions=Count("pk"), last=Max("received_at"))
    }
    labels = dict(AgentSession.Channel.choices)
    sources = [
        {
            "channel": channel,
            "label": labels.get(channel, "Before channels were recorded"),
            "sessions": rows[channel]["sessions"],
            "last": rows[channel]["last"],
        }
        for channel in [*AgentSession.Channel.values, ""]
        if channel in rows
    ]
    pending = OtlpSpan.objects.filter(agent=agent, state=OtlpSpan.State.PENDING).count()
    if pending:
        sources.append(
            {
                "channel": "otlp-pending",
                "label": "OTLP spans waiting for their session to complete",
                "sessions": pending,
                "last": None,
            }
        )
    return sources


_SESSION_ID_KEYS = ("sessionIds", "sessions", "session_ids", "exampleSessions")


def evidence_session_ids(evidence: dict[str, Any]) -> list[str]:
    """The ids of the sessions a version's evidence names (the miner's `sessionIds`; an import's
    `sessions` and the like), in its order."""
    for key in _SESSION_ID_KEYS:
        value = evidence.get(key)
        if isinstance(value, list):
            ids = [
                item
                if isinstance(item, (str, int)) and not isinstance(item, bool)
                else (item.get("sessionId") or item.get("session_id") or item.get("id"))
                if isinstance(item, dict)
                else None
                for item in value
            ]
            return [str(i) for i in ids if i not in (None, "")]
    return []
