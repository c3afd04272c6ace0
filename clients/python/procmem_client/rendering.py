"""THE renderer: procedure records into the text an agent's instruction receives. Pure Python.

    Procedure refund.over_limit v3
    1. Look up the order with lookupOrder({{order_id}}).
    2. Check the return window with checkReturnWindow({{order_id}}).
    Do not: promise a refund date before approval.

The input is a procedure record as the agent API carries it (`id`, `version`, `steps`,
`forbiddenActions`); the same function runs on the server (the agent API's `rendered` field, the
select endpoint, the eval replays) and in the client, so all of them produce the same bytes. Token
counts are an estimate (about four characters per token for English text with a BPE tokenizer), not
a tokenizer run: good enough to watch instruction length.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Mapping, TypedDict

CHARS_PER_TOKEN = 4.0
_DO_NOT_PREFIX = re.compile(r"^\s*(do\s+not|don't|don’t|never)\s*:?\s+", re.IGNORECASE)


class RenderedText(TypedDict):
    text: str
    chars: int
    tokens: int


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: ceil(chars / 4). Zero for empty text."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def _forbidden_line(action: str) -> str:
    # Lessons are often written as "Do not promise …" or "Never promise …"; render "Do not: promise …",
    # not "Do not: Do not promise …".
    body = _DO_NOT_PREFIX.sub("", action.strip(), count=1)
    return f"Do not: {body}"


def render_procedure(record: Mapping[str, Any]) -> str:
    """One procedure: the header line, numbered steps, then one `Do not:` line per forbidden action."""
    lines = [f"Procedure {record['id']} v{record['version']}"]
    lines.extend(f"{number}. {step.strip()}" for number, step in enumerate(record.get("steps") or [], start=1))
    lines.extend(_forbidden_line(action) for action in record.get("forbiddenActions") or [] if action.strip())
    return "\n".join(lines)


def render_procedures(records: Iterable[Mapping[str, Any]]) -> str:
    """Several procedures, separated by a blank line, in the order given (the ranker's order)."""
    return "\n\n".join(render_procedure(record) for record in records)


def measure(text: str) -> RenderedText:
    return {"text": text, "chars": len(text), "tokens": estimate_tokens(text)}


def render_with_length(records: Iterable[Mapping[str, Any]]) -> RenderedText:
    return measure(render_procedures(records))


__all__ = ["RenderedText", "estimate_tokens", "measure", "render_procedure", "render_procedures", "render_with_length"]
