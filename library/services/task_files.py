"""An agent's file indexes (library/models/sessions.py CodingFileIndex): what its stored sessions of
each repository saw, rebuilt as a whole from the sessions' tool calls (already redacted at import)."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from ..coding.families import Trace, repository_of
from ..coding.file_index import FileIndex, observations
from ..coding.measure import traces_from_rows
from ..models import Agent, AgentSession, CodingFileIndex, MiningRun


def _stored_traces(agent: Agent) -> list[Trace]:
    rows = (
        AgentSession.objects.filter(agent=agent)
        .order_by("pk")
        .values_list("session_id", "task_key", "task", "resolved", "tool_calls")
    )
    return traces_from_rows(rows.iterator(chunk_size=200))


def file_index_digest(repository: str, served: dict) -> str:
    """What the served index's strong ETag is built from: its repository, files and definitions."""
    text = json.dumps([repository, served["files"], served["definitions"]], separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def file_indexes_rebuild(
    *, agent: Agent, traces: Sequence[Trace] | None = None, mining_run: MiningRun | None = None
) -> list[CodingFileIndex]:
    """Rebuilds the agent's file index of each repository its sessions (`traces`, default: every
    stored session) belong to (`families.repository_of` their task key, as a mined family records it),
    in one transaction with the agent's row locked: indexes of repositories no session belongs to any
    more are deleted, those whose content did not change are left as they are. Only
    repository-relative source paths and the Python identifiers seen defined in them are kept
    (file_index.repository_path)."""
    traces = _stored_traces(agent) if traces is None else traces
    by_repository: dict[str, list[Trace]] = defaultdict(list)
    for trace in traces:
        by_repository[repository_of(trace.task_key).lower()].append(trace)
    built = {}
    for repository, members in by_repository.items():
        index = FileIndex((observations(t.calls) for t in members), edited=(p for t in members for p in t.edited))
        if index.files:
            built[repository] = (index.to_dict(), len(members))
    now = timezone.now()
    kept: list[CodingFileIndex] = []
    with transaction.atomic():
        Agent.objects.select_for_update().filter(pk=agent.pk).first()
        existing = {row.repository: row for row in CodingFileIndex.objects.filter(agent=agent)}
        CodingFileIndex.objects.filter(agent=agent).exclude(repository__in=list(built)).delete()
        for repository, (served, sessions) in sorted(built.items()):
            digest = file_index_digest(repository, served)
            row = existing.get(repository)
            if row is not None and row.digest == digest and row.sessions == sessions:
                kept.append(row)
                continue
            row = row or CodingFileIndex(agent=agent, repository=repository)
            row.files = served["files"]
            row.definitions = served["definitions"]
            row.sessions = sessions
            row.digest = digest
            row.mining_run = mining_run
            row.built_at = now
            row.save()
            kept.append(row)
    return kept
