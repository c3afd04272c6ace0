"""Reads beyond a plain filter."""

from __future__ import annotations

import hashlib

from django.db.models import Count, Max, QuerySet

from .coding import graph as coding_graph
from .models import Agent, AgentSession, OtlpSpan, ProcedureVersion, Status


def active_versions_for_agent(agent: Agent, *, using: str = "default") -> QuerySet[ProcedureVersion]:
    return (
        ProcedureVersion.objects.using(using)
        .filter(procedure__agent=agent, status=Status.ACTIVE)
        .select_related("procedure", "procedure__intent", "approved_by")
        .order_by("procedure__key")
    )


def active_set_hash(agent: Agent, *, using: str = "default") -> str:
    """A hash of which versions are ACTIVE for the agent (id, number, content hash) and of its tool
    list. Eval runs pin it as their baseline; approval refuses a run whose baseline has moved."""
    rows = (
        ProcedureVersion.objects.using(using)
        .filter(procedure__agent=agent, status=Status.ACTIVE)
        .order_by("procedure__key")
        .values_list("procedure__key", "number", "content_hash")
    )
    digest = hashlib.sha256()
    for key, number, chash in rows:
        digest.update(f"{key}\x1f{number}\x1f{chash}\x1e".encode())
    return digest.hexdigest()


def coding_graph_for_agent(agent: Agent) -> coding_graph.Graph:
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
    return coding_graph.build_graph(
        [coding_graph.node_for(v.procedure.key, v.preconditions or [], v.postconditions or []) for v in chosen.values()]
    )


def session_sources_for_agent(agent: Agent) -> list[dict]:
    """Where the agent's sessions came from: per channel (client, file, OTLP, hook; "" before
    channels were recorded) how many and the last received, in the channels' order; and the OTLP
    spans still waiting for their session to complete."""
    rows = {
        row["channel"]: row
        for row in AgentSession.objects.filter(agent=agent).values("channel").annotate(sessions=Count("pk"), last=Max("received_at"))
    }
    labels = dict(AgentSession.Channel.choices)
    sources = [
        {"channel": channel, "label": labels.get(channel, "Before channels were recorded"), "sessions": rows[channel]["sessions"], "last": rows[channel]["last"]}
        for channel in [*AgentSession.Channel.values, ""] if channel in rows
    ]
    pending = OtlpSpan.objects.filter(agent=agent, state=OtlpSpan.State.PENDING).count()
    if pending:
        sources.append({"channel": "otlp-pending", "label": "OTLP spans waiting for their session to complete", "sessions": pending, "last": None})
    return sources
