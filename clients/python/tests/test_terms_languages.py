"""The lexical retriever's terms per script, and the language routing of a task
(procmem_client/terms.py; docs/selection.md, "Selection in the customer's language")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from procmem_client import morphology, terms
from procmem_client.terms import is_english, task_units, words

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


needs_analysers = pytest.mark.skipif(
    morphology.japanese_words("予約") is None or morphology.russian_stem("заказ") is None,
    reason="fugashi, unidic-lite and snowballstemmer come with the client's [embeddings] or [multilingual] extra",
)


@needs_analysers
def test_a_japanese_task_gives_its_content_words_and_the_origins_of_its_loanwords():
    units = task_units("注文ORD-10231のジャケットをキャンセルして、返金してほしいです。配送先の住所を変更したい。")
    # nouns in their dictionary form, each loanword also as the English word it was borrowed from
    assert {"注文", "ジャケット", "jacket", "キャンセル", "cancel", "返金", "配送", "住所", "変更"} <= set(units)
    # no particles, no する / ほしい (they lean on another word), no numerals, no character pairs
    assert not {"を", "し", "する", "ほしい", "10231", "注文o", "ャン"} & set(units)
    assert "ord" in units  # the identifier's letters, as before


@needs_analysers
def test_a_russian_task_gives_its_words_by_their_snowball_stem():
    assert task_units("Заказ, заказы, заказом: отменить бронирование") == ["бронирован", "заказ", "отмен"]
    assert task_units("мой") == []  # a stem under three letters is left out, as a short word always was


def test_without_the_analysers_japanese_is_cut_into_pairs_and_russian_words_stay_whole(monkeypatch):
    # the light client: no fugashi, unidic-lite or snowballstemmer
    monkeypatch.setattr(morphology, "japanese_words", lambda run: None)
    monkeypatch.setattr(morphology, "russian_stem", lambda word: None)
    assert set(task_units("予約をキャンセル")) == {"予約", "約を", "をキ", "キャ", "ャン", "ンセ", "セル"}
    assert task_units("Заказом отменить") == ["заказом", "отменить"]


def test_the_lexical_terms_are_as_before_whatever_the_analysers():
    # the lexical retriever's terms (words) do not use the analysers: with an English library they
    # never meet a Japanese or Russian task's words (the cross-lingual score takes their place)
    assert words("予約をキャンセル") == ["予約", "約を", "をキ", "キャ", "ャン", "ンセ", "セル"]
    assert words("заказом") == ["заказ"]


# text that reaches every path of task_units: kana and kanji (the analyser), Cyrillic (the stemmer),
# Hangul and Han, Latin, digits, punctuation, and any other character
_SCRIPTS = st.text(
    alphabet="あいうをんアキャセルンー・予約注文返金заказомЁёё한국我的订单abcXYZ0123-_. 、。!?\n\t\x00", max_size=80
)


@given(st.one_of(st.text(max_size=200), _SCRIPTS, st.lists(st.one_of(_SCRIPTS, st.text(max_size=20))).map("".join)))
def test_any_text_gives_task_units_without_error(text):
    units = task_units(text)
    assert units == sorted(set(units))
    for unit in units:
        assert unit and not any(c.isdigit() for c in unit)
    assert terms.task_units(text) == units  # the same every time (the analysers keep no state)
