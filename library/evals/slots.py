"""The per-agent concurrency limit for runners that call out (HTTP, model replay): at most
`Agent.eval_concurrency` calls to one agent at a time, across every worker process and machine.

On PostgreSQL the slots are session-level advisory locks (`pg_try_advisory_lock`), released
explicitly and, if a worker dies, by PostgreSQL when its connection closes. On SQLite (the
one-machine demo) they are `flock`ed files under PROCMEM_VAR_DIR/eval-slots/, released by the
kernel when the process dies.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection

from .errors import NoFreeSlot

NAMESPACE = 0x5E7A00  # advisory lock class id: 0x5E7A00 + slot number; object id: the agent


def _try_pg(agent_id: int, slot: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [NAMESPACE + slot, agent_id])
        return bool(cursor.fetchone()[0])


def _release_pg(agent_id: int, slot: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [NAMESPACE + slot, agent_id])


@contextmanager
def agent_slot(*, agent_id: int, limit: int, wait_seconds: float) -> Iterator[int]:
    """Holds one of the agent's `limit` slots while the block runs; waits (with backoff) up to
    `wait_seconds` for one, then raises NoFreeSlot. Yields the slot number."""
    deadline = time.monotonic() + wait_seconds
    delay = 0.01
    use_pg = connection.vendor == "postgresql"
    folder = Path(getattr(settings, "VAR_DIR", "var")) / "eval-slots"
    while True:
        for slot in range(limit):
            if use_pg:
                if _try_pg(agent_id, slot):
                    try:
                        yield slot
                    finally:
                        _release_pg(agent_id, slot)
                    return
            else:
                folder.mkdir(parents=True, exist_ok=True)
                handle = os.open(folder / f"agent-{agent_id}-slot-{slot}.lock", os.O_CREAT | os.O_RDWR, 0o600)
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(handle)
                    continue
                try:
                    yield slot
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)
                    os.close(handle)
                return
        if time.monotonic() >= deadline:
            raise NoFreeSlot(f"all {limit} eval slots of agent {agent_id} stayed busy for {wait_seconds:g} s")
        time.sleep(delay)
        delay = min(delay * 2, 0.5)
