"""The terms the lexical and exact retrievers compare (ranking.py): stemmed words without stop
words, compounds of adjacent words, and identifier-shaped tokens (snake_case, camelCase, dotted
names, paths) of tasks and of procedure records. Pure Python; a non-English task's pieces for the
cross-lingual retriever use the Japanese and Russian analysers of morphology.py when installed."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from . import morphology

STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just let me more
    most my myself no nor not now of off on once only or other our ours ourselves out over own please
    same she should so some such than that the their theirs them themselves then there these they this
    those through to too under until up very was we were what when where which while who whom why will
    with would you your yours yourself yourselves also get got want wants wanted like would need needs
    customer customers user users agent asks ask asked
    """.split()
)
_WORD_RE = re.compile(r"[a-z0-9]+")
# identifier candidates: runs of word characters, dots, slashes and hyphens (trailing punctuation trimmed)
_TOKEN_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./\-]*")
_CAMEL_RE = re.compile(r"[a-z][A-Z]")
_DOTTED_RE = re.compile(r"[A-Za-z0-9]\.[A-Za-z0-9_]")


def stem(word: str) -> str:
    """A light suffix stemmer: enough that 'cancelled', 'cancelling' and 'cancel' meet."""
    for suffix, keep in (
        ("ations", 3),
        ("ation", 3),
        ("ing", 3),
        ("ied", 3),
        ("ies", 3),
        ("ed", 3),
        ("es", 3),
        ("s", 3),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= keep:
            word = word[: -len(suffix)]
            if suffix in {"ied", "ies"}:
                word += "y"
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # cancell → cancel, shipp → ship
    if word.endswith("ll") and len(word) > 4:
        word = word[:-1]
    return word


# letters and digits of any script (not "_", which separates the parts of an identifier)
_ANY_WORD_RE = re.compile(r"[^\W_]+")
# Han, Hiragana, Katakana, Hangul: scripts written without spaces between words
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]+")
_CYRILLIC_RE = re.compile(r"[\u0400-\u04ff]")
_KANA_RE = re.compile(r"[\u3040-\u30ff]")  # Hiragana and Katakana: a Japanese text (Chinese has none)
CYRILLIC_PREFIX = 5  # a Russian word's first five letters stand for its stem (endings carry case and number)


def words(text: str) -> list[str]:
    """The terms of a text for the lexical retriever, per script: Latin words lower-cased, without
    English stop words, through the light English stemmer (ASCII text gives exactly the terms it
    always gave); Cyrillic words cut to their first five letters (Russian endings carry case and
    number); Chinese and Japanese, written without spaces, as overlapping character pairs."""
    found: list[str] = []
    for token in _ANY_WORD_RE.findall(text.lower()):
        if token.isascii():
            if token not in STOP_WORDS and len(token) > 1:
                found.append(stem(token))
            continue
        position = 0
        for match in _CJK_RE.finditer(token):
            found.extend(_plain_word(token[position : match.start()]))
            run = match.group()
            found.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
            position = match.end()
        found.extend(_plain_word(token[position:]))
    return found


# words that are common in English requests and rare in the other Latin-script languages of the
# write screen (German, French, Spanish); "a", "in", "die" and the like are left out on purpose
_ENGLISH_MARKERS = frozenset(
    """the and you your my i to is it of for with want wants would this that have has not what where when
    how can could please order orders from was been will just they them there their our we me am are""".split()
)
_OTHER_MARKERS = frozenset(
    """der die das und ich nicht mein meine ist ein eine mit für von wie wo wann bitte bestellung sie ihre
    ihren ihr möchten möchte haben auch nach den dem zu alle
    le la les et je vous votre vos mon ma mes est une des pour avec pas où quand commande du au
    el los las y yo mi mis es una por para con dónde cuándo pedido que quiere quiero su sus del al me
    pueden tienen""".split()
)


def is_english(text: str) -> bool:
    """Whether a task is written in English (the library's language), for routing it to the English
    or the multilingual model (embeddings.RoutedBackend): not when most of its letters are of a
    script other than Latin (Chinese, Japanese, Russian, ...), nor when it has more German, French
    or Spanish function words than English ones. A text without any (an id, a number) counts as
    English."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return True
    latin = sum(1 for c in letters if c.isascii() or "\u00c0" <= c <= "\u024f")
    if latin < len(letters) * 0.8:
        return False
    tokens = _ANY_WORD_RE.findall(text.lower())
    english = sum(1 for t in tokens if t in _ENGLISH_MARKERS)
    # function words, and words with letters English does not use (möchten, où, próximos)
    other = sum(1 for t in tokens if t in _OTHER_MARKERS or not t.isascii()) + text.count("¿") + text.count("¡")
    return english >= other


def library_words(text: str) -> list[str]:
    """The words of an English appliesWhen that the cross-lingual lexical retriever looks for in a
    task of another language (ranking.py): lower-cased, without stop words, numbers and words of
    fewer than three letters, not stemmed (each is embedded as it is written)."""
    return sorted(
        {t for t in _ANY_WORD_RE.findall(text.lower()) if t.isascii() and len(t) > 2 and not t.isdigit()} - STOP_WORDS
    )


def task_units(text: str) -> list[str]:
    """A task's pieces for the cross-lingual lexical retriever: its words of three letters or more,
    Russian ones by their Snowball stem; a Japanese text's runs (no spaces between words) as their
    content words and loanwords' origins, by a morphological analyser (morphology.py), and Chinese
    runs as character pairs, as Japanese ones too without the analyser; tokens with a digit (ids,
    amounts) left out. Without the client's embedding extras (the light client) Russian words
    stay whole."""
    found: set[str] = set()
    if _KANA_RE.search(text):
        runs = [morphology.japanese_words(run) for run in _CJK_RE.findall(text.lower())]
        if all(pieces is not None for pieces in runs):  # with the analyser (else character pairs)
            found.update(w for pieces in runs for w in pieces or () if not any(c.isdigit() for c in w))
            text = _CJK_RE.sub(" ", text)
    for token in _ANY_WORD_RE.findall(text.lower()):
        if any(c.isdigit() for c in token):
            continue
        if len(token) > 2 and _CYRILLIC_RE.search(token):
            stem = morphology.russian_stem(token)
            if stem is not None:
                if len(stem) > 2:
                    found.add(stem)
                continue
        position = 0
        for match in _CJK_RE.finditer(token):
            if match.start() - position > 2:
                found.add(token[position : match.start()])
            run = match.group()
            found.update([run] if len(run) <= 2 else [run[i : i + 2] for i in range(len(run) - 1)])
            position = match.end()
        if len(token) - position > 2:
            found.add(token[position:])
    return sorted(found)


def _plain_word(token: str) -> list[str]:
    if len(token) < 2:
        return []
    if token.isascii():
        return [] if token in STOP_WORDS else [stem(token)]
    if _CYRILLIC_RE.search(token):
        return [token[:CYRILLIC_PREFIX]]
    return [token]


def compounds(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """Adjacent word pairs as one word, with the stems each part contributes: "desk lamps" →
    ("desklamp", ("desk", "lamp")). Stop words join too ("garbage can" → "garbagecan"); a stop
    word contributes no stem of its own."""
    raw = _WORD_RE.findall(text.lower())
    found = []
    for first, second in zip(raw, raw[1:]):
        if first.isdigit() or second.isdigit():
            continue
        parts = tuple(stem(w) for w in (first, second) if w not in STOP_WORDS and len(w) > 1)
        found.append((stem(first + second), parts))
    return found


def is_identifier(token: str) -> bool:
    """Identifier-shaped: snake_case, camelCase, dotted (refund.over_limit, a.py) or a path.
    Plain words ("search", "Refund") are not."""
    return "_" in token or "/" in token or bool(_CAMEL_RE.search(token)) or bool(_DOTTED_RE.search(token))


def _trim(token: str) -> str:
    return token.rstrip(".-/").lstrip("./")


def identifiers(text: str) -> set[str]:
    """The identifier-shaped tokens of a text, lower-cased (matching ignores case)."""
    found = set()
    for token in _TOKEN_RE.findall(text):
        token = _trim(token)
        if token and is_identifier(token):
            found.add(token.lower())
    return found


def tokens(text: str) -> set[str]:
    """Every token of a task that could name an identifier, lower-cased. The task side is not
    shape-filtered (a user may write `LOOKUPORDER` for `lookupOrder`); the record side is."""
    found = set()
    for token in _TOKEN_RE.findall(text):
        token = _trim(token)
        if token:
            found.add(token.lower())
    return found


def record_identifiers(record: Mapping[str, Any]) -> set[str]:
    """What the exact retriever matches for a record: its id, its identifier-shaped required tools,
    and paths (tokens with a slash) in its appliesWhen and steps; lower-cased."""
    names = {str(record["id"]).lower()}
    names.update(tool.lower() for tool in record.get("requiredTools") or [] if is_identifier(tool))
    for text in [record.get("appliesWhen") or "", *(record.get("steps") or [])]:
        names.update(token for token in identifiers(text) if "/" in token)
    return names
