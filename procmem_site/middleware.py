"""Site-wide input guards: what no view should ever have to handle.

- `ChunkedBodyMiddleware`: a request body sent with `Transfer-Encoding: chunked` (no
  Content-Length) is read to its end, up to the largest body any view accepts, instead of as empty.
- `InputGuardMiddleware`: a NUL character or a lone surrogate in the path, a query parameter or a
  form field is refused with 400 before any view, sign-in backend or lock-out record sees it
  (PostgreSQL cannot store a NUL; a view reading the value without a Django form would fail).
- `LockoutRetryAfterMiddleware`: the sign-in lock-out's 429 (django-axes) says when to try again,
  `Retry-After` in seconds, as every other 429 of the site does.
- `ApiErrorsMiddleware`: under /api/ and /.well-known/agent-skills/ every error is JSON,
  `{"error": {"code", "message"}}`, even the ones that happen above the views (404 of an unknown
  URL, 405, 413, an unhandled exception's 500); the status and headers such as Allow and WWW-Authenticate are kept.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from axes.helpers import get_client_ip_address, get_client_username, get_cool_off
from axes.models import AccessAttempt
from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.urls import Resolver404, resolve
from django.utils import timezone

from library.api.otlp import otlp_error, otlp_error_matches
from library.safe_json import text_problem

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
# the served set as Agent Skills (library/api/skills.py): read by agents, so its errors are JSON too
SKILLS_PREFIX = "/.well-known/agent-skills/"
OTLP_PREFIX = "/api/otlp/"
FORM_TYPES = {"application/x-www-form-urlencoded", "multipart/form-data"}
ERROR_CODES = {
    400: ("bad_request", "The request is malformed."),
    401: ("unauthorized", "Authentication is required."),
    403: ("forbidden", "You may not do this."),
    404: ("not_found", "There is nothing at this address."),
    405: ("method_not_allowed", "This method is not allowed here."),
    413: ("body_too_large", "The request body is too large."),
    429: ("too_many_requests", "Too many requests; wait and try again."),
    500: ("server_error", "The server failed to answer this request; it has been logged."),
}
KEPT_HEADERS = ("Allow", "WWW-Authenticate", "Retry-After", "Vary")


def is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith((API_PREFIX, SKILLS_PREFIX))


def api_error_response(status: int, code: str, message: str, **extra) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, **extra}}, status=status)


class ChunkedBodyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if (
            request.META.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked"
            and not request.META.get("CONTENT_LENGTH")
            and "wsgi.input" in request.META
        ):
            # Django takes a missing Content-Length as an empty body. The server (gunicorn) has
            # already undone the chunking; read at most one byte more than the largest body any
            # view accepts, so the view can still say "too large".
            limit = max(settings.PROCMEM_INGEST_MAX_BODY_BYTES, settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0) + 1
            request._stream = LimitedStream(request.META["wsgi.input"], limit)
        return self.get_response(request)


class InputGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        problem = self.problem(request)
        if problem is not None:
            where, text = problem
            message = f"The {where} {text}."
            if is_api(request):
                return api_error_response(400, "invalid_input", message, field=where)
            return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
        return self.get_response(request)

    @staticmethod
    def problem(request: HttpRequest) -> tuple[str, str] | None:
        found = text_problem(request.path)
        if found:
            return "address", found
        for key, values in request.GET.lists():
            for text in (key, *values):
                found = text_problem(text)
                if found:
                    return f"query parameter {key!r}", found
        if request.method == "POST" and request.content_type in FORM_TYPES:
            for key, values in request.POST.lists():
                for text in (key, *values):
                    found = text_problem(text)
                    if found:
                        return f"form field {key!r}", found
        return None


class ApiErrorsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code < 400 or not is_api(request):
            return response
        code, message = ERROR_CODES.get(response.status_code, ("error", "The request failed."))
        if request.path_info.startswith(OTLP_PREFIX):
            # OTLP/HTTP: every error is a google.rpc.Status in the request's encoding, a 500 included
            if otlp_error_matches(request, response):
                return response
            converted = otlp_error(request, response.status_code, message)
        elif _is_json(response):
            return response
        else:
            if response.status_code == 404:
                message = _not_found_message(request.path_info) or message
            elif response.status_code == 405 and "Allow" in response:
                # as the agent endpoints' own 405: which method, where, and what is answered there
                message = f"{request.method} is not allowed on {request.path_info}; it answers {response['Allow']}."
            converted = api_error_response(response.status_code, code, message)
        for header in KEPT_HEADERS:
            if header in response:
                converted[header] = response[header]
        return converted


def _not_found_message(path: str) -> str | None:
    """For an address no API route matches: which address, the one it probably meant (the routes
    take no trailing slash, /api/v1/agents/a/procedures/ was the commonest slip) and where the
    routes are listed. None when a route matches and its view said 404 (the generic message)."""
    try:
        resolve(path)
        return None
    except Resolver404:
        pass
    other = path[:-1] if path.endswith("/") else f"{path}/"
    try:
        resolve(other)
        hint = f" Did you mean {other}?"
    except Resolver404:
        hint = ""
    if path.startswith(SKILLS_PREFIX):
        return f"There is no skills endpoint at {path}.{hint} The skills are listed at {SKILLS_PREFIX}index.json."
    version = "v2" if path.startswith("/api/v2/") else "v1"
    return f"There is no API endpoint at {path}.{hint} The endpoints are listed at /api/{version}/openapi.json."


def _is_json(response: HttpResponse) -> bool:
    """A JSON answer is the view's own (the API's error shape, or a 207/422 ingest report); so is a
    protobuf one (the OTLP endpoint's google.rpc.Status, as OTLP/HTTP prescribes)."""
    return response.get("Content-Type", "").startswith(("application/json", "application/x-protobuf"))


class LockoutRetryAfterMiddleware:
    """Adds `Retry-After` to django-axes' lock-out answer: the seconds until the pair of username
    and address is let in again (its last failure plus the cool-off; the whole cool-off when the
    record cannot be read). Placed just outside AxesMiddleware, which builds the 429."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code == 429 and getattr(request, "axes_locked_out", False) and "Retry-After" not in response:
            response["Retry-After"] = str(_lockout_seconds_left(request))
        return response


def _lockout_seconds_left(request: HttpRequest) -> int:
    cool_off = get_cool_off(request)
    if cool_off is None:
        return 60
    credentials = getattr(request, "axes_credentials", None)
    last = (
        AccessAttempt.objects.filter(
            username=get_client_username(request, credentials), ip_address=get_client_ip_address(request)
        )
        .order_by("-attempt_time")
        .values_list("attempt_time", flat=True)
        .first()
    )
    left = (last + cool_off - timezone.now()).total_seconds() if last else cool_off.total_seconds()
    return max(1, math.ceil(min(left, cool_off.total_seconds())))
