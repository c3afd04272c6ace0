"""The tool names procmem stores: the rule a stored name follows and the normalisation of a name as
an agent wrote it. One rule for the sessions' calls (library/ingest/session_fields.py) and the agent's
tool list (library/services/tools.py), so that a listed tool matches the calls stored under it. Pure
Python: the session formats import no models."""

from __future__ import annotations

import re
from typing import Any

TOOL_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")
_TOOL_NAME_OTHER = re.compile(r"[^A-Za-z0-9_.\-]+")


def normalise_tool_name(name: Any) -> str | None:
    """The tool name procmem stores for a name as an agent wrote it, or None when nothing usable is
    left. Names as agents write HTTP-style calls are kept readable: every run of characters other
    than letters, digits, `_`, `.` and `-` becomes one `_`, and `_` at either end is dropped
    (`GET Observation` → `GET_Observation`, `POST /Patient/$match` → `POST_Patient_match`); a name
    that then starts with a digit, `.` or `-` gets a leading `_`. At most 128 characters."""
    if not isinstance(name, str):
        return None
    cleaned = _TOOL_NAME_OTHER.sub("_", name.strip()).strip("_")
    if cleaned and not (cleaned[0].isalpha() or cleaned[0] == "_"):
        cleaned = "_" + cleaned
    return cleaned if TOOL_NAME_RE.match(cleaned) else None
