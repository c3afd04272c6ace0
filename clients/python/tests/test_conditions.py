"""The appliesWhen's conditions in the order (procmem_client/conditions.py, condition_scores.py,
ranking.py): clauses ranked by the weakest one (semantic and lexical), money amounts against the
ranges an appliesWhen names; eligibility and coding procedures untouched."""

from __future__ import annotations

import math

import numpy as np
import pytest

from procmem_client.conditions import amount_match, amount_ranges, amounts, clauses
from procmem_client.ranking import EmbeddingCache, Ranker, SelectionConfig

AXES = ("cancel", "flights", "refund", "status")


def _embedder(texts: list[str]) -> np.ndarray:
    """One axis per word of AXES found in the text (a fifth for none), unit length."""
    rows = []
    for text in texts:
        vector = np.asarray([1.0 if axis in text.lower() else 0.0 for axis in AXES] + [0.1], dtype=np.float32)
        rows.append(vector / np.linalg.norm(vector))
    return np.stack(rows)


def test_clauses_split_on_and_with_the_subject_kept():
    assert clauses("The customer wants to cancel reservation and update reservation flights.") == [
        "The customer wants to cancel reservation.",
        "The customer wants to update reservation flights.",
    ]
    # a part with fewer than two content words stays with the one before it
    assert clauses("The customer asks about terms and conditions.") == ["The customer asks about terms and conditions."]
    one = "The customer asks where their order is or when it will arrive."
    assert clauses(one) == [one]


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("I want my 690 EUR back for ORD-11250", [690.0]),
        ("The sofa cost 1,200 euros", [1200.0]),
        ("Das Fahrrad für 1.100 € ist kaputt, und 6,90 € Versand", [1100.0, 6.9]),
        ("我要退回我的 690 欧元", [690.0]),
        ("ジャケットは 480 ユーロもしました", [480.0]),
        ("верните 25 евро", [25.0]),
        ("charged me $35 twice", [35.0]),
        ("Order ORD-20417 and coupon WINTER10, size 44", []),  # ids and sizes are not money
    ],
)
def test_amounts_are_numbers_next_to_a_currency_in_any_language(task, expected):
    assert amounts(task) == pytest.approx(expected)


def test_amount_ranges_read_magnitudes_and_bounds():
    assert amount_ranges("The customer asks for a small refund of tens of EUR.") == [(0.0, 100.0)]
    assert amount_ranges("an expensive order of hundreds of EUR") == [(100.0, 1000.0)]
    assert amount_ranges("The customer asks about the weather.") == []
    (over,) = amount_ranges("a refund of more than 500 EUR")
    assert over[0] > 500 and over[1] == math.inf
    assert amount_match([500.0], [over]) == 0.0 and amount_match([501.0], [over]) == 1.0
    assert amount_match([40.0], amount_ranges("up to 40 euros")) == 1.0
    assert amount_match([40.0], amount_ranges("under 40 euros")) == 0.0


def _records():
    return [
        {"id": "a.cancel", "version": 1, "appliesWhen": "The customer wants to cancel reservation.", "steps": []},
        {
            "id": "a.cancel_and_flights",
            "version": 1,
            "appliesWhen": "The customer wants to cancel reservation and update reservation flights.",
            "steps": [],
        },
    ]


def test_a_record_with_two_clauses_ranks_by_its_weakest_one():
    index = Ranker(cache=EmbeddingCache(_embedder)).index(_records())
    # given a task that names only one of the compound record's two situations
    signals = index.signals(task="Please cancel my reservation.")
    single, compound = (list(signals.candidates).index(i) for i in (0, 1))
    # then the compound record's order score is its "update reservation flights" clause's, near 0,
    # while its semantic score (what eligibility reads) is the whole appliesWhen's, as before
    assert signals.semantic[compound] > 0.6 and signals.clause[compound] < 0.1
    assert signals.clause[single] == pytest.approx(signals.semantic[single])
    off = Ranker(cache=EmbeddingCache(_embedder), config=SelectionConfig(clause_match=False)).index(_records())
    assert off.signals(task="Please cancel my reservation.").clause is None
    assert np.allclose(off.signals(task="Please cancel my reservation.").semantic, signals.semantic)


def test_a_record_with_two_clauses_enters_the_order_with_its_weakest_clauses_lexical_score():
    index = Ranker(cache=EmbeddingCache(_embedder)).index(_records())
    # given a task whose words are those of one of the compound record's two situations
    signals = index.signals(task="Please cancel my reservation.")
    single, compound = (list(signals.candidates).index(i) for i in (0, 1))
    # then the compound record's whole-text lexical score (what eligibility reads) still counts
    # "cancel" and "reservation", while the order reads its "update reservation flights" clause's
    assert signals.lexical[compound] > 0.3
    assert signals.clause_lexical[compound] < signals.lexical[compound]
    assert signals.clause_lexical[single] == pytest.approx(signals.lexical[single]) == pytest.approx(1.0)
    # and a task naming both situations meets both clauses whole
    both = index.signals(task="Cancel my reservation and update the reservation flights.")
    assert both.clause_lexical[compound] == pytest.approx(1.0)
    off = Ranker(cache=EmbeddingCache(_embedder), config=SelectionConfig(clause_lexical=False)).index(_records())
    assert off.signals(task="Please cancel my reservation.").clause_lexical is None
    assert {c["id"]: c["eligible"] for c in off.rank(task="Please cancel my reservation.")} == {
        c["id"]: c["eligible"] for c in index.rank(task="Please cancel my reservation.")
    }


def test_a_task_amount_in_the_range_orders_the_refund_procedures_but_never_makes_one_eligible():
    records = [
        {
            "id": "refund.over_limit",
            "version": 1,
            "appliesWhen": "The customer asks for a refund for an expensive order of hundreds of EUR.",
            "steps": [],
        },
        {
            "id": "refund.within_limit",
            "version": 1,
            "appliesWhen": "The customer asks for a small refund of tens of EUR.",
            "steps": [],
        },
    ]
    index = Ranker(cache=EmbeddingCache(_embedder)).index(records)
    small = index.rank(task="Refund the 12 EUR you overcharged me")
    large = index.rank(task="Refund the 690 EUR of my order")
    assert small[0]["id"] == "refund.within_limit" and large[0]["id"] == "refund.over_limit"
    off = Ranker(cache=EmbeddingCache(_embedder), config=SelectionConfig(amount_weight=0.0)).index(records)
    assert {c["id"]: c["eligible"] for c in off.rank(task="Refund the 12 EUR")} == {
        c["id"]: c["eligible"] for c in index.rank(task="Refund the 12 EUR")
    }


def test_coding_procedures_are_ranked_as_before():
    records = [
        {
            "id": "fix.core",
            "version": 1,
            "appliesWhen": "A task to cancel a bug in sympy/core/ and update its flights tests.",
            "steps": ["Run ./bin/test {{test_file}}."],
            "verifyCommand": "./bin/test {{test_file}}",
        }
    ]
    index = Ranker(cache=EmbeddingCache(_embedder)).index(records)
    signals = index.signals(task="cancel the sympy core bug")
    assert index.has_coding and signals.clause is None and signals.clause_lexical is None
