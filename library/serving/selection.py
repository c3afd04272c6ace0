"""Selection over an agent's served set: what `GET …/select`, the MCP tool and the eval replays
answer (`select_for_agent`: the ranking, the injection cap, the rendered block), and the same
selection explained for the playground (`explain_for_agent`). The set itself is built and cached by
library/serving/active_set.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

import numpy as np
from django.conf import settings

from procmem_client.ranking import Explained, SelectionConfig
from procmem_client.rendering import DEFAULT_MAX_CHARS, render_block
from procmem_client.task_files import TaskFileIndex, with_task_files

from .. import embeddings
from ..models import Agent
from .active_set import API_VERSION, ServedSet, active_set_for_agent, slim_procedure
from .task_files import file_indexes_for_agent


def embed_task(task: str) -> np.ndarray:
    """A task text embedded as the ranker embeds a query (one text per call, so the vector is the
    select endpoint's to the bit), kept in this process's per-text cache (embeddings.embed_one):
    eval replays select the same regression cases for run after run."""
    return embeddings.embed_query_one(task)


def injection_max_chars() -> int:
    return int(getattr(settings, "PROCMEM_INJECTION_MAX_CHARS", DEFAULT_MAX_CHARS))


def select_for_agent(
    *,
    agent: Agent,
    task: str,
    intent: str | None = None,
    k: int | None = None,
    role: str | None = None,
    served: ServedSet | None = None,
    api_version: str = API_VERSION,
    query_vector: np.ndarray | None = None,
    task_files: bool = False,
    file_indexes: Mapping[str, TaskFileIndex] | None = None,
) -> dict[str, Any]:
    """Selection over the agent's served set for `role` (refused versions are never candidates): the
            production set, or `served` (another environment's or a session's set, library/serving/environment_sets.py).
            At most the agent's injection cap is injected, and only what fits the block's character cap.
            `api_version` v2 answers with v2's records and the v2 set's ETag. Raises ValueError for bad
            arguments (see procmem_client/ranking.py). `query_vector`: the task's embedding when the caller
            has it already (an eval replay embeds each case's task once for both arms, embed_task). `task_files`:
        each injected coding procedure's `recallPointer` names first the files the task's words point to in
        the agent's file index of the procedure's repository (library/serving/task_files.py); without it the
        pointer is the set's, the same for every task. `file_indexes`: the agent's indexes when the caller has
    read them already (the MCP tools run where no query may be made)."""
    served = (served or active_set_for_agent(agent=agent)).for_role(role)
    cap = served.data["injectionCap"]
    result = served.index().select(task=task, intent=intent or None, cap=cap, k=k, query_vector=query_vector)
    block = render_block(result["injected"], max_chars=injection_max_chars())
    kept = {(p["id"], p["version"]) for p in block["included"]}
    injected = block["included"] if api_version == "v1" else [slim_procedure(p) for p in block["included"]]
    if task_files and any("recallPointer" in p for p in injected):
        indexes = file_indexes if file_indexes is not None else file_indexes_for_agent(agent=agent).indexes
        injected = with_task_files(injected, task, indexes)
    response: dict[str, Any] = {
        "apiVersion": api_version,
        "agent": served.data["agent"],
        "setEtag": served.in_version(api_version).etag,
        "task": task,
        "intent": intent or None,
        **({"role": role} if role else {}),
        "cap": cap,
        "injected": injected,
        "rendered": block["text"],
        "renderedChars": block["chars"],
        "renderedTokens": block["tokens"],
    }
    pulled = [p for p in result.get("pulledIn", []) if (p["id"], p["version"]) in kept]
    if pulled:  # additive in v1: only when a selected coding procedure's producer was pulled in
        response["pulledIn"] = pulled
    if not served.data["proceduralMemoryEnabled"]:
        response["note"] = served.data["note"]
    for optional in ("environment", "arms"):  # v1 gains optional fields only
        if optional in served.data:
            response[optional] = served.data[optional]
    if k is not None:
        response["ranked"] = [
            {**c, "injected": c["injected"] and (c["id"], c["version"]) in kept} for c in result["ranked"]
        ]
    return response


class Playground(TypedDict):
    task: str
    intent: str | None
    cap: int
    maxChars: int
    config: SelectionConfig
    ranking: list[Explained]
    block: dict[str, Any]
    dropped: list[str]
    setEtag: str
    enabled: bool


def explain_for_agent(*, agent: Agent, task: str, intent: str | None = None) -> Playground:
    """What the agent would receive for `task`, explained: the full ranking of its served set with
    every retriever's score and rank, eligibility and why, and the exact block the select endpoint
    returns (same index, same ranker, same renderer, same caps)."""
    served = active_set_for_agent(agent=agent)
    cap = served.data["injectionCap"]
    index = served.index()
    ranking = index.rank(task=task, intent=intent or None, cap=cap)
    block = render_block([c["record"] for c in ranking if c["injected"]], max_chars=injection_max_chars())
    kept = {(p["id"], p["version"]) for p in block["included"]}
    for candidate in ranking:
        candidate["injected"] = candidate["injected"] and (candidate["id"], candidate["version"]) in kept
    return {
        "task": task,
        "intent": intent or None,
        "cap": cap,
        "maxChars": injection_max_chars(),
        "config": index.config,
        "ranking": ranking,
        "block": {"text": block["text"], "chars": block["chars"], "tokens": block["tokens"]},
        "dropped": [f"{p['id']} v{p['version']}" for p in block["dropped"]],
        "setEtag": served.etag,
        "enabled": bool(served.data["proceduralMemoryEnabled"]),
    }
