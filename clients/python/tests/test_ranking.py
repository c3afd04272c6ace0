"""Ranking, pure Python: which procedure ids come back for fixed task texts, so that a change to
ranking or to an appliesWhen sentence cannot silently move traffic.

The task texts are the `reason_for_call` of the tau2-bench airline and retail tasks
(shared/data/taubench beside the checkout); the procedures (tests/data/selection_procedures.json) are one
per kind of write action those tasks need, with an appliesWhen written for it. Each domain is one
agent's set. selection_expectations.json freezes the injected ids for every task whose first pick
is one of the procedures its gold actions need; unrelated requests must get nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import TAUBENCH_DIR

from procmem_client.ranking import MAX_K, EmbeddingCache, Ranker, SelectionConfig, identifiers, words

DATA = Path(__file__).parent / "data"
TAUBENCH = TAUBENCH_DIR
GOLD = {
    "cancel_reservation": "airline.cancel_reservation",
    "update_reservation_flights": "airline.change_flights",
    "update_reservation_baggages": "airline.baggage",
    "book_reservation": "airline.book_flight",
    "send_certificate": "airline.compensation",
    "return_delivered_order_items": "retail.return_items",
    "exchange_delivered_order_items": "retail.exchange_items",
    "cancel_pending_order": "retail.cancel_order",
    "modify_pending_order_items": "retail.modify_pending_items",
    "modify_pending_order_address": "retail.modify_pending_items",
    "modify_user_address": "retail.update_user_address",
}
UNRELATED = [
    "What's the weather like in Paris tomorrow?",
    "Write me a poem about cats.",
    "Can you help me reset my email password?",
    "Tell me a joke",
    "How do I bake sourdough bread?",
    "I need to file my taxes",
    "Translate 'good morning' into German.",
    "What is the capital of Australia?",
    "Recommend a good science fiction novel.",
    "My laptop screen is flickering, how do I fix the driver?",
    "Summarize the plot of Hamlet.",
    "Schedule a meeting with my team on Monday at 10am.",
    "How many calories are in a banana?",
    "Explain how photosynthesis works.",
    "Convert 100 dollars to euros.",
]


def _tasks(domain: str) -> dict[str, dict]:
    return {t["id"]: t for t in json.loads((TAUBENCH / f"tau2_{domain}_tasks.json").read_text())}


def _text(task: dict) -> str:
    return task["user_scenario"]["instructions"]["reason_for_call"]


@pytest.fixture(scope="module")
def records(model_and_data):
    return json.loads((DATA / "selection_procedures.json").read_text())


@pytest.fixture(scope="module")
def indexes(records):
    ranker = Ranker()
    return {
        domain: ranker.index([r for r in records if r["id"].startswith(domain + ".")]) for domain in ("airline", "retail")
    }


EXPECTATIONS = json.loads((DATA / "selection_expectations.json").read_text())


@pytest.mark.parametrize("case", EXPECTATIONS, ids=[f"{c['domain']}-{c['task']}" for c in EXPECTATIONS])
def test_tau2_task_selects_the_frozen_procedures(indexes, case):
    task = _tasks(case["domain"])[case["task"]]
    result = indexes[case["domain"]].select(task=_text(task), cap=2)
    assert [r["id"] for r in result["injected"]] == case["expected"]
    gold = {GOLD[a["name"]] for a in task["evaluation_criteria"]["actions"] or [] if a["name"] in GOLD}
    assert case["expected"][0] in gold  # the frozen first pick is right by the task's gold actions


def test_first_pick_accuracy_over_all_tau2_tasks_does_not_regress(indexes):
    """Over every tau2 task whose gold actions map to a procedure: the first pick is one of them
    for at least 70 of the 128, a wrong first pick happens for at most 36."""
    right = wrong = nothing = 0
    for domain in ("airline", "retail"):
        for task in _tasks(domain).values():
            gold = {GOLD[a["name"]] for a in (task["evaluation_criteria"] or {}).get("actions") or [] if a["name"] in GOLD}
            if not gold:
                continue
            injected = [r["id"] for r in indexes[domain].select(task=_text(task))["injected"]]
            if not injected:
                nothing += 1
            elif injected[0] in gold:
                right += 1
            else:
                wrong += 1
    assert right + wrong + nothing == 128
    assert right >= 70 and wrong <= 36, (right, wrong, nothing)


@pytest.mark.parametrize("text", UNRELATED)
def test_unrelated_requests_get_nothing(indexes, text):
    for index in indexes.values():
        result = index.select(task=text, k=3)
        assert result["injected"] == []
        assert all(not c["eligible"] for c in result["ranked"])
        assert max(c["scores"]["semantic"] for c in result["ranked"]) < SelectionConfig().semantic_floor


def test_intent_is_a_hard_filter(indexes):
    index = indexes["retail"]
    text = "You want to cancel your pending order because you no longer need it."
    assert [r["id"] for r in index.select(task=text)["injected"]][0] == "retail.cancel_order"
    filtered = index.select(task=text, intent="return_items", k=10)
    assert {c["id"] for c in filtered["ranked"]} == {"retail.return_items"}
    assert index.select(task=text, intent="no_such_intent", k=5) == {
        "task": text, "intent": "no_such_intent", "cap": 2, "injected": [], "ranked": []
    }


def test_exact_tool_name_or_id_in_the_task_makes_a_candidate_eligible(indexes):
    index = indexes["airline"]
    # no semantic or lexical support, only the tool name verbatim
    result = index.select(task="Run update_reservation_baggages now.", k=5)
    top = result["ranked"][0]
    assert top["id"] == "airline.baggage" and top["scores"]["exact"] == 1 and top["ranks"]["exact"] == 1
    assert [r["id"] for r in result["injected"]][0] == "airline.baggage"
    by_id = index.select(task="Apply airline.compensation here", k=1)["ranked"][0]
    assert by_id["id"] == "airline.compensation" and by_id["scores"]["exact"] == 1
    # a tool name inside a longer identifier does not count
    assert index.select(task="call my_cancel_reservation_helper", k=5)["ranked"][0]["scores"]["exact"] == 0


def test_cap_and_k_limits(indexes):
    index = indexes["retail"]
    text = "You want to change the address of your pending order and also update your account address."
    full = index.select(task=text, cap=2, k=MAX_K)
    assert len(full["injected"]) == 2 and len(full["ranked"]) == len(index)  # k above the set size: all of it
    assert [r["id"] for r in index.select(task=text, cap=1)["injected"]] == [full["injected"][0]["id"]]
    assert index.select(task=text, cap=0)["injected"] == []
    injected_ids = [c["id"] for c in full["ranked"] if c["injected"]]
    assert injected_ids == [r["id"] for r in full["injected"]]
    fused = [c["fused"] for c in full["ranked"]]
    assert fused == sorted(fused, reverse=True)
    for bad in ({"k": 0}, {"k": MAX_K + 1}, {"cap": -1}):
        with pytest.raises(ValueError):
            index.select(task=text, **bad)
    with pytest.raises(ValueError):
        index.select(task="  ")


def test_reciprocal_rank_fusion_sums_the_ranks_of_the_retrievers_that_pass_their_floor(indexes):
    result = indexes["airline"].select(task="You want to cancel reservation ABC123 with cancel_reservation and get a refund.", k=3)
    top = result["ranked"][0]
    assert top["id"] == "airline.cancel_reservation"
    expected = sum(1 / (60 + rank) for rank in top["ranks"].values() if rank)
    assert top["fused"] == pytest.approx(expected, abs=1e-6)
    assert top["ranks"] == {"semantic": 1, "lexical": 1, "exact": 1}


def test_embeddings_are_computed_once_per_text():
    calls: list[list[str]] = []

    def fake_embedder(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        vectors = np.zeros((len(texts), 4), dtype=np.float32)
        for i, text in enumerate(texts):
            vectors[i, len(text) % 4] = 1.0
        return vectors

    ranker = Ranker(cache=EmbeddingCache(fake_embedder))
    records = [
        {"id": "a.one", "version": 1, "appliesWhen": "alpha", "requiredTools": []},
        {"id": "a.two", "version": 1, "appliesWhen": "beta gamma", "requiredTools": []},
    ]
    ranker.index(records)
    ranker.index(records + [{"id": "a.three", "version": 1, "appliesWhen": "delta", "requiredTools": []}])
    assert calls == [["alpha", "beta gamma"], ["delta"]]
    assert len(ranker.cache) == 3 and ranker.cache.nbytes() == 3 * 4 * 4


def test_text_helpers():
    assert words("Cancelled the cancellations, cancelling!") == ["cancel", "cancel", "cancel"]
    assert identifiers("Use get_user_details, then refund.over_limit.") >= {"get_user_details", "refund.over_limit"}
