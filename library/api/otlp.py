"""POST /api/otlp/v1/traces: OTLP/HTTP trace export (docs/api.md "OpenTelemetry traces").

A standard OTLP exporter configured with `OTEL_EXPORTER_OTLP_ENDPOINT=<procmem>/api/otlp` and
`OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer <ingest token>` delivers here unchanged. Responses
follow the OTLP/HTTP specification, in the request's encoding (protobuf or JSON):

- 200 with an `ExportTraceServiceResponse`; its `partial_success` (rejected_spans, error_message)
  is set when some spans were rejected (no GenAI attribute, invalid ids, a late span, …);
- 400 with a `google.rpc.Status` when the body cannot be decoded (bad protobuf, bad JSON, bad gzip),
  401 for a missing token and for an unknown, revoked or expired one (each saying which), 403 for a
  token of another scope, 429 (Retry-After) over the agent's OTLP rate limit or the address's failed
  authentications, 413 for a body over PROCMEM_INGEST_MAX_BODY_BYTES (also after gunzip) or more
  spans than PROCMEM_OTLP_MAX_SPANS_PER_REQUEST, 415 for another Content-Type (answered in JSON),
  405 for another method; a 500 is a Status too (procmem_site/middleware.py turns any error the
  view did not answer into one, in the request's encoding).

Spans become sessions as library/ingest/otlp.py describes; the agent is the token's.
"""

from __future__ import annotations

import zlib

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ..ingest import otlp
from ..models import ApiToken
from .ingest import _read_body
from .limits import auth_failure_counted, auth_failures_exceeded, rate_limited
from .tokens import authenticate, token_touch

_CODES = {
    400: code_pb2.INVALID_ARGUMENT,
    401: code_pb2.UNAUTHENTICATED,
    403: code_pb2.PERMISSION_DENIED,
    405: code_pb2.UNIMPLEMENTED,
    413: code_pb2.RESOURCE_EXHAUSTED,
    415: code_pb2.INVALID_ARGUMENT,
    429: code_pb2.RESOURCE_EXHAUSTED,
    500: code_pb2.INTERNAL,
    503: code_pb2.UNAVAILABLE,
}


def _encoded(message: Message, content_type: str, status: int) -> HttpResponse:
    if content_type == otlp.PROTOBUF:
        return HttpResponse(message.SerializeToString(), status=status, content_type=otlp.PROTOBUF)
    return HttpResponse(json_format.MessageToJson(message, indent=None), status=status, content_type=otlp.JSON)


def _status(status: int, message: str, content_type: str) -> HttpResponse:
    return _encoded(status_pb2.Status(code=_CODES.get(status, code_pb2.UNKNOWN), message=message), content_type, status)


def _answer_as(request: HttpRequest) -> str:
    return otlp.PROTOBUF if (request.content_type or "") == otlp.PROTOBUF else otlp.JSON


def otlp_error(request: HttpRequest, status: int, message: str) -> HttpResponse:
    """An error the view did not answer itself (a 500, a refusal of a middleware) as OTLP/HTTP
    wants it: a google.rpc.Status in the request's encoding (procmem_site/middleware.py)."""
    return _status(status, message, _answer_as(request))


def otlp_error_matches(request: HttpRequest, response: HttpResponse) -> bool:
    """True when an error answer is in the request's encoding already (the view's own Status; a
    JSON request's JSON error)."""
    return response.get("Content-Type", "").startswith(_answer_as(request))


def _gunzip(body: bytes, limit: int) -> bytes | None:
    """The inflated body, None when it is over `limit` bytes; ValueError when it is not gzip."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise ValueError(f"the gzip body cannot be inflated: {exc}") from None
    if len(data) > limit:
        return None
    if not inflater.eof:
        raise ValueError("the gzip body ends before its end")
    return data


@csrf_exempt  # bearer tokens, no cookies
def traces(request: HttpRequest) -> HttpResponse:
    content_type = request.content_type or ""
    answer_as = _answer_as(request)
    if request.method != "POST":
        response = _status(405, "Only POST: OTLP/HTTP trace export.", answer_as)
        response["Allow"] = "POST"
        return response
    retry_after = auth_failures_exceeded(request)  # before the lookup: a flood of bad tokens costs none
    if retry_after is None:
        kind, _, raw = request.headers.get("Authorization", "").partition(" ")
        sent = kind.lower() == "bearer" and raw.strip()
        token = authenticate(raw.strip()) if sent else None
        if token is None:
            retry_after = auth_failure_counted(request)
            if retry_after is None:
                # say which: no token at all, or one procmem does not accept (issue 39)
                response = _status(
                    401,
                    "The bearer token is unknown, revoked or expired: send a live ingest token "
                    "(OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20<token>)."
                    if sent
                    else "No bearer token: send Authorization: Bearer <ingest token> "
                    "(OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20<token>).",
                    answer_as,
                )
                response["WWW-Authenticate"] = (
                    'Bearer realm="procmem", error="invalid_token"' if sent else 'Bearer realm="procmem"'
                )
                return response
    if retry_after is not None:
        response = _status(
            429, "Too many failed authentications from this address; retry after the Retry-After seconds.", answer_as
        )
        response["Retry-After"] = str(retry_after)
        return response
    if token.scope != ApiToken.Scope.INGEST:
        return _status(403, "This token may not write sessions: use a token of scope ingest.", answer_as)
    limited = rate_limited(
        request, token=token, endpoint="otlp"
    )  # the agent's OTLP limit (library/agents/rate_limits.py)
    if limited is not None:
        response = _status(429, "Over the agent's OTLP rate limit; retry after the Retry-After seconds.", answer_as)
        response["Retry-After"] = limited["Retry-After"]
        return response
    token_touch(token)
    if content_type not in (otlp.PROTOBUF, otlp.JSON):
        return _status(
            415, f"Content-Type must be {otlp.PROTOBUF} or {otlp.JSON}, not {content_type or 'none'!r}.", otlp.JSON
        )
    limit = settings.PROCMEM_INGEST_MAX_BODY_BYTES
    body = _read_body(request, limit)
    if body is None:
        return _status(413, f"The request body is over {limit} bytes; export smaller batches.", answer_as)
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding == "gzip":
        try:
            body = _gunzip(body, limit)
        except ValueError as exc:
            return _status(400, f"The body is not valid gzip: {exc}.", answer_as)
        if body is None:
            return _status(413, f"The inflated body is over {limit} bytes; export smaller batches.", answer_as)
    elif encoding not in ("", "identity"):
        return _status(415, f"Content-Encoding must be gzip or none, not {encoding!r}.", answer_as)
    try:
        export = otlp.decode_request(body, content_type)
    except otlp.OtlpRefused as exc:
        return _status(exc.status, exc.message, answer_as)
    count, most = sum(len(s.spans) for r in export.resource_spans for s in r.scope_spans), otlp.max_spans_per_request()
    if count > most:
        return _status(
            413,
            f"The request carries {count} spans; at most {most} per request (PROCMEM_OTLP_MAX_SPANS_PER_REQUEST): "
            "export smaller batches (OTEL_BSP_MAX_EXPORT_BATCH_SIZE).",
            answer_as,
        )
    accepted, rejected = otlp.spans_of(export)
    late, _stored = otlp.spans_accept(agent=token.agent, spans=accepted)
    rejected += late
    response = ExportTraceServiceResponse()
    notes = [note for span in accepted for note in span.notes]
    if rejected or notes:  # rejected_spans 0 with a message: a warning (the OTLP specification)
        response.partial_success.rejected_spans = len(rejected)
        response.partial_success.error_message = otlp.partial_success_message(rejected, notes=notes)
    return _encoded(response, answer_as, 200)
