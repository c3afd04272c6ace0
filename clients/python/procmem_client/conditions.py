"""What an appliesWhen requires, read for the ranker's ordering (ranking.py, docs/selection.md
"Conditions: clauses and amounts"): its clauses, each a situation the task must show ("The customer
wants to cancel reservation and update reservation flights" is two), and the money amounts it
names as a range ("a small refund of tens of EUR", "more than 500 EUR"), which no sentence
embedding compares. Pure Python.

Both are read from the library's text (English) and compared with a task in any language: a
clause by its embedding, an amount by the digits next to a currency (EUR, €, Euro, евро, ユーロ,
欧元, $, dollars, …)."""

from __future__ import annotations

import math
import re

from .terms import STOP_WORDS, words

# " and " or ";" between two situations; a part needs two content words of its own to stand as a
# clause ("terms and conditions" stays one), else it stays with the part before it
_CLAUSE_SPLIT_RE = re.compile(r"\s+and\s+|\s*;\s*", re.IGNORECASE)
_LEADING_STOP_RE = re.compile(r"[A-Za-z']+")

_CURRENCY = (
    r"(?:eur|euros?|€|usd|us\$|\$|dollars?|gbp|£|pounds?|chf|"
    r"евро|долл\w*|руб\w*|ユーロ|ドル|円|欧元|美元|元|유로|달러)"
)
_NUMBER = r"(\d{1,3}(?:[.,\u00a0\u202f ]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?)"
_AMOUNT_RE = re.compile(rf"{_CURRENCY}\s?{_NUMBER}(?![\d])|(?<![\d\w-]){_NUMBER}\s?{_CURRENCY}(?![a-z])", re.IGNORECASE)
_MAGNITUDE_RE = re.compile(rf"\b(tens|hundreds|thousands)\s+of\s+{_CURRENCY}", re.IGNORECASE)
# "tens" is the smallest magnitude a text names: a single-digit amount is small too
_MAGNITUDES = {"tens": (0.0, 100.0), "hundreds": (100.0, 1000.0), "thousands": (1000.0, math.inf)}
_BOUND_RE = re.compile(
    r"\b(more than|over|above|at least|exceeding|less than|under|below|up to|at most)\s+"
    rf"(?:{_CURRENCY}\s?{_NUMBER}|{_NUMBER}\s?{_CURRENCY})",
    re.IGNORECASE,
)
_LOWER_BOUNDS = {"more than", "over", "above", "at least", "exceeding"}


def clauses(text: str) -> list[str]:
    """The situations of an appliesWhen, each a sentence of its own: the first clause as written,
    the later ones after the first one's leading stop words ("The customer wants to cancel
    reservation and update reservation flights" → "The customer wants to cancel reservation.",
    "The customer wants to update reservation flights."). One clause: the text itself, unchanged
    (its vector is the appliesWhen's)."""
    parts: list[str] = []
    for part in _CLAUSE_SPLIT_RE.split(text.strip()):
        part = part.strip(" .")
        if not part:
            continue
        if parts and len(words(part)) < 2:
            parts[-1] = f"{parts[-1]} and {part}"
        else:
            parts.append(part)
    if len(parts) < 2 or len(words(parts[0])) < 2:
        return [text]
    prefix = []
    for token in parts[0].split():
        if _LEADING_STOP_RE.fullmatch(token) and token.lower() in STOP_WORDS:
            prefix.append(token)
        else:
            break
    lead = " ".join(prefix)
    return [f"{parts[0]}."] + [f"{lead} {part}.".strip() for part in parts[1:]]


def _number(text: str) -> float:
    """'1,200' and '1.200' are twelve hundred, '6,90' and '6.90' are six and nine tenths."""
    text = re.sub(r"[\u00a0\u202f ]", "", text)
    grouped = re.fullmatch(r"(\d{1,3}(?:[.,]\d{3})+)(?:[.,](\d{1,2}))?", text)
    if grouped:
        whole = re.sub(r"[.,]", "", grouped.group(1))
        return float(f"{whole}.{grouped.group(2) or 0}")
    return float(text.replace(",", "."))


def amounts(task: str) -> list[float]:
    """The money amounts of a task: numbers written next to a currency, in any of the languages
    above ("480 EUR", "€ 6,90", "1.200 Euro", "690 欧元", "$35")."""
    found = []
    for match in _AMOUNT_RE.finditer(task):
        value = match.group(1) or match.group(2)
        try:
            found.append(_number(value))
        except ValueError:
            continue
    return found


def amount_ranges(text: str) -> list[tuple[float, float]]:
    """The money ranges an appliesWhen names: "tens of EUR" [10, 100), "hundreds of EUR"
    [100, 1000), "thousands of EUR" [1000, ∞), "more than 500 EUR" [500, ∞), "under 50 EUR"
    [0, 50]. Empty when it names none."""
    ranges = [_MAGNITUDES[m.group(1).lower()] for m in _MAGNITUDE_RE.finditer(text)]
    for match in _BOUND_RE.finditer(text):
        value = _number(match.group(2) or match.group(3))
        bound = match.group(1).lower()
        if bound in _LOWER_BOUNDS:
            ranges.append(
                (
                    value
                    if bound != "over" and bound != "more than" and bound != "above" and bound != "exceeding"
                    else math.nextafter(value, math.inf),
                    math.inf,
                )
            )
        else:
            ranges.append((0.0, value if bound in ("less than", "under", "below") else math.nextafter(value, math.inf)))
    return ranges


def amount_match(task_amounts: list[float], ranges: list[tuple[float, float]]) -> float:
    """1 when one of the task's amounts falls in one of the ranges, else 0 (no amount, no range)."""
    return float(any(low <= value < high for value in task_amounts for low, high in ranges))
