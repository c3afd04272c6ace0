"""An import's reading, parsing and redaction, file by file, in this process or with worker processes.

`import_outcomes` yields, for every item of every session file, either the session prepared to
store (parsed, classified, redacted: store.session_prepare) or why it was refused, in the order of
the files and of the items in them. Storing stays with the caller, in its transactions.

A directory or an archive of many session files (mini-swe-agent keeps one trajectory per file) is
spread over processes: parsing and redaction are pure Python work per session, and the database is
only touched by the caller. This process is one of them: it reads the files, hands them to the
workers - forked from it, so they share its code and settings and never use its database
connections - and, whenever the next file's outcomes are not ready and it holds nothing to store,
prepares the oldest file no worker has started yet itself. The files reach the workers through
memory mapped before they were forked (SharedFiles): only where a file is goes through the pipe.
At most a few files per process are in flight, so memory stays bounded by the files' sizes, not
their number. Standard input, a single file and files larger than WHOLE_FILE_BYTES are read here,
streamed.
"""

from __future__ import annotations

import gc
import io
import mmap
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
# the memory the files reach the workers through (SharedFiles), a ring the files in flight go round:
# theirs take 4-8 MB on the other repositories' trajectories (16 files per process, 2 processes); a
# file that does not fit while the others are in flight goes through the pipe
SHARED_FILES_BYTES = 16 << 20


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
    """How many processes prepare the files of an import of many files, this one included:
    PROCMEM_IMPORT_WORKERS, else one per CPU (at most 8); 1 reads everything in this process."""
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
    order. With workers > 1, files of known size up to WHOLE_FILE_BYTES are prepared by this process
    and workers - 1 worker processes once there is more than one of them; the results are the same
    as with one.

    `on_idle(last)`: called, with workers, once every file has been read, whenever the next file's
    outcomes are not ready yet (last False), before this process prepares a file itself, and once
    more after the last file's outcomes while the workers exit (last True): the caller may store
    what it holds meanwhile. Else the last files' sessions were stored after the workers had
    finished, one core idle (the other repositories' 140 files: 40 sessions, 0.04-0.05 s, then
    0.01-0.03 s waiting for the workers to exit)."""
    if spec.keep_raw is None:  # read once for the import, not per session
        spec = replace(spec, keep_raw=raw_retention_days() > 0)
    cache = RedactionCache()  # commands, outputs and requests recur across the sessions of an import
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        for name, stream, size in sources:
            for outcome in file_outcomes(stream, spec, cache, on_bytes=on_bytes, size=size):
                yield name, outcome
        return
    pool: ProcessPoolExecutor | None = None
    shared: SharedFiles | None = None
    pending: deque[_File] = deque()  # the files read and not handed over yet, in order
    closing: list[threading.Thread] = []  # the pool's shutdown, once every outcome is in

    def prepare_here() -> bool:
        """Prepares the oldest file no worker has started in this process; False if there is none.
        The executor marks a future running when it puts the file in a worker's queue: a file whose
        future is not running yet is claimed here (SharedFiles.claim), and the worker that gets it
        later leaves it. (Should the executor hand it over between the test and the claim, the
        worker prepares it too: the outcomes are the same, and those prepared here are used.)"""
        for file in pending:
            future = file.future
            if file.outcomes is None and file.span is not None and not (future.running() or future.done()):
                shared.claim(file.span)
                data = shared.read(file.span)
                file.outcomes = list(file_outcomes(io.BytesIO(data), spec, cache, size=len(data)))
                return True
        return False

    def ready(file: _File, *, idle: bool = False) -> None:
        """Waits for the file's outcomes, preparing other files here (and, `idle`, letting the caller
        store) meanwhile."""
        while file.outcomes is None and file.future is not None and not file.future.done():
            if idle and on_idle is not None:
                on_idle(False)
                if file.future.done():
                    break
            if not prepare_here():
                break

    def results(file: _File) -> Iterator[tuple[str, Outcome]]:
        """The outcomes of the first file in `pending`, taken out of it."""
        ready(file)
        pending.popleft()
        if file.outcomes is not None:
            outcomes: Iterable[Outcome] = file.outcomes
        elif file.future is not None:
            outcomes = file.future.result()
        else:
            outcomes = file_outcomes(io.BytesIO(file.data), spec, cache, size=len(file.data))
        if file.span is not None:
            # a file prepared here keeps its memory until its worker has seen the claim
            shared.release(file.span, after=file.future if file.outcomes is not None else None)
        for outcome in outcomes:
            yield file.name, outcome

    def tail() -> Iterator[tuple[str, Outcome]]:
        """The files in flight once every file is read."""
        while pending:
            file = pending[0]
            ready(file, idle=True)
            if pool is not None and len(pending) == 1 and not closing:
                # nothing left to send: the workers exit while the last outcomes are handed over
                outcomes = list(results(file))
                closing.append(threading.Thread(target=pool.shutdown, name="import-workers-exit"))
                closing[0].start()
                yield from outcomes
            else:
                yield from results(file)
        if on_idle is not None and pool is not None:
            on_idle(True)

    def send(file: _File) -> None:
        file.span = shared.put(file.data)
        if file.span is not None:
            file.future, file.data = pool.submit(_worker_read_shared, file.span), None
        else:  # the shared memory is full, or the file larger than it: through the pipe
            file.future, file.data = pool.submit(_worker_read, file.data), None

    try:
        try:
            for name, stream, size in sources:
                if size is None or size > WHOLE_FILE_BYTES:
                    while pending:  # keep the order: what was read before comes first
                        yield from results(pending[0])
                    for outcome in file_outcomes(stream, spec, cache, on_bytes=on_bytes, size=size):
                        yield name, outcome
                    continue
                data = stream.read()
                if on_bytes is not None and data:
                    on_bytes(len(data))
                file = _File(name, data)
                if pool is None and not pending:
                    pending.append(file)  # one file alone is read here; a second one starts the pool
                    continue
                if pool is None:
                    shared = SharedFiles(SHARED_FILES_BYTES)  # before the fork: the workers map it too
                    pool = ProcessPoolExecutor(
                        workers - 1,
                        mp_context=multiprocessing.get_context("fork"),
                        initializer=_worker_start,
                        initargs=(replace(spec, json_written=connection.vendor == "postgresql"), shared),
                    )
                    send(pending[0])
                send(file)
                pending.append(file)
                while len(pending) > workers * FILES_IN_FLIGHT_PER_WORKER:
                    yield from results(pending[0])
        except Exception:
            # the reading failed (a broken archive): what was read before it is still handed over
            while pending:
                yield from results(pending[0])
            raise
        yield from tail()
    finally:
        if closing:
            closing[0].join()
        elif pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if shared is not None:
            shared.close()


class _File:
    """A file read for an import, until its outcomes are handed over: its bytes while no worker has
    them, where they are in the shared memory, the worker's future, or the outcomes prepared here."""

    __slots__ = ("name", "data", "span", "future", "outcomes")

    def __init__(self, name: str, data: bytes):
        self.name, self.data = name, data
        self.span: tuple[int, int] | None = None
        self.future: Future | None = None
        self.outcomes: list[Outcome] | None = None


class SharedFiles:
    """Memory this process shares with its worker processes (mapped before they are forked): a file
    is copied in, and the worker is sent where it is instead of the file itself. Through the pipe,
    the executor's thread wrote a file of 235 kB in pieces of the pipe's 64 kB, each write waiting
    for the worker to read and for the interpreter lock, which this process holds while it prepares
    a file itself. A file's span starts with a byte that says whether this process has claimed it
    (prepared it itself: the worker then leaves it). Spans are taken in the order the files are
    read, so the memory is a ring: a file goes after the last span taken, or at the start once the
    spans there are released; a span released out of order is free once those before it are."""

    def __init__(self, size: int):
        self.buffer = mmap.mmap(-1, size)  # anonymous and shared: forked processes see the same pages
        self.size = size
        self.spans: deque[list] = deque()  # [start, end, released, released once this future is done], oldest first

    def put(self, data: bytes) -> tuple[int, int] | None:
        """Copies `data` in, unclaimed, and returns its span (start, end), or None when it does not
        fit now."""
        self._free()
        length = len(data) + 1
        if length > self.size:
            return None
        if not self.spans:
            start = 0
        else:
            oldest, newest = self.spans[0][0], self.spans[-1][1]
            if newest > oldest:  # taken: [oldest, newest); free: after newest, and before oldest
                if self.size - newest >= length:
                    start = newest
                elif oldest >= length:
                    start = 0
                else:
                    return None
            elif oldest - newest >= length:  # wrapped: free only between newest and oldest
                start = newest
            else:
                return None
        self.buffer[start] = 0
        self.buffer[start + 1 : start + length] = data
        self.spans.append([start, start + length, False, None])
        return start, start + length

    def read(self, span: tuple[int, int]) -> bytes:
        return self.buffer[span[0] + 1 : span[1]]

    def claim(self, span: tuple[int, int]) -> None:
        self.buffer[span[0]] = 1

    def claimed(self, span: tuple[int, int]) -> bool:
        return self.buffer[span[0]] != 0

    def release(self, span: tuple[int, int], *, after: Future | None = None) -> None:
        """Frees `span` (a worker still to read it: once `after` is done)."""
        for entry in self.spans:
            if (entry[0], entry[1]) == tuple(span):
                entry[2], entry[3] = True, after
                break
        else:
            raise ValueError(f"{span} was not taken")
        self._free()

    def _free(self) -> None:
        spans = self.spans
        while spans and spans[0][2] and (spans[0][3] is None or spans[0][3].done()):
            spans.popleft()

    def close(self) -> None:
        self.buffer.close()


# The worker processes' state: the import's spec, a redaction cache of their own and the shared memory.
_worker_spec: ImportSpec | None = None
_worker_cache: RedactionCache | None = None
_worker_files: SharedFiles | None = None


def _worker_start(spec: ImportSpec, shared: SharedFiles | None = None) -> None:
    global _worker_spec, _worker_cache, _worker_files
    _worker_spec, _worker_cache, _worker_files = spec, RedactionCache(), shared


def _worker_read_shared(span: tuple[int, int]) -> list[Outcome]:
    """The outcomes of the file at `span` of the shared memory; none if the command claimed it."""
    assert _worker_files is not None
    if _worker_files.claimed(span):
        return []
    return _worker_read(_worker_files.read(span))


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
