"""Recall for coding agents on the real SWE-bench sessions: the procedure mined from the older 75 %
is recalled for the newest 25 % (held back from mining, by end time) about as well as for the
sessions it was mined from; every mined coding procedure's recall pointer stays under 300 tokens."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from procmem_client.coding import POINTER_MAX_TOKENS, recall_pointer, recall_query
from procmem_client.ranking import Ranker
from procmem_client.rendering import estimate_tokens

from library.coding.procedures import coding_skeleton
from library.mining.runs import _held_q, held_back_cutoffs, mining_run_execute
from library.models import Agent, AgentSession, ProcedureVersion
from ..conftest import SWEBENCH_RESULTS, SWEBENCH_SKELETON, SWEBENCH_TRAJS, swebench_outcomes_separated_by_skeleton

# Coding procedures of other kinds beside the mined one, so that recall@2 is a ranking among several.
DISTRACTORS = [
    {
        "id": "docs.update", "version": 1, "intent": "fix_issue", "status": "active",
        "appliesWhen": "A task asks to correct or extend the documentation: a typo, a missing section, an outdated example.",
        "steps": ["Find the page ({{doc_file}}).", "Edit the page ({{doc_file}}).", "Build the docs: make -C docs html."],
        "requiredTools": ["make"], "forbiddenActions": [], "evidence": {}, "approvedBy": None, "approvedAt": None,
        "postconditions": ["The edited page ({{doc_file}})."], "verifyCommand": "make -C docs html",
    },
    {
        "id": "deps.upgrade", "version": 1, "intent": "fix_issue", "status": "active",
        "appliesWhen": "A task asks to upgrade a third-party dependency and adapt to its new version.",
        "steps": ["Change the pinned version ({{config_file}}).", "Install it: pip install -e .", "Run the whole suite: tox."],
        "requiredTools": ["pip", "tox"], "forbiddenActions": [], "evidence": {}, "approvedBy": None, "approvedAt": None,
        "postconditions": ["The new pin ({{config_file}})."], "verifyCommand": "tox",
    },
]


def _commands(calls) -> list[str]:
    return [c["args"]["command"] for c in calls or [] if isinstance(c.get("args"), dict) and c["args"].get("command")]


def _query(task: str, tool_calls, calls: int) -> str:
    """What the client's recall sends: the prompt, then the first `calls` commands."""
    return recall_query(task, _commands(tool_calls)[:calls]) or "(empty)"


def _recall_at(index, vectors, sessions, *, calls: int, k: int = 2) -> float:
    hits = 0
    for task, tool_calls in sessions:
        query = _query(task, tool_calls, calls)
        ranked = index.rank(task=query, cap=k, query_vector=vectors[query])
        hits += any(c["id"] != "docs.update" and c["id"] != "deps.upgrade" and c["injected"] for c in ranked[:k])
    return hits / len(sessions)


@pytest.mark.django_db
@pytest.mark.timeout(900)  # imports and mines the 231 sessions, and embeds ~100 queries
def test_the_mined_procedure_is_recalled_for_held_out_sessions_about_as_for_the_mining_part(swebench_dir):
    call_command("import_sessions", str(SWEBENCH_TRAJS), "--format", "mini-swe-agent", "--outcomes", str(SWEBENCH_RESULTS),
                 "--agent", "swe-recall", "--create-agent", "--no-progress", stdout=io.StringIO(), stderr=io.StringIO())
    agent = Agent.objects.get(name="swe-recall")
    swebench_outcomes_separated_by_skeleton(agent)  # outcomes the skeleton explains: the miner proposes it
    run = mining_run_execute(agent=agent, support_threshold=20)  # the newest 25 % per intent are held back
    version = ProcedureVersion.objects.select_related("procedure__intent").get(mining_run=run)
    record = {**version.to_dict(), "intent": version.procedure.intent.name}

    # every mined coding procedure's pointer is short (the bound holds by construction; this is the data)
    for mined in ProcedureVersion.objects.filter(procedure__agent=agent).select_related("procedure"):
        pointer = recall_pointer(mined.to_dict())
        assert pointer["tokens"] == estimate_tokens(pointer["text"]) <= POINTER_MAX_TOKENS
        assert pointer["verifyCommand"] == mined.verify_command and mined.procedure.key in pointer["text"]

    held = _held_q(held_back_cutoffs(agent, agent.backtest_share))
    sessions = AgentSession.objects.filter(agent=agent)
    held_ids = set(sessions.filter(held).values_list("pk", flat=True))
    assert len(held_ids) == 57  # the mining run's own held-back count
    group = {"held": [], "mined": []}
    for pk, task, calls, skeleton in sessions.values_list("pk", "task", "tool_calls", "skeleton"):
        if coding_skeleton(skeleton or []) == tuple(SWEBENCH_SKELETON):  # the sessions the procedure is for
            group["held" if pk in held_ids else "mined"].append((task, calls))
    assert len(group["held"]) >= 10 and len(group["mined"]) >= 30

    ranker = Ranker()
    index = ranker.index([record, *DISTRACTORS])
    # the queries embedded in one batch (the model is slow one text at a time on a busy machine)
    queries = sorted({_query(task, calls, n) for part in group.values() for task, calls in part for n in (0, 3)})
    vectors = dict(zip(queries, ranker.cache.matrix(queries)))
    figures = {
        (part, calls): _recall_at(index, vectors, group[part], calls=calls) for part in ("held", "mined") for calls in (0, 3)
    }
    print("recall@2 of the mined procedure:", {f"{part}, after {calls} tool calls": round(v, 3) for (part, calls), v in figures.items()},
          {part: len(v) for part, v in group.items()})
    # after the first three tool calls the targets and commands are in the query: recalled for
    # (nearly) every session of its kind, held out or not
    assert figures[("held", 3)] >= 0.9 and figures[("mined", 3)] >= 0.9
    assert figures[("held", 3)] >= figures[("mined", 3)] - 0.1
    assert figures[("held", 3)] >= figures[("held", 0)]  # the second recall adds what the prompt lacks
