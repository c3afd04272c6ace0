"""The procmem API as both Python clients speak it (`ProcmemClient` in procmem_client.client on urllib,
`AsyncProcmemClient` in procmem_client.aio on httpx): the bodies they send (select's parameters, the
JSON Lines of session reports and outcomes, a session's record), how they read the answers (a set, a
selection, the pointers of the selected records) and how they word a refusal (`last_error`, a
ProcmemError's message). Functions without I/O: what changes here changes for both clients at once,
while each transport stays in its own module.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from .coding import recall_pointer
from .selection import Selection


def select_query(
    *,
    task: str,
    intent: str | None,
    k: int | None,
    environment: str | None,
    session: str | None,
    task_files: bool = False,
) -> dict[str, Any]:
    """The select endpoint's parameters as the POST body sends them (sync and async clients alike)."""
    if not isinstance(task, str) or not task.strip():
        raise ValueError("task must be a non-empty string")
    return {
        "task": task,
        **({"intent": intent} if intent else {}),
        **({"k": str(k)} if k is not None else {}),
        **({"environment": environment} if environment else {}),
        **({"session": session} if session else {}),
        **({"taskFiles": True} if task_files else {}),
    }


def refuses_task_files(status: int, body: bytes | str) -> bool:
    """A server from before select's `taskFiles` refuses it as an unknown field (400 naming it)."""
    if status != 400:
        return False
    try:
        error = json.loads(body).get("error") or {}
    except (ValueError, AttributeError):
        return False
    return (
        isinstance(error, dict)
        and error.get("parameter") == "taskFiles"
        and "unknown field" in str(error.get("message"))
    )


def recall_pointers(injected: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The pointers of selected records: the served `recallPointer` (with task files when the selection
    asked for them), else computed the same way."""
    return [record.get("recallPointer") or recall_pointer(record) for record in injected]


def empty_selection(task: str, intent: str | None) -> Selection:
    """What is injected when the select endpoint fails: nothing (the agent still runs)."""
    return {"task": task, "intent": intent or None, "cap": 0, "injected": [], "ranked": []}


def selection_from_response(task: str, data: Any) -> Selection:
    """The select endpoint's answer as a Selection; ValueError when it is not one."""
    if not isinstance(data, dict) or not isinstance(data.get("injected"), list):
        raise ValueError("the response is not a selection")
    return {
        "task": task,
        "intent": data.get("intent"),
        "cap": int(data.get("cap", 0)),
        "injected": data["injected"],
        "ranked": data.get("ranked", []),
    }


def checked_set(data: Any) -> dict[str, Any]:
    """An active set as the API serves it; ValueError when the body is not one."""
    if not isinstance(data, dict) or not isinstance(data.get("procedures"), list):
        raise ValueError("the response is not an active set")
    return data


def sessions_body(sessions: Sequence[Mapping[str, Any]]) -> bytes:
    """procmem JSON Lines: one session a line (POST /api/v1/sessions)."""
    return "".join(json.dumps(dict(s), ensure_ascii=False, separators=(",", ":")) + "\n" for s in sessions).encode(
        "utf-8"
    )


def outcome_record(
    session_id: str,
    *,
    resolved: bool | None = None,
    escalated: bool | None = None,
    rating: float | None = None,
    complaint: bool | None = None,
    closed_by_customer: bool | None = None,
    at: str | None = None,
    source: str | None = None,
) -> dict[str, Any]:
    """One line of POST /api/v1/sessions/outcomes: what became known about a finished session later
    (the fields left out are unknown, not false)."""
    outcome = {
        "session_id": session_id,
        "resolved": resolved,
        "escalated": escalated,
        "rating": rating,
        "complaint": complaint,
        "closed_by_customer": closed_by_customer,
        "at": at,
        "source": source,
    }
    return {key: value for key, value in outcome.items() if value is not None}


def outcome_refusal(path: str, status: int, detail: Any) -> bool:
    """True when an error answer of the outcomes endpoint is its per-item answer (every outcome
    refused or naming an unknown session): returned to the caller, not raised."""
    return path == "sessions/outcomes" and status == 422 and isinstance(detail, dict) and "unknown" in detail


def http_failure(status: int, body: bytes | str, *, method: str, url: str) -> str:
    """`last_error` for a refusal: the status, the request and the server's own message and code
    (`HTTP 401 from GET /api/v1/agents/a/procedures: The token is unknown, revoked or expired.
    (unauthorized)`), rather than the raw JSON body; a body that is not the API's error, cut to 300."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        error = json.loads(text)["error"]
        detail = f"{error['message']} ({error['code']})"
    except (ValueError, KeyError, TypeError):
        detail = text[:300]
    return f"HTTP {status} from {method} {urllib.parse.urlsplit(url).path}: {detail}"


def refusal_reason(detail: Any) -> str:
    """Why a report was refused, for the ProcmemError's message (which said only "POST … answered
    403"): the API error's message and code, or an ingest report's first refused item and its field."""
    if not isinstance(detail, Mapping):
        return f": {detail}" if isinstance(detail, str) and detail else ""
    error = detail.get("error")
    if isinstance(error, Mapping) and "message" in error:
        return f": {error['message']} ({error.get('code')})"
    refused = detail.get("refused")
    if isinstance(refused, list) and refused and isinstance(refused[0], Mapping):
        first = refused[0]
        errors = first.get("errors") or [{}]
        problem = errors[0] if isinstance(errors[0], Mapping) else {}
        return (
            f": {len(refused)} refused, the first item {first.get('index')}: "
            f"{problem.get('field', '?')} {problem.get('message', '')}".rstrip()
        )
    return ""


def selection_cap(data: Mapping[str, Any]) -> int:
    """How many procedures a set lets a task receive (0 while procedural memory is switched off)."""
    return int(data.get("injectionCap", 2)) if data.get("proceduralMemoryEnabled", True) else 0


def session_record(
    *,
    session_id: str,
    agent: str,
    task: str,
    resolved: bool | None,
    escalated: bool | None = None,
    rating: float | None = None,
    intent: str | None = None,
    tool_calls: Sequence[Mapping[str, Any]] = (),
    injected: Sequence[Mapping[str, Any]] = (),
    instruction_chars: int | None = None,
    model: str = "",
    ended_at: datetime | str | None = None,
) -> dict[str, Any]:
    """One finished session in procmem JSONL form (docs/api.md "Sessions in: ingestion")."""
    if isinstance(ended_at, datetime):
        ended = ended_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    else:
        ended = ended_at or datetime.now(UTC).isoformat().replace("+00:00", "Z")
    return {
        "session_id": session_id,
        "agent": agent,
        "intent": intent,
        "task": task,
        "outcome": {"resolved": resolved, "escalated": escalated, "rating": rating},
        "tool_calls": [{"name": c["name"], "args": c.get("args", {}), "ok": c.get("ok", True)} for c in tool_calls],
        "injected": [
            {"id": p["id"], "version": int(p["version"]), **({"arm": p["arm"]} if p.get("arm") else {})}
            for p in injected
        ],
        "instruction_chars": instruction_chars,
        "model": model,
        "ended_at": ended,
    }
