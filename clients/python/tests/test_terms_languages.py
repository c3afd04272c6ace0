"""The lexical retriever's terms per script, and the language routing of a task
(procmem_client/terms.py; docs/selection.md, "Selection in the customer's language")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from procmem_client.terms import is_english, words

SET = Path(__file__).resolve().parents[3] / "tests" / "library" / "data" / "multilingual_selection"


def test_ascii_text_gives_the_terms_it_always_gave():
    assert words("The customer wants to cancel_reservation; cancelled orders!") == [
        "cancel",
        "reserv",
        "cancel",
        "order",
    ]


def test_chinese_and_japanese_become_character_pairs_and_russian_words_their_stems():
    assert words("我的订单在哪里") == ["我的", "的订", "订单", "单在", "在哪", "哪里"]
    assert "注文" in words("注文 ORD-30012 はどこ") and "ord" in words("注文 ORD-30012 はどこ")
    assert words("заказ заказы заказом") == ["заказ", "заказ", "заказ"]
    assert words("Rückerstattung für Bestellung") == ["rückerstattung", "für", "bestellung"]


@given(st.text(max_size=200))
def test_any_text_gives_terms_without_error(text):
    for term in words(text):
        assert term and term == term.lower()
    assert is_english(text) in (True, False)


def test_every_task_of_the_multilingual_set_is_routed_to_its_language():
    if not SET.is_dir():
        pytest.skip("the multilingual set lies in the server's repository (tests/library/data)")
    for name in ("airline.jsonl", "retail.jsonl", "demo.jsonl", "paraphrases.jsonl"):
        for line in (SET / name).read_text(encoding="utf-8").splitlines():
            task = json.loads(line)
            assert is_english(task["task"]) == (task["language"] == "en"), (name, task["id"])


def test_ids_and_numbers_alone_count_as_english():
    assert is_english("ORD-10231") and is_english("") and is_english("12345")
