"""An import's reading, parsing and redaction, file by file, in this process or in worker processes.

`import_outcomes` yields, for every item of every session file, either the session prepared to
store (parsed, classified, redacted: store.session_prepare) or why it was refused, in the order of
the files and of the items in them. Storing stays with the caller, in its transactions.

A directory or an archive of many session files (mini-swe-agent keeps one trajectory per file) is
spread over worker processes: parsing and redaction are pure Python work per session, and the
database is only touched by the caller. The workers are forked from this process, so they share
its code and settings; they never use its database connections (they never query). At most a few
files per worker are in flight, so memory stays bounded by the files' sizes, not their number.
Standard input, a single file and files larger than WHOLE_FILE_BYTES are read here, streamed.
"""

from __future__ import annotations

import gc
import io
import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import IO, Any

from django.db import connection

from ..redaction.echo import RedactionCache
from .formats import ImportOptions, ItemInvalid, parse_item
from .reader import WHOLE_FILE_BYTES, read_items
from .store import PreparedSession, prepared_json_written, raw_retention_days, session_prepare

FILES_IN_FLIGHT_PER_WORKER = 16


@dataclass(frozen=True)
class Refused:
    line: int
    message: str
    fatal: bool = False  # nothing after it in the file could be read


@dataclass(frozen=True)
class ImportSpec:
    """What every file of one import is read with (plain data: it is handed to the workers)."""

    fmt: str = "auto"
    options: ImportOptions = field(default_factory=ImportOptions)
    redaction_patterns: Any = None
    keep_raw: bool | None = None  # None: PROCMEM_RAW_RETENTION_DAYS decides
    # the workers write the prepared sessions' jsonb fields (store.prepared_json_written): set by
    # import_outcomes where the store writes them so (PostgreSQL)
    json_written: bool = False


Outcome = PreparedSession | Refused


def import_workers() -> int:
    """How many worker processes an import of many files uses: PROCMEM_IMPORT_WORKERS, else one per
    CPU (at most 8); 1 reads everything in this process."""
    configured = os.environ.get("PROCMEM_IMPORT_WORKERS", "").strip()
    if configured:
        try:
            workers = int(configured)
        except ValueError:
            raise ValueError(f"PROCMEM_IMPORT_WORKERS must be a whole number, got {configured!r}") from None
        if workers < 1:
            raise ValueError(f"PROCMEM_IMPORT_WORKERS must be at least 1, got {workers}")
        return workers
    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def file_outcomes(
    stream: IO[bytes],
    spec: ImportSpec,
    cache: RedactionCache | None = None,
    *,
    on_bytes: Callable[[int], None] | None = None,
    size: int | None = None,
) -> Iterator[Outcome]:
    """The outcome of each item of one session file, in order."""
    for item in read_items(stream, on_bytes=on_bytes, size=size):
        if item.error:
            yield Refused(item.line, item.error, item.fatal)
            continue
        try:
            session = parse_item(item.value, fmt=spec.fmt, options=spec.options, texts_checked=item.texts_checked)
        except ItemInvalid as exc:
            yield Refused(item.line, (f"({exc.session_id}) " if exc.session_id else "") + str(exc))
            continue
        yield session_prepare(session, redaction_patterns=spec.redaction_patterns, keep_raw=spec.keep_raw, cache=cache)


def import_outcomes(
    sources: Iterable[tuple[str, IO[bytes], int | None]],
    spec: ImportSpec,
    *,
    workers: int = 1,
    on_bytes: Callable[[int], None] | None = None,
    on_idle: Callable[[bool], None] | None = None,
) -> Iterator[tuple[str, Outcome]]:
    """(file name, outcome) for every item of every source (name, binary stream, size or None), in
    order. With workers > 1, files of known size up to WHOLE_FILE_BYTES go to worker processes once
    there is more than one of them; the results are the same as with one.

    `on_idle(last)`: called, with workers, once every file has been read, whenever the next file's
    outcomes are not ready yet (last False), and once more after the last file's outcomes while
    the workers exit (last True): the caller may store what it holds meanwhile. Else the last
    files' sessions were stored after the workers had finished, one core idle (the other
    repositories' 140 files: 40 sessions, 0.04-0.05 s, then 0.01-0.03 s waiting for the workers
    to exit)."""
    if spec.keep_raw is None:  # read once for the import, not per session
        spec = replace(spec, keep_raw=raw_retention_days() > 0)
    cache = RedactionCache()  # commands, outputs and requests recur across the sessions of an import
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        for name, stream, size in sources:
            for outcome in file_outcomes(stream, spec, cache, on_bytes=on_bytes, size=size):
                yield name, outcome
        return
    pool: ProcessPoolExecutor | None = None
    pending: deque[tuple[str, Future | bytes]] = deque()  # files read, in order; bytes: not sent yet
    closing: list[threading.Thread] = []  # the pool's shutdown, once every outcome is in

    def results(entry: tuple[str, Future | bytes]) -> Iterator[tuple[str, Outcome]]:
        name, work = entry
        outcomes = (
            file_outcomes(io.BytesIO(work), spec, cache, size=len(work)) if isinstance(work, bytes) else work.result()
        )
        for outcome in outcomes:
            yield name, outcome

    def tail() -> Iterator[tuple[str, Outcome]]:
        """The files in flight once every file is read."""
        while pending:
            name, work = pending.popleft()
            if on_idle is not None and isinstance(work, Future) and not work.done():
                on_idle(False)
            if isinstance(work, Future):
                outcomes = work.result()
                if pool is not None and not pending:  # nothing left to send: the workers exit meanwhile
                    closing.append(threading.Thread(target=pool.shutdown, name="import-workers-exit"))
                    closing[0].start()
                for outcome in outcomes:
                    yield name, outcome
            else:
                yield from results((name, work))
        if on_idle is not None and pool is not None:
            on_idle(True)

    try:
        try:
            for name, stream, size in sources:
                if size is None or size > WHOLE_FILE_BYTES:
                    while pending:  # keep the order: what was read before comes first
                        yield from results(pending.popleft())
                    for outcome in file_outcomes(stream, spec, cache, on_bytes=on_bytes, size=size):
                        yield name, outcome
                    continue
                data = stream.read()
                if on_bytes is not None and data:
                    on_bytes(len(data))
                if pool is None and not pending:
                    pending.append((name, data))  # one file alone is read here; a second one starts the pool
                    continue
                if pool is None:
                    pool = ProcessPoolExecutor(
                        workers,
                        mp_context=multiprocessing.get_context("fork"),
                        initializer=_worker_start,
                        initargs=(replace(spec, json_written=connection.vendor == "postgresql"),),
                    )
                    first_name, first_data = pending.popleft()
                    pending.appendleft((first_name, pool.submit(_worker_read, first_data)))
                pending.append((name, pool.submit(_worker_read, data)))
                while len(pending) > workers * FILES_IN_FLIGHT_PER_WORKER:
                    yield from results(pending.popleft())
        except Exception:
            # the reading failed (a broken archive): what was read before it is still handed over
            while pending:
                yield from results(pending.popleft())
            raise
        yield from tail()
    finally:
        if closing:
            closing[0].join()
        elif pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


# The worker processes' state: the import's spec and a redaction cache of their own.
_worker_spec: ImportSpec | None = None
_worker_cache: RedactionCache | None = None


def _worker_start(spec: ImportSpec) -> None:
    global _worker_spec, _worker_cache
    _worker_spec, _worker_cache = spec, RedactionCache()


def _worker_read(data: bytes) -> list[Outcome]:
    """The outcomes of one file. The cycle collector waits until the file is done: while it is
    read, the parsed file (thousands of dicts and lists) is alive, and each collection of the
    young objects went through it again. In the two workers of a fresh import of the other
    repositories' 140 files: 150-158 young and 13-14 middle collections, 0.021-0.027 s of CPU,
    against 76-87 and 6-8, 0.016-0.020 s, with the pause. The collections resume at the worker's
    next allocation, with the file let go; a reference cycle made while reading lives until then."""
    assert _worker_spec is not None
    gc.disable()
    try:
        outcomes = list(file_outcomes(io.BytesIO(data), _worker_spec, _worker_cache, size=len(data)))
        if _worker_spec.json_written:
            outcomes = [prepared_json_written(o) if isinstance(o, PreparedSession) else o for o in outcomes]
        return outcomes
    finally:
        gc.enable()
