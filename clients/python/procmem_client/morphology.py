"""Japanese and Russian words for the cross-lingual lexical retriever (terms.task_units,
cross_lingual.py; docs/selection.md, "Morphology for the cross-lingual words (sixth round)").

- **Japanese**: MeCab through fugashi, with the UniDic dictionary that unidic-lite ships. A run of
  Japanese text becomes its content words in their dictionary form — nouns (not numerals), and
  verbs and adjectives that stand on their own (not する, ほしい) — and, for a loanword, also the
  word it was borrowed from as UniDic's lemma records it (キャンセル: "キャンセル-cancel"), so that a
  task's キャンセル meets an English library's "cancel" as the same word.
- **Russian**: Snowball's Russian stemmer (snowballstemmer): "заказа", "заказом" → "заказ".

Both packages are in the client's `[embeddings]` and `[multilingual]` extras (the routed backends
are the ones with a word model, so the only ones that use this). Without them (the light client)
each function answers None and the caller keeps what it did before: character pairs for Japanese,
the whole word for Russian. Each analyser is made once per process, on first use.
"""

from __future__ import annotations

import functools
from typing import Any

_NOUN, _VERB, _ADJECTIVE = "名詞", "動詞", "形容詞"  # UniDic's first part-of-speech level
_NUMERAL = "数詞"  # a noun's second level: numerals are no words to translate
_LEANING = "非自立可能"  # a verb's or adjective's second level: する, ほしい, lean on another word


@functools.cache
def _japanese_tagger() -> Any | None:
    """fugashi's Tagger over unidic-lite's dictionary; None when either is not installed."""
    try:
        import fugashi
        import unidic_lite  # noqa: F401  # fugashi opens the dictionary it ships
    except ImportError:
        return None
    try:
        return fugashi.Tagger()
    except RuntimeError:  # the dictionary could not be opened
        return None


@functools.cache
def _russian_stemmer() -> Any | None:
    try:
        import snowballstemmer
    except ImportError:
        return None
    return snowballstemmer.stemmer("russian")


def japanese_words(run: str) -> list[str] | None:
    """The content words of a run of Japanese text (module docstring), each loanword followed by
    its origin in lower case; None without the analyser."""
    tagger = _japanese_tagger()
    if tagger is None:
        return None
    found: list[str] = []
    for word in tagger(run):
        feature = word.feature
        if feature.pos1 == _NOUN:
            if feature.pos2 == _NUMERAL:
                continue
        elif feature.pos1 not in (_VERB, _ADJECTIVE) or feature.pos2 == _LEANING:
            continue
        found.append(feature.orthBase or word.surface)
        lemma = feature.lemma or ""
        if "-" in lemma:
            origin = lemma.split("-", 1)[1]
            if origin.isascii() and origin.isalpha():
                found.append(origin.lower())
    return found


def russian_stem(word: str) -> str | None:
    """A Russian word's Snowball stem; None without the stemmer."""
    stemmer = _russian_stemmer()
    return None if stemmer is None else stemmer.stemWord(word)
