"""Screening identifiers — a session id, a span's name, a model name, a task key, an intent — for
personal data, with the built-in recognizers (shapes.py: secrets, e-mail addresses, cards, IBANs,
SSNs, IP and street addresses, phone numbers, payment and user ids, dates of birth and names after a
cue). The generic id shapes (letters mixed with digits, all-caps codes) are left out: an identifier
is such a token by nature (`conv-1a2b`, a UUID), so they would flag every one.

An identifier that shows anything is not stored as sent: the caller replaces it (a keyed digest where
the identifier must still match itself, library/ingest/otlp_items.py) or drops it."""

from __future__ import annotations

from .recognizers import PLACEHOLDER_RE, run_chain
from .shapes import BUILTIN_RECOGNIZERS, NAME_RECOGNIZERS

IDENTIFIER_RECOGNIZERS = [*BUILTIN_RECOGNIZERS, *NAME_RECOGNIZERS]


def personal_in_identifier(value: str) -> list[str]:
    """The kinds of personal data found in `value` (placeholder labels such as "email_address",
    sorted), or [] when it looks like an ordinary identifier."""
    if not value or not isinstance(value, str):
        return []
    redacted = run_chain(IDENTIFIER_RECOGNIZERS, value)
    if redacted == value:
        return []
    before = set(PLACEHOLDER_RE.findall(value))
    return sorted({p[2:-2] for p in PLACEHOLDER_RE.findall(redacted)} - {p[2:-2] for p in before}) or ["personal"]
