"""The terms the lexical and exact retrievers compare (ranking.py): stemmed words without stop
words, compounds of adjacent words, and identifier-shaped tokens (snake_case, camelCase, dotted
names, paths) of tasks and of procedure records. Pure Python."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

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


def words(text: str) -> list[str]:
    return [stem(w) for w in _WORD_RE.findall(text.lower()) if w not in STOP_WORDS and len(w) > 1]


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
