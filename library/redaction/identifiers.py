"""Screening identifiers — a session id, a span's name, a model name, a task key, an intent — for
personal data, with the built-in recognizers (shapes.py: secrets, e-mail addresses, cards, IBANs,
SSNs, IP and street addresses, phone numbers, payment and user ids, dates of birth, and names after
a cue). The generic id shapes (letters mixed with digits, all-caps codes) are left out: an
identifier is such a token by nature (`conv-1a2b`, a UUID), so they would flag every one.

An identifier in which they find anything is not stored as sent: the caller replaces it (a keyed
digest where the identifier must still match itself; library/ingest/otlp_items.py) or drops it."""

from __future__ import annotations

from functools import lru_cache

from .recognizers import PLACEHOLDER_RE, Features, run_chain, select_recognizers
from .shapes import BUILTIN_RECOGNIZERS, CAPITAL_RE, NAME_RECOGNIZERS

MAX_IDENTIFIER = 1000  # longer values are cut before screening (identifiers are short; bounded work)


@lru_cache(maxsize=8192)  # the spans of one request repeat their conversation id, model and names
def personal_in_identifier(value: str) -> tuple[str, ...]:
    """The kinds of personal data found in `value` (placeholder labels such as "email_address",
    sorted), or () when it looks like an ordinary identifier."""
    if not value:
        return ()
    value = value[:MAX_IDENTIFIER]
    features = Features(value)
    chain = select_recognizers(BUILTIN_RECOGNIZERS, features)
    if CAPITAL_RE.search(value):
        chain.extend(select_recognizers(NAME_RECOGNIZERS, features))
    if not chain:
        return ()
    redacted = run_chain(chain, value)
    if redacted == value:
        return ()
    found = {p[2:-2] for p in PLACEHOLDER_RE.findall(redacted)} - {p[2:-2] for p in PLACEHOLDER_RE.findall(value)}
    return tuple(sorted(found)) or ("personal",)


def redacted_identifier(value: str) -> str:
    """`value` with what the recognizers find replaced by placeholders ("chat {{email_address}}")."""
    if not personal_in_identifier(value):
        return value
    features = Features(value)
    chain = select_recognizers(BUILTIN_RECOGNIZERS, features)
    if CAPITAL_RE.search(value):
        chain.extend(select_recognizers(NAME_RECOGNIZERS, features))
    return run_chain(chain, value)
