"""Recall for coding agents on the real SWE-bench sessions: every task-family procedure mined from the
231 sessions has a recall pointer under 300 tokens that names its family, files and verify command,
and the exact retriever finds it by a path, a module, a test name or a command of its own."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.management import call_command

from library.mining.mining_runs import mining_run_execute
from library.models import Agent, ProcedureVersion
from procmem_client.coding import POINTER_MAX_TOKENS, recall_pointer, recall_query
from procmem_client.ranking import EmbeddingCache, Ranker, SelectionConfig
from procmem_client.rendering import estimate_tokens

from ..conftest import SWEBENCH_RESULTS, SWEBENCH_TRAJS


def exact_only_ranker() -> Ranker:
    """No semantic signal (every text embedded on one axis, no similarity above the floors by
    itself): only the exact retriever makes a procedure eligible."""

    def embed(texts: list[str]) -> np.ndarray:
        return np.tile(np.asarray([[0.0, 0.0, 1.0]], dtype=np.float32), (len(texts), 1)) * 0.1

    return Ranker(cache=EmbeddingCache(embed), config=SelectionConfig(use_steps=False))


@pytest.mark.django_db
@pytest.mark.timeout(900)  # imports and mines the 231 sessions
def test_every_family_pointer_is_short_and_found_by_its_paths_modules_tests_and_commands(swebench_dir):
    call_command(
        "import_sessions",
        str(SWEBENCH_TRAJS),
        "--format",
        "mini-swe-agent",
        "--outcomes",
        str(SWEBENCH_RESULTS),
        "--agent",
        "swe-recall",
        "--create-agent",
        "--no-progress",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    agent = Agent.objects.get(name="swe-recall")
    run = mining_run_execute(agent=agent)
    versions = list(ProcedureVersion.objects.filter(mining_run=run).select_related("procedure__intent"))
    assert len(versions) >= 8
    records = [{**v.to_dict(), "intent": v.procedure.intent.name} for v in versions]
    index = exact_only_ranker().index(records)

    def recalled(query: str) -> list[str]:
        return [r["id"] for r in index.select(task=query, cap=2)["injected"]]

    def first(query: str) -> str | None:
        return next(iter(recalled(query)), None)

    for version, record in zip(versions, records):
        pointer = recall_pointer(record)
        # short, and names the family, the files and the verify command
        assert pointer["tokens"] == estimate_tokens(pointer["text"]) <= POINTER_MAX_TOKENS
        assert (
            version.evidence["family"]["key"] in pointer["text"] and pointer["verifyCommand"] == version.verify_command
        )
        written = [f["path"] for f in version.evidence["filesWritten"]]
        assert pointer["files"][: len(written)] == written and all(path in pointer["text"] for path in pointer["files"])
        key = version.procedure.key
        # a file only one family names recalls that family first, by its path or its module; a test
        # module only one family names recalls it (among the agent's cap) by the command that runs it
        own = [
            p
            for p in written
            if sum(p in r["postconditions"][i] for r in records for i in range(len(r["postconditions"]))) == 1
        ]
        for path in own[:1]:
            assert first(f"The bug is in {path}") == key
            assert first(f"It breaks in {path[:-3].replace('/', '.')} when called twice") == key
        modules = [m["module"] for m in version.evidence["testModules"]]
        unique = [m for m in modules if sum(m in " ".join(r["steps"]) for r in records) == 1]
        for module in unique[:1]:
            assert key in recalled(
                recall_query("Fix the failing test", [f"cd /testbed && ./tests/runtests.py {module}"])
            )
    # the verify command's text recalls the coding procedures (and nothing when it names no target)
    assert first("./tests/runtests.py") is not None
    assert first("please help") is None
