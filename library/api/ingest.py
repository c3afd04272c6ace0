"""POST /api/v1/sessions: agents report finished sessions (docs/api.md "Sessions in: ingestion").

Auth: a bearer token of scope "ingest" (library/api/tokens.py); the token names the agent, so an agent
can only ever write its own sessions. Body: one session object, a list of them, or
``{"sessions": [...]}``, or JSON Lines (Content-Type application/x-ndjson, one session a line); ``?format=openai|adk|mini-swe-agent|trace`` for the other input formats (default procmem; trace = a coding agent's hook, docs/api.md "Trace format").
Every item is validated on its own; good items are stored in one transaction, bad ones are refused
with their index and the failing fields. Responses:

- 200 nothing refused; 207 some stored or duplicate, some refused; 422 every item refused (a JSON
  Lines line that is not JSON is one refused item, named by its line);
- 400 the body is not JSON of one of those shapes; 413 the body is over PROCMEM_INGEST_MAX_BODY_BYTES
  or the batch over PROCMEM_INGEST_MAX_BATCH items.
Bodies are parsed by library/safe_json.py; every item passes its storable-value check before it is
read (docs/api.md "Errors and limits"). A chunked body without Content-Length is read too
(procmem_site/middleware.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from .. import formatting, safe_json
from ..ingest.formats import FORMATS, ImportOptions, ItemInvalid, SessionIn, parse_item
from ..ingest.otlp_items import personal_session_id
from ..ingest.otlp_outcomes import hold_seconds, outcomes_hold
from ..ingest.outcomes import OutcomeIn, OutcomeInvalid, outcomes_record, parse_outcome
from ..ingest.store import sessions_store
from ..models import Agent, AgentSession
from ..redaction.identifiers import personal_in_identifier
from .tokens import api_error, token_required

NDJSON_TYPES = {"application/x-ndjson", "application/jsonl", "application/x-jsonlines"}


def _read_body(request: HttpRequest, limit: int) -> bytes | None:
    """The raw body, or None when it is over `limit` bytes: refused on the declared Content-Length
    before reading anything, and never more than limit + 1 bytes read whatever the header says.
    (request.body would apply DATA_UPLOAD_MAX_MEMORY_SIZE instead of our own limit.)"""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        return None
    data = request.read(limit + 1)
    if len(data) > limit:
        return None
    return data


@csrf_exempt
@require_POST
@token_required("ingest", limit="ingest")
def sessions_ingest(request: HttpRequest) -> JsonResponse:
    limit = settings.PROCMEM_INGEST_MAX_BODY_BYTES
    body = _read_body(request, limit)
    if body is None:
        return api_error(
            413, "body_too_large", f"The request body is over {limit} bytes; send smaller batches.", limit=limit
        )
    fmt = request.GET.get("format", "procmem")
    if fmt not in FORMATS:
        return api_error(400, "bad_format", f"format must be one of {', '.join(FORMATS)}, not {fmt!r}.")
    read = _items_of(request, body, key="sessions", noun="session")
    if isinstance(read, JsonResponse):
        return read
    items, unreadable = read
    answer = sessions_accept(agent=request.agent, items=items, fmt=fmt, unreadable=unreadable)
    status = 200 if not answer["refused"] else (207 if answer["stored"] or answer["duplicate"] else 422)
    return JsonResponse(answer, status=status)


def _items_of(
    request: HttpRequest, body: bytes, *, key: str, noun: str
) -> tuple[list[Any], dict[int, dict[str, Any]]] | JsonResponse:
    """The items of a batch body — JSON Lines (one object a line), one object, a list, or
    ``{key: [...]}`` — with the JSON Lines lines that are not JSON by their index; or the error
    answer (400 not JSON / wrong shape / empty, 413 over PROCMEM_INGEST_MAX_BATCH)."""
    # Items that are not even JSON (a bad JSON Lines line): refused by their index, the rest stored.
    unreadable: dict[int, dict[str, Any]] = {}
    if (request.content_type or "") in NDJSON_TYPES:
        # JSON Lines (what procmem_client sends): one object a line, blank lines ignored
        items: list[Any] = []
        for number, line in enumerate((body or b"").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append(safe_json.parse(line, check_values=False))
            except safe_json.JsonRefused as exc:
                unreadable[len(items)] = {"field": "(line)", "message": f"line {number} {exc.message}", "line": number}
                items.append(None)
    else:
        try:
            payload = safe_json.parse(body or b"null", check_values=False)
        except safe_json.JsonRefused as exc:
            return api_error(400, "invalid_json", f"The body {exc.message}.")
        if isinstance(payload, dict) and key in payload:
            if not isinstance(payload[key], list):
                return api_error(
                    400, "bad_shape", f'"{key}" must be a list of {noun} objects, got {type(payload[key]).__name__}.'
                )
            items = payload[key]
        elif isinstance(payload, list):
            items = payload
        elif isinstance(payload, dict):
            items = [payload]
        else:
            return api_error(400, "bad_shape", f'Send one {noun} object, a list of them, or {{"{key}": [...]}}.')
    max_batch = settings.PROCMEM_INGEST_MAX_BATCH
    if len(items) > max_batch:
        return api_error(
            413, "batch_too_large", f"{len(items)} {noun}s in one request; at most {max_batch}.", limit=max_batch
        )
    if not items:
        return api_error(400, "empty_batch", f"The batch holds no {noun}s.")
    return items, unreadable


@csrf_exempt
@require_POST
@token_required("ingest", limit="ingest")
def outcomes_ingest(request: HttpRequest) -> JsonResponse:
    """POST /api/v1/sessions/outcomes: outcomes known after the session (library/ingest/outcomes.py).
    200 all applied (or resent); 202 all applied or held (an OTLP session still waiting: applied
    when it is stored, library/ingest/otlp_outcomes.py); 207 some ids unknown or some items refused;
    422 none applied or held."""
    limit = settings.PROCMEM_INGEST_MAX_BODY_BYTES
    body = _read_body(request, limit)
    if body is None:
        return api_error(
            413, "body_too_large", f"The request body is over {limit} bytes; send smaller batches.", limit=limit
        )
    read = _items_of(request, body, key="outcomes", noun="outcome")
    if isinstance(read, JsonResponse):
        return read
    items, unreadable = read
    good: list[OutcomeIn] = []
    refused: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if index in unreadable:
            refused.append({"index": index, "session_id": None, "errors": [unreadable[index]]})
            continue
        try:
            good.append(parse_outcome(item))
        except OutcomeInvalid as exc:
            refused.append({"index": index, "session_id": exc.session_id, "errors": [e.to_dict() for e in exc.errors]})
    token = request.api_token
    via, actor_label = f"api:{token.prefix}", f"token {token.prefix}"
    good = [_otlp_session_id(request.agent, o) for o in good]
    result = outcomes_record(agent=request.agent, outcomes=good, via=via, actor_label=actor_label)
    # an OTLP session still waiting for its quiet period: held, applied when it is stored
    unknown = set(result.unknown)
    held = outcomes_hold(
        agent=request.agent, outcomes=[o for o in good if o.session_id in unknown], via=via, actor_label=actor_label
    )
    result.applied += held.applied
    result.duplicate += held.duplicate
    result.unknown = [s for s in result.unknown if s not in {*held.held, *held.applied, *held.duplicate}]
    answer = {
        "agent": request.agent.name,
        "applied": result.applied,
        "duplicate": result.duplicate,
        "held": held.held,
        "unknown": result.unknown,
        "refused": refused,
        "counts": {
            "applied": len(result.applied),
            "duplicate": len(result.duplicate),
            "held": len(held.held),
            "unknown": len(result.unknown),
            "refused": len(refused),
        },
    }
    if held.held:
        answer["message"] = (
            f"{formatting.count(len(held.held), 'outcomes')} {'names' if len(held.held) == 1 else 'name'} an OTLP session whose spans still wait for the quiet period: "
            f"held, and applied when the session is stored (held at most {hold_seconds():.0f} s)."
        )
    if refused or result.unknown:
        status = 207 if result.applied or result.duplicate or held.held else 422
    else:
        status = 202 if held.held else 200
    return JsonResponse(answer, status=status)


def _otlp_session_id(agent: Agent, outcome: OutcomeIn) -> OutcomeIn:
    """An outcome naming an OTLP conversation id that looked personal names the session it was stored
    as (library/ingest/otlp_items.py `personal_session_id`), unless the agent has a session of that
    very id (sent by another channel)."""
    if not personal_in_identifier(outcome.session_id):
        return outcome
    if AgentSession.objects.filter(agent=agent, session_id=outcome.session_id).exists():
        return outcome
    return dataclasses.replace(outcome, session_id=personal_session_id(outcome.session_id))


def sessions_accept(
    *, agent: Agent, items: list[Any], fmt: str = "procmem", unreadable: dict[int, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Validates every item on its own and stores the good ones (one transaction): the answer of
    POST /api/v1/sessions (and of the MCP tool report_session). `unreadable`: items already refused
    by their index (a JSON Lines line that is not JSON)."""
    unreadable = unreadable or {}
    good: list[SessionIn] = []
    refused: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if index in unreadable:
            refused.append({"index": index, "session_id": None, "errors": [unreadable[index]]})
            continue
        if isinstance(item, dict) and item.get("agent") not in (None, "", agent.name):
            refused.append(
                {
                    "index": index,
                    "session_id": item.get("session_id")
                    if isinstance(item.get("session_id"), str) and not safe_json.text_problem(item["session_id"])
                    else None,
                    "errors": [
                        {"field": "agent", "message": f"this token writes sessions of agent {agent.name!r} only"}
                    ],
                }
            )
            continue
        try:
            good.append(parse_item(item, fmt=fmt, options=ImportOptions()))
        except ItemInvalid as exc:
            refused.append({"index": index, "session_id": exc.session_id, "errors": [e.to_dict() for e in exc.errors]})
    # the trace format is what the coding agents' capture hook sends (procmem_client.capture)
    result = sessions_store(
        agent=agent, sessions=good, channel=AgentSession.Channel.HOOK if fmt == "trace" else AgentSession.Channel.CLIENT
    )
    return {
        "agent": agent.name,
        "stored": result.stored,
        "duplicate": result.duplicate,
        "refused": refused,
        "counts": {"stored": len(result.stored), "duplicate": len(result.duplicate), "refused": len(refused)},
    }
