"""The task's files in recall pointers, as every client receives them from a live server: the Python
client ranking locally (with the fetched file index), the Python client asking the select endpoint
(`taskFiles`), the async client both ways, and the TypeScript client (run by node) give the same
pointer text, byte for byte, for the same task on the same set; and each names the task's files first."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
from pytest_django.live_server_helper import LiveServer

from library import services
from library.api.tokens import token_create
from library.models import Agent, ApiToken
from library.serving import active_set as serving
from library.serving import task_files as served_files
from procmem_client import ProcmemClient
from procmem_client.aio import AsyncProcmemClient
from procmem_client.coding import recall_pointer
from tests.conftest import make_active
from tests.library.test_task_files_serving import CAT, EDIT, GREP, PERSONAL, TEST, _fix, _session

TS = Path(__file__).resolve().parents[2] / "clients" / "typescript"
PROMPTS = [
    "Rational('0.5') prints wrong with StrPrinter; the fix is in sympy/core/add.py",
    "sympy/core/add.py: Add of a Rational is not flattened",
]


@pytest.fixture
def server(transactional_db):
    serving.clear_cache()
    served_files.clear_cache()
    live = LiveServer("127.0.0.1:0")
    yield live
    live.stop()
    serving.clear_cache()
    served_files.clear_cache()


def _typescript(url: str, agent: str, token: str, cases: list[dict], tmp_path: Path) -> list[dict]:
    """What the compiled TypeScript client (the `typescript_dist` fixture) recalls for each case."""
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases))
    env = {**os.environ, "PROCMEM_URL": url, "PROCMEM_AGENT": agent, "PROCMEM_TOKEN": token}
    completed = subprocess.run(
        ["node", "test-support/recall-json.js", str(path)], cwd=TS, capture_output=True, text=True, timeout=600, env=env
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout)


@pytest.mark.node
@pytest.mark.django_db(transaction=True, databases=["default", "readonly"])
def test_every_client_names_the_same_task_files_in_the_same_pointer_text(
    typescript_dist, server, agent, proposer, admin_user, tmp_path
):
    # given: a coding agent's sessions, one ACTIVE family procedure of their repository, the index built
    agent.kind = Agent.Kind.CODING
    agent.min_tool_calls = 1
    agent.save()
    _session(agent, 1, [GREP, EDIT, TEST])
    _session(agent, 2, [CAT, PERSONAL, EDIT, TEST])
    version = make_active(_fix(agent, proposer), admin_user)
    services.file_indexes_rebuild(agent=agent)
    token = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]
    options = {"base_url": server.url, "agent": agent.name, "token": token, "timeout": 600}

    # when: each client recalls for each prompt
    local = ProcmemClient(**options, local_ranking=True)
    remote = ProcmemClient(**options, local_ranking=False)
    python_local = [local.recall(prompt=prompt) for prompt in PROMPTS]
    python_server = [remote.recall(prompt=prompt) for prompt in PROMPTS]
    plain = [remote.recall(prompt=prompt, task_files=False) for prompt in PROMPTS]

    async def both_async():
        async with (
            AsyncProcmemClient(**options, local_ranking=True) as a,
            AsyncProcmemClient(**options, local_ranking=False) as b,
        ):
            return [await a.recall(prompt=p) for p in PROMPTS], [await b.recall(prompt=p) for p in PROMPTS]

    async_local, async_server = asyncio.run(both_async())
    typescript = _typescript(
        server.url,
        agent.name,
        token,
        [*({"prompt": p} for p in PROMPTS), *({"prompt": p, "taskFiles": False} for p in PROMPTS)],
        tmp_path,
    )

    # then: one procedure recalled everywhere, the same pointer text everywhere
    assert local.last_error is None and remote.last_error is None and local.file_index_error is None
    assert all(case["lastError"] is None for case in typescript), typescript
    texts = [[p["text"] for p in pointers] for pointers in python_local]
    assert all(len(t) == 1 for t in texts), texts
    assert [[p["text"] for p in pointers] for pointers in python_server] == texts
    assert [[p["text"] for p in pointers] for pointers in async_local] == texts
    assert [[p["text"] for p in pointers] for pointers in async_server] == texts
    assert [[p["text"] for p in case["pointers"]] for case in typescript[: len(PROMPTS)]] == texts
    assert python_local == python_server == [case["pointers"] for case in typescript[: len(PROMPTS)]]
    # the task's files first: they depend on the task, and differ from the set's pointer
    record = version.to_dict()
    assert [p[0]["files"][:3] for p in python_local] == [
        ["sympy/core/add.py", "sympy/core/numbers.py", "sympy/printing/str.py"],
        ["sympy/core/add.py", "sympy/core/numbers.py", "sympy/core/basic.py"],
    ]
    served = recall_pointer(record)
    assert [p[0]["text"] for p in plain] == [served["text"]] * len(PROMPTS)
    assert [[p["text"] for p in case["pointers"]] for case in typescript[len(PROMPTS) :]] == [[served["text"]]] * 2
    assert all(p[0]["text"] != served["text"] and p[0]["tokens"] <= 300 for p in python_local)
    # the local client fetched the index once and revalidates it like the set
    assert local.file_index_fetches == 1
