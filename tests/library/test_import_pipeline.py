"""library/ingest/pipeline.py: an import's files prepared by the command's process and its workers,
handed over through shared memory, with the same outcomes as in one process."""

import json
import os
import time
from concurrent.futures import Future

from hypothesis import given, settings
from hypothesis import strategies as st

from library.ingest import pipeline
from library.ingest.pipeline import ImportSpec, SharedFiles, import_outcomes
from library.ingest.reader import iter_session_files

from .test_ingest_coding import _trajectory_folder


def _plain(value):
    """A jsonb field's value as stored: the workers write it for PostgreSQL already (JsonText)."""
    return json.loads(value) if isinstance(value, bytes) else value


def _outcomes(folder, workers):
    spec = ImportSpec(fmt="mini-swe-agent")
    return [
        (name, outcome.session_id, _plain(outcome.fields["redacted_excerpt"]), _plain(outcome.fields["tool_calls"]))
        for name, outcome in import_outcomes(iter_session_files(str(folder)), spec, workers=workers)
    ]


def _folder(tmp_path, count=24):
    return _trajectory_folder(
        tmp_path,
        count,
        lambda number: [
            (f"grep -rn Foo{number} django/", 0, "django/a.py:1\n" * number),
            (f"python reproduce_{number}.py", 1, f"Error for mia.li{number}@example.com"),
        ],
    )


def test_the_command_prepares_the_files_its_workers_have_not_started(tmp_path, monkeypatch):
    # given: a worker that takes 50 ms a file; the command's process records the files it prepares
    folder = _folder(tmp_path)
    alone = _outcomes(folder, 1)
    command, file_outcomes, worker_read = os.getpid(), pipeline.file_outcomes, pipeline._worker_read
    prepared_here: list[int] = []

    def recorded(*args, **kwargs):
        if os.getpid() == command:
            prepared_here.append(1)
        return file_outcomes(*args, **kwargs)

    def slow(data):
        time.sleep(0.05)
        return worker_read(data)

    monkeypatch.setattr(pipeline, "file_outcomes", recorded)
    monkeypatch.setattr(pipeline, "_worker_read", slow)
    # when: imported with one worker besides the command
    together = _outcomes(folder, 2)
    # then: the same outcomes in the same order, most files prepared by the command while it waited
    assert together == alone and len(alone) == 24
    assert 12 <= len(prepared_here) < 24


def test_files_that_do_not_fit_in_the_shared_memory_go_through_the_pipe(tmp_path, monkeypatch):
    # given: shared memory for about two of the files at a time
    folder = _folder(tmp_path, 16)
    size = max(path.stat().st_size for path in folder.iterdir())
    monkeypatch.setattr(pipeline, "SHARED_FILES_BYTES", 2 * size + 1)
    sent = {"shared": 0, "pipe": 0}
    put = SharedFiles.put

    def counted(self, data):
        span = put(self, data)
        sent["pipe" if span is None else "shared"] += 1
        return span

    monkeypatch.setattr(SharedFiles, "put", counted)
    # when / then: both ways are taken, and the outcomes are those of one process, with 2 and 3 processes
    alone = _outcomes(folder, 1)
    assert _outcomes(folder, 2) == alone == _outcomes(folder, 3)
    assert sent["shared"] and sent["pipe"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 3), st.booleans()), max_size=60))
def test_shared_memory_spans_never_overlap_and_read_back_what_was_put(steps):
    # a model of the import's use: files put in order, released in order, or (claimed by the
    # command) once their worker is done, which may come later
    shared = SharedFiles(64)
    live: list[tuple[tuple[int, int], bytes]] = []
    waiting: list[Future] = []  # the workers of released spans, not done yet
    try:
        for number, (length, releases, later) in enumerate(steps):
            data = bytes([number % 251 + 1]) * length
            span = shared.put(data)
            if span is None:
                # refused only when it cannot fit: larger than the memory, or the memory taken
                assert length + 1 > 64 or live or waiting
            else:
                assert 0 <= span[0] < span[1] <= 64 and span[1] - span[0] == length + 1
                assert all(span[1] <= other[0] or other[1] <= span[0] for other, _ in live)
                assert not shared.claimed(span)
                live.append((span, data))
            for _ in range(min(releases, len(live))):
                span, _ = live.pop(0)
                if later:
                    shared.claim(span)
                    waiting.append(Future())
                    shared.release(span, after=waiting[-1])
                else:
                    shared.release(span)
            if waiting and not later:
                waiting.pop(0).set_result([])
            for span, data in live:
                assert shared.read(span) == data
        for future in waiting:
            future.set_result([])
        for span, _ in live:
            shared.release(span)
        assert shared.put(b"x" * 63) == (0, 64)  # everything released: the whole memory
    finally:
        shared.close()


def test_a_span_is_taken_where_it_fits_and_freed_once_its_worker_is_done(tmp_path):
    shared = SharedFiles(10)
    try:
        assert shared.put(b"a" * 5) == (0, 6)
        assert shared.put(b"b" * 4) is None  # 4 left after it, 0 before it
        assert shared.put(b"c" * 3) == (6, 10)
        worker = Future()
        shared.claim((0, 6))
        assert shared.claimed((0, 6)) and not shared.claimed((6, 10))
        shared.release((0, 6), after=worker)
        assert shared.put(b"d" * 5) is None  # its worker has not seen the claim yet
        worker.set_result([])
        assert shared.put(b"d" * 5) == (0, 6) and not shared.claimed((0, 6))  # round: before the oldest
        assert shared.put(b"e") is None  # full
        shared.release((0, 6))  # out of order: free once (6, 10) is
        assert shared.put(b"e") is None
        shared.release((6, 10))
        assert shared.put(b"f" * 9) == (0, 10) and shared.read((0, 10)) == b"f" * 9
    finally:
        shared.close()
