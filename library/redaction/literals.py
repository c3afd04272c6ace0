"""Which argument values a stored session and a mined step may keep as they are (pure Python): a
word or short phrase (`"economy"`, `"credit card"`), never anything id-shaped. Everything else is a
placeholder: redacted by the store's Redactor, generalised by the miner (library/mining/arguments.py).
The ingest store and the miner apply this one rule, so a value the evidence shows literally is one the
store kept literally."""

from __future__ import annotations

import re
from typing import Any

PLACEHOLDER_RE = re.compile(r"^\{\{[a-z_]+\}\}$")
# A literal a step may keep: words of letters (any case but not ALL CAPS), "_", "-" and spaces; no
# digits. Everything else (codes, ids, amounts, dates, names from redaction) becomes a placeholder.
SAFE_LITERAL_RE = re.compile(r"^[A-Za-z][A-Za-z_\- ]{1,39}$")
ALL_CAPS_RE = re.compile(r"^[A-Z0-9_\-]+$")


def is_safe_literal(value: Any) -> bool:
    """A value a step may name literally: a word or short phrase, not id-shaped (no digits, not an
    all-caps code, not a redaction placeholder)."""
    return (
        isinstance(value, str)
        and bool(SAFE_LITERAL_RE.match(value))
        and not ALL_CAPS_RE.match(value)
        and not PLACEHOLDER_RE.match(value)
    )
