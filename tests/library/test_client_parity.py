"""The three clients offer the same public methods: the sync `ProcmemClient`, the `AsyncProcmemClient`
and the TypeScript `ProcmemClient` (its compiled prototype, read by node). A method one of them has
and another lacks fails here, unless it is listed below with the reason it belongs to one runtime.

TypeScript names are compared in snake_case (`reportOutcome` is `report_outcome`)."""

from __future__ import annotations

import inspect
import json
import re
import subprocess

import pytest

from procmem_client.aio import AsyncProcmemClient
from procmem_client.client import ProcmemClient

# name -> (the clients that have it, why the others do not)
ONE_RUNTIME = {
    "close": ({"sync"}, "releases the sync client's background thread; the async client's is aclose"),
    "aclose": ({"async"}, "closes the httpx pool; the sync client's is close"),
    "start_background_refresh": (
        {"sync"},
        "a thread that revalidates the set; async and TypeScript revalidate on use, one request in flight",
    ),
    "file_indexes": (
        {"sync", "async"},
        "the agent's file indexes for ranking here (the [embeddings] extra); the TypeScript client ranks on "
        "the server, whose select names the task's files (taskFiles)",
    ),
    "instruction_provider": ({"sync"}, "Google ADK's instruction provider (a Python framework)"),
    "adk_before_model_callback": ({"sync"}, "Google ADK's before-model callback (a Python framework)"),
}


def public_names(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls) if not name.startswith("_")}


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@pytest.fixture(scope="module")
def typescript_names(typescript_dist) -> set[str]:
    script = (
        'import("./dist/index.js").then((m) => console.log(JSON.stringify('
        'Object.getOwnPropertyNames(m.ProcmemClient.prototype).filter((n) => n !== "constructor"))))'
    )
    listed = subprocess.run(["node", "-e", script], cwd=typescript_dist, capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    return {snake(name) for name in json.loads(listed.stdout)}


@pytest.mark.node
def test_every_client_has_every_other_clients_public_methods(typescript_names):
    clients = {
        "sync": public_names(ProcmemClient),
        "async": public_names(AsyncProcmemClient),
        "typescript": typescript_names,
    }
    everything = set().union(*clients.values())
    missing = []
    for name in sorted(everything):
        expected = ONE_RUNTIME[name][0] if name in ONE_RUNTIME else set(clients)
        for client, names in clients.items():
            if client in expected and name not in names:
                missing.append(f"{client} lacks {name}")
            if client not in expected and name in names:
                missing.append(f"{client} has {name}, listed as belonging to {sorted(expected)} only")
    assert missing == [], "\n".join(missing)


def test_the_sync_and_async_methods_take_the_same_arguments():
    """Where both Python clients have a method, its parameters are the same (names, kinds, defaults)."""
    differ = []
    for name in sorted(public_names(ProcmemClient) & public_names(AsyncProcmemClient)):
        sync, aio = getattr(ProcmemClient, name), getattr(AsyncProcmemClient, name)
        if not callable(sync) or not callable(aio):
            continue
        if inspect.signature(sync).parameters.keys() != inspect.signature(aio).parameters.keys():
            differ.append(f"{name}: {inspect.signature(sync)} != {inspect.signature(aio)}")
    assert differ == [], "\n".join(differ)
