"""An agent's file indexes as served: the files a coding task's words point to (procmem_client.task_files),
for the select endpoint's `taskFiles` and `GET …/file-index`.

The indexes are built by the agent's mining runs (library/services/task_files.py) and read here through
the "readonly" alias. Each process keeps the last read per agent, keyed by a fingerprint of the
agent's index rows (repository, content digest, sessions read), which one narrow query reads; the
body and its strong ETag are built once per fingerprint and API version.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from procmem_client.task_files import MIN_LETTERS, PATH_WEIGHT, TASK_FILES, TaskFileIndex

from ..models import Agent, CodingFileIndex
from .active_set import READONLY_ALIAS


@dataclass
class ServedIndexes:
    """One agent's indexes as read at `fingerprint`: {repository: index}, and the served body per API
    version (built on first use)."""

    agent_id: int
    agent: str
    fingerprint: str
    indexes: dict[str, TaskFileIndex]
    entries: list[dict[str, Any]]
    _bodies: dict[str, tuple[bytes, str]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def body(self, api_version: str) -> tuple[bytes, str]:
        """The JSON body of GET …/file-index and its strong ETag."""
        with self._lock:
            cached = self._bodies.get(api_version)
            if cached is None:
                data = {
                    "apiVersion": api_version,
                    "agent": self.agent,
                    "taskFiles": TASK_FILES,
                    "minLetters": MIN_LETTERS,
                    "pathWeight": PATH_WEIGHT,
                    "indexes": self.entries,
                }
                body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
                etag = '"fi-' + hashlib.sha256(body).hexdigest()[:40] + '"'
                cached = self._bodies[api_version] = (body, etag)
            return cached


_cache: dict[int, ServedIndexes] = {}
_cache_lock = threading.Lock()


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def _fingerprint(rows: Sequence[tuple[str, str, int]]) -> str:
    return hashlib.sha256(json.dumps(sorted(rows), separators=(",", ":")).encode()).hexdigest()


def file_indexes_for_agent(*, agent: Agent, using: str = READONLY_ALIAS) -> ServedIndexes:
    """The agent's file indexes as stored now (this process's copy when its rows did not change)."""
    rows = list(
        CodingFileIndex.objects.using(using)
        .filter(agent_id=agent.pk)
        .order_by("repository")
        .values_list("repository", "digest", "sessions")
    )
    fingerprint = _fingerprint(rows)
    with _cache_lock:
        cached = _cache.get(agent.pk)
    if cached is not None and cached.fingerprint == fingerprint and cached.agent == agent.name:
        return cached
    stored = (
        CodingFileIndex.objects.using(using)
        .filter(agent_id=agent.pk)
        .order_by("repository")
        .values_list("repository", "digest", "sessions", "files", "definitions")
    )
    entries: list[dict[str, Any]] = []
    indexes: dict[str, TaskFileIndex] = {}
    read: list[tuple[str, str, int]] = []
    for repository, digest, sessions, files, definitions in stored:
        entry = {"repository": repository, "sessions": sessions, "files": files, "definitions": definitions}
        indexes[repository] = TaskFileIndex.from_dict(entry)
        entries.append(entry)
        read.append((repository, digest, sessions))
    served = ServedIndexes(
        agent_id=agent.pk, agent=agent.name, fingerprint=_fingerprint(read), indexes=indexes, entries=entries
    )
    with _cache_lock:
        _cache[agent.pk] = served
    return served
