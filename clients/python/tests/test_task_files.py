"""The task's files in a recall pointer, on the client's side (procmem_client/task_files.py): the index's
served form and back, the pointer's bound whatever the index and task (Hypothesis), and recall against a
server from before select's `taskFiles` or the file-index endpoint (asked again without it; no index)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procmem_client import ProcmemClient
from procmem_client.coding import POINTER_MAX_TOKENS, recall_pointer, target_role
from procmem_client.ranking import EmbeddingCache, Ranker, SelectionConfig
from procmem_client.rendering import estimate_tokens
from procmem_client.task_files import (
    TASK_FILES,
    TaskFileIndex,
    indexes_from_response,
    task_pointer,
    with_task_files,
)

FIX = {
    "id": "fix.sympy.core",
    "version": 2,
    "intent": "refund_over_limit",
    "appliesWhen": "Fix a bug in sympy/core.",
    "steps": ["Edit it."],
    "requiredTools": [],
    "forbiddenActions": [],
    "verifyCommand": "./bin/test {{test_file}}",
    "postconditions": ["Changed: sympy/core/add.py."],
    "preconditions": [],
    "evidence": {"repository": "SymPy/sympy"},
}
INDEX = TaskFileIndex(
    ["sympy/core/numbers.py", "sympy/printing/str.py", "sympy/core/add.py"],
    {"Rational": ["sympy/core/numbers.py"], "StrPrinter": ["sympy/printing/str.py"]},
)


def test_the_served_form_round_trips_and_refuses_what_is_not_one():
    served = INDEX.to_dict()
    assert served == {
        "files": ["sympy/core/add.py", "sympy/core/numbers.py", "sympy/printing/str.py"],
        "definitions": {"Rational": [1], "StrPrinter": [2]},
    }
    back = TaskFileIndex.from_dict(served)
    assert back.files == INDEX.files and back.definitions == INDEX.definitions
    indexes = indexes_from_response(
        {"minLetters": 4, "pathWeight": 3.0, "indexes": [{"repository": "SymPy/Sympy", **served}]}
    )
    assert list(indexes) == ["sympy/sympy"]
    for bad in (
        {"files": "x", "definitions": {}},
        {"files": [], "definitions": {"A": [0]}},
        {"files": ["a.py"], "definitions": {"A": [True]}},
    ):
        with pytest.raises(ValueError):
            TaskFileIndex.from_dict(bad)
    with pytest.raises(ValueError):
        indexes_from_response({"indexes": [{"files": [], "definitions": {}}]})


def test_the_pointer_names_the_tasks_files_of_the_records_repository_first():
    task = "Rational prints wrong with StrPrinter"
    pointer = task_pointer(FIX, task, {"sympy/sympy": INDEX})
    assert pointer["files"] == ["sympy/core/numbers.py", "sympy/printing/str.py", "sympy/core/add.py"]
    assert pointer == recall_pointer(FIX, task_files=INDEX.files_for(task))
    # no index of the record's repository: the set's pointer
    assert task_pointer(FIX, task, {"django/django": INDEX}) == recall_pointer(FIX)
    assert task_pointer({**FIX, "evidence": {}}, task, {"sympy/sympy": INDEX}) == recall_pointer(
        {**FIX, "evidence": {}}
    )
    # a record that is not a coding procedure is left as it is
    plain = {k: v for k, v in FIX.items() if k not in ("verifyCommand", "postconditions", "preconditions")}
    assert with_task_files([plain], task, {"sympy/sympy": INDEX}) == [plain]


_NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ_0123456789", min_size=1, max_size=30)
_PATH = st.builds(lambda parts, name: "/".join([*parts, name]) + ".py", st.lists(_NAME, min_size=1, max_size=6), _NAME)


@settings(max_examples=200, deadline=None)
@given(
    files=st.lists(_PATH, max_size=30),
    names=st.lists(_NAME, max_size=30),
    task=st.text(max_size=3000),
    when=st.text(max_size=3000),
    verify=st.text(max_size=3000),
    written=st.lists(_PATH, max_size=12),
    limit=st.integers(0, 20),
)
def test_the_task_pointer_stays_under_the_bound_whatever_the_index_and_task(
    files, names, task, when, verify, written, limit
):
    definitions = {name: files[i % len(files) :: 3] for i, name in enumerate(names)} if files else {}
    index = TaskFileIndex(files, definitions)
    record = {
        "id": "fix.x",
        "version": 1,
        "appliesWhen": when,
        "verifyCommand": verify,
        "postconditions": [f"Changed: {p}." for p in written],
        "evidence": {"repository": "o/r"},
    }
    task = task + " " + " ".join(names[:5]) + " " + " ".join(files[:2])
    pointer = task_pointer(record, task, {"o/r": index}, limit=limit)
    assert pointer["tokens"] == estimate_tokens(pointer["text"]) <= POINTER_MAX_TOKENS
    assert len(pointer["files"]) <= 8
    pointed = [p for p in index.files_for(task, limit) if target_role(p) == "source"]
    assert len(index.files_for(task, limit)) <= limit
    # the task's files come first, in their order (as far as the bound leaves them)
    assert all(p.startswith(q[:59]) for p, q in zip(pointer["files"], pointed))


def test_recall_asks_an_older_server_again_without_task_files(server, fake):
    fake.procedures = [FIX]
    fake.selection = [FIX]
    fake.select_fields = {"task", "intent", "k", "role", "environment", "session"}
    client = ProcmemClient(base_url=server.url, agent=fake.agent, token=fake.token, local_ranking=False)
    assert client.recall(prompt="Rational is wrong") == [recall_pointer(FIX)]
    assert client.recall(prompt="Rational is wrong again") == [recall_pointer(FIX)]
    posted = [r["query"] for r in fake.requests if r["method"] == "POST"]
    assert ["taskFiles" in q for q in posted] == [True, False, False]  # refused once, not sent again
    assert client.last_error is None and client.server_task_files is False


def test_async_recall_asks_an_older_server_again_without_task_files(server, fake):
    pytest.importorskip("httpx", reason="the [async] extra is not installed")
    from procmem_client.aio import AsyncProcmemClient

    fake.procedures = [FIX]
    fake.selection = [FIX]
    fake.select_fields = {"task", "intent", "k", "role", "environment", "session"}

    async def asynchronous():
        async with AsyncProcmemClient(
            base_url=server.url, agent=fake.agent, token=fake.token, local_ranking=False
        ) as a:
            return await a.recall(prompt="Rational is wrong"), a.server_task_files

    assert asyncio.run(asynchronous()) == ([recall_pointer(FIX)], False)


def _exact_only_ranker() -> Ranker:
    """Only the exact retriever can make a procedure eligible (as tests/test_coding_recall.py's)."""

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(
            [[0.0, 0.0, 1.0] if t.startswith("TASK") else [1.0, 0.0, 0.0] for t in texts], dtype=np.float32
        )

    return Ranker(cache=EmbeddingCache(embed), config=SelectionConfig(use_steps=False))


def test_local_recall_without_the_file_index_endpoint_gives_the_sets_pointer(server, fake):
    fake.procedures = [FIX]
    client = ProcmemClient(base_url=server.url, agent=fake.agent, token=fake.token, ranker=_exact_only_ranker())
    assert client.local_ranking
    assert client.recall(prompt="TASK Fix sympy/core/add.py") == [recall_pointer(FIX)]
    assert client.file_index_fetches == 1 and client.file_index_error is None  # the 404: no index
    client.recall(prompt="TASK Fix sympy/core/add.py again")
    assert client.file_index_fetches == 1  # asked again only after refresh_interval
    assert TASK_FILES == 6
