"""The agent-facing JSON API (v1, and v2: the same endpoints, the served procedures' evidence cut
to its scalar facts; docs/api.md "API versions: v1 and v2"). Agents read; they never write procedures.

    GET  /api/v1/health
    GET  /api/v1/openapi.json                       the OpenAPI 3.1 document (no token)
    GET  /api/v1/agents/{agent}/procedures?role=&environment=&session=   read token: the active set, strong ETag, 304
    GET  /api/v1/agents/{agent}/select?task=&intent=&k=&role=&environment=&session=&taskFiles=   read token: selection (k ≤ 20: diagnostics)
    POST /api/v1/agents/{agent}/select             the same with the parameters in a JSON body: the task stays
                                                   out of URLs, so out of access and proxy logs (the clients' way)
    GET  /api/v1/agents/{agent}/file-index          read token: the files a coding task's words point to, strong ETag, 304
    PUT  /api/v1/agents/{agent}/tools               signed-in admin session + CSRF: replace the tool list

Agent endpoints authenticate through `token_required("read")` (the token lookup and its
`last_used_at` go through the default connection; the read-only role may not read token hashes)
and read the active set through the SELECT-only "readonly" connection. The set is the agent's
namespace's; `role` (optional) narrows it to the procedures open to that role.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import patch_vary_headers
from django.utils.http import parse_etags
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from procmem_client.ranking import MAX_K

from .. import environments, safe_json
from ..permissions import agents_visible_to, user_can_manage_agent
from ..services import agent_set_tools
from ..serving import active_set as serving
from ..serving import environment_sets as releases
from ..serving import load_refusals, selection, task_files
from .openapi import openapi_document
from .tokens import api_error, token_required

ACTIVE_SET_MAX_AGE = 10  # seconds; clients revalidate with If-None-Match after that
MAX_TASK_CHARS = 8000
MAX_REASON_CHARS = 1000  # as the reason fields of the review pages


@csrf_exempt  # read-only: a write method gets the API's JSON 405, not the CSRF check's 403
@require_safe  # HEAD answers as GET without the body (monitors and load balancers probe with HEAD)
def health(request: HttpRequest, api_version: str = "v1") -> JsonResponse:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok", "apiVersion": api_version})


@csrf_exempt
@require_safe  # HEAD answers as GET without the body (monitors and load balancers probe with HEAD)
def openapi(request: HttpRequest, api_version: str = "v1") -> JsonResponse:
    document = openapi_document(server_url=request.build_absolute_uri("/api"), api_version=api_version)
    return JsonResponse(document, json_dumps_params={"indent": 1})


def _method_not_allowed(request: HttpRequest, allowed: list[str]) -> HttpResponse:
    response = api_error(
        405,
        "method_not_allowed",
        f"{request.method} is not allowed on {request.path}; agents may only {', '.join(allowed)}.",
    )
    response["Allow"] = ", ".join(allowed)
    return response


def _agent_reads(*methods: str):
    """Agent endpoints are read-only: a method not in `methods` is 405 (after the token check, so an
    unauthenticated caller learns nothing). POST is a read too where it is allowed (select: the
    task in the body)."""

    def decorator(view):
        def wrapper(request: HttpRequest, *args, **kwargs):
            if request.method not in methods:
                return _method_not_allowed(request, list(methods))
            return view(request, *args, **kwargs)

        wrapper.__name__ = view.__name__
        wrapper.__doc__ = view.__doc__
        return wrapper

    return decorator


_agent_get_only = _agent_reads("GET", "HEAD")


def _cache_headers(response: HttpResponse, etag: str) -> HttpResponse:
    response["ETag"] = etag
    response["Cache-Control"] = f"private, max-age={ACTIVE_SET_MAX_AGE}"
    patch_vary_headers(response, ["Authorization"])
    return response


def _accepts_gzip(request: HttpRequest) -> bool:
    for part in request.headers.get("Accept-Encoding", "").split(","):
        coding, _, params = part.partition(";")
        if coding.strip().lower() == "gzip":
            quality = params.replace(" ", "").lower()
            try:
                return not quality.startswith("q=") or float(quality[2:]) > 0
            except ValueError:
                return False
    return False


def _role_parameter(params) -> tuple[str | None, HttpResponse | None]:
    """`?role=`: absent or empty means no role (every procedure of the namespace, whatever its roles)."""
    role = params.get("role") or None
    if role is not None and not serving.valid_role(role):
        return None, api_error(
            400,
            "invalid_parameter",
            f"role must be a role name (lower-case letters, digits, _ and -, at most 64); got {role[:80]!r}.",
            parameter="role",
        )
    return role, None


def _served_set(request: HttpRequest, params) -> tuple[str, str | None, HttpResponse | None]:
    """`?environment=` (default production; a name the agent does not have is a 400 saying which it
    has) and `?session=` (the session id: picks the session's rollout arms)."""
    try:
        environment = environments.resolve_environment(request.agent, params.get("environment"))
    except environments.UnknownEnvironment as exc:
        return "", None, api_error(400, "unknown_environment", str(exc), parameter="environment")
    try:
        session = environments.clean_session(params.get("session"))
    except ValueError as exc:
        return "", None, api_error(400, "invalid_parameter", str(exc), parameter="session")
    return environment, session, None


def _serving_parameters(request: HttpRequest, params=None) -> tuple[str | None, str, str | None, HttpResponse | None]:
    """The served-set endpoints' `role`, `environment` and `session` (from the query string, or
    `params`: a POST body's), or the refusal of the first bad one."""
    params = request.GET if params is None else params
    role, refusal = _role_parameter(params)
    if refusal is not None:
        return None, "", None, refusal
    environment, session, refusal = _served_set(request, params)
    return role, environment, session, refusal


SELECT_PARAMETERS = ("task", "intent", "k", "role", "environment", "session", "taskFiles")
SELECT_BODY_EXAMPLE = '{"task": "…", "intent"?, "k"?, "role"?, "environment"?, "session"?, "taskFiles"?}'
_TRUE, _FALSE = ("true", "1"), ("false", "0")


def _select_body(request: HttpRequest) -> tuple[dict[str, str], HttpResponse | None]:
    """A POST select's JSON object ({"task", "intent"?, "k"?, "role"?, "environment"?, "session"?,
    "taskFiles"?}) as the query string's strings; a refusal names the field."""
    if not request.body:
        return {}, api_error(400, "invalid_json", f"The body is empty; send a JSON object: {SELECT_BODY_EXAMPLE}.")
    try:
        body = safe_json.parse(request.body)
    except safe_json.JsonRefused as exc:
        # worded as the ingest endpoint's refusal ("The body is not JSON: …"), then what to send
        where = f"The body's field {exc.path}" if exc.path else "The body"
        return {}, api_error(400, "invalid_json", f"{where} {exc.message}; send a JSON object: {SELECT_BODY_EXAMPLE}.")
    if not isinstance(body, dict):
        return {}, api_error(
            400,
            "invalid_json",
            f"The body is a JSON {type(body).__name__.replace('dict', 'object')}; send a JSON object: "
            f"{SELECT_BODY_EXAMPLE}.",
        )
    params: dict[str, str] = {}
    for name, value in body.items():
        if name not in SELECT_PARAMETERS:
            return {}, api_error(
                400,
                "invalid_parameter",
                f"unknown field {name[:80]!r}; select takes {', '.join(SELECT_PARAMETERS)}",
                parameter=name[:80],
            )
        if value is None:
            continue
        if name == "k" and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if name == "taskFiles":
            if not isinstance(value, bool):
                return {}, api_error(
                    400,
                    "invalid_parameter",
                    f"taskFiles must be a boolean (true or false); got {json.dumps(value)[:80]}.",
                    parameter="taskFiles",
                )
            value = "true" if value else "false"
        if not isinstance(value, str):
            expected = "an integer" if name == "k" else "a string"
            return {}, api_error(400, "invalid_parameter", f"{name} must be {expected}.", parameter=name)
        params[name] = value
    return params, None


@csrf_exempt  # bearer-token endpoints: no cookies, so no CSRF; a write method gets a JSON 405
@token_required("read", cache_seconds=serving.recheck_seconds, limit="active_set")
@_agent_get_only
def active_set(request: HttpRequest, agent: str, api_version: str = "v1") -> HttpResponse:
    role, environment, session, refusal = _serving_parameters(request)
    if refusal is not None:
        return refusal
    served = (
        releases.served_for(
            served=serving.active_set_for_agent(agent=request.agent), environment=environment, session=session
        )
        .for_role(role)
        .in_version(api_version)
    )
    compressed = _accepts_gzip(request)
    etag = served.etag_gzip if compressed else served.etag
    header = request.headers.get("If-None-Match")
    # Either representation's tag names the same set, so either one earns a 304.
    if header and (header.strip() == "*" or {served.etag, served.etag_gzip} & set(parse_etags(header))):
        response = _cache_headers(HttpResponse(status=304), etag)
    else:
        response = HttpResponse(served.body_gzip if compressed else served.body, content_type="application/json")
        if compressed:
            response["Content-Encoding"] = "gzip"
        response = _cache_headers(response, etag)
    patch_vary_headers(response, ["Accept-Encoding"])
    return response


def _task_files_parameter(params) -> tuple[bool, HttpResponse | None]:
    """`taskFiles` (optional, default false): true, 1, false or 0 (a POST body's JSON boolean arrives as
    "true"/"false"). With it, each injected coding procedure's recallPointer names the task's files first."""
    raw = params.get("taskFiles")
    if raw in (None, ""):
        return False, None
    value = raw.strip().lower()
    if value in _TRUE or value in _FALSE:
        return value in _TRUE, None
    return False, api_error(
        400,
        "invalid_parameter",
        f"taskFiles must be a boolean: true or false (1 or 0 in the query string); got {raw[:80]!r}.",
        parameter="taskFiles",
    )


def _task_missing(request: HttpRequest, params) -> str:
    """Why `task` is missing, naming the query parameters select does not take (`?query=`, `?q=`:
    the slips seen most) so the caller sees what was sent instead. Unknown query parameters are
    otherwise ignored, as they always were."""
    where = "in the JSON body" if request.method == "POST" else "as ?task="
    message = f"task is required {where}: the task text to select procedures for."
    if request.method != "POST":
        unknown = [name[:80] for name in params if name not in SELECT_PARAMETERS]
        if unknown:
            message += (
                f" Not a parameter of select: {', '.join(repr(name) for name in unknown[:5])};"
                f" it takes {', '.join(SELECT_PARAMETERS)}."
            )
    return message


@csrf_exempt
@token_required("read", cache_seconds=serving.recheck_seconds, limit="select")
@_agent_reads("GET", "HEAD", "POST")
def select(request: HttpRequest, agent: str, api_version: str = "v1") -> HttpResponse:
    params = request.GET
    if request.method == "POST":  # the parameters in the body: the task is in no URL, so in no log
        params, refusal = _select_body(request)
        if refusal is not None:
            return refusal
    task = params.get("task", "")
    intent = params.get("intent") or None
    raw_k = params.get("k")
    role, environment, session, refusal = _serving_parameters(request, params)
    if refusal is not None:
        return refusal
    task_files, refusal = _task_files_parameter(params)
    if refusal is not None:
        return refusal
    if not task.strip():
        return api_error(400, "invalid_parameter", _task_missing(request, params), parameter="task")
    if len(task) > MAX_TASK_CHARS:
        return api_error(
            400,
            "invalid_parameter",
            f"task is longer than {MAX_TASK_CHARS} characters ({len(task)}); send the task's text, not the whole conversation.",
            parameter="task",
        )
    k: int | None = None
    if raw_k not in (None, ""):
        try:
            k = int(raw_k)
        except ValueError:
            k = -1
        if not (1 <= k <= MAX_K):
            return api_error(
                400,
                "invalid_parameter",
                f"k must be an integer from 1 to {MAX_K} (diagnostics only); got {raw_k!r}.",
                parameter="k",
            )
    served = releases.served_for(
        served=serving.active_set_for_agent(agent=request.agent), environment=environment, session=session
    )
    try:
        result = selection.select_for_agent(
            agent=request.agent,
            task=task,
            intent=intent,
            k=k,
            role=role,
            served=served,
            api_version=api_version,
            task_files=task_files,
        )
    except serving.EmbeddingsNotReady as exc:
        return api_error(503, "embeddings_not_ready", str(exc))
    response = JsonResponse(result, json_dumps_params={"ensure_ascii": False})
    response["Cache-Control"] = "no-store"
    patch_vary_headers(response, ["Authorization"])
    return response


@csrf_exempt
@token_required("read", cache_seconds=serving.recheck_seconds, limit="active_set")
@_agent_get_only
def file_index(request: HttpRequest, agent: str, api_version: str = "v1") -> HttpResponse:
    """The agent's file indexes (what its sessions of each repository saw), so that a client ranking
    locally names the same task files in a recall pointer as the select endpoint's `taskFiles`."""
    served = task_files.file_indexes_for_agent(agent=request.agent)
    body, etag = served.body(api_version)
    header = request.headers.get("If-None-Match")
    if header and (header.strip() == "*" or etag in parse_etags(header)):
        return _cache_headers(HttpResponse(status=304), etag)
    return _cache_headers(HttpResponse(body, content_type="application/json"), etag)


def agent_tools(request: HttpRequest, agent: str) -> HttpResponse:
    """PUT {"tools": [...], "reason": "..."}: replaces the agent's tool list (admin API).

    Authenticated by the Django session of a signed-in user who holds `manage_agent` on the agent
    (or is a superuser), with the CSRF token in `X-CSRFToken` — not by an agent token: a tool list
    decides which procedures agents receive, so a named person makes the change and the audit log
    says who. GET returns the current list and the versions refused under it."""
    if not request.user.is_authenticated:
        return api_error(401, "unauthorized", "Sign in as an admin of this agent (session cookie and X-CSRFToken).")
    target = agents_visible_to(request.user).filter(name=agent).first()
    if target is None:
        return api_error(404, "not_found", f"No agent named {agent!r}.")
    if not user_can_manage_agent(request.user, target):
        return api_error(403, "forbidden", f"You may not change the tools of {target.name}.")
    if request.method == "PUT":
        try:
            payload: Any = safe_json.parse(request.body or b"{}")
        except safe_json.JsonRefused as exc:
            return api_error(
                400,
                "invalid_json",
                f'The body must be JSON: {{"tools": ["name", ...], "reason": "..."}} ({exc}).',
                field=exc.path or "(body)",
            )
        if not isinstance(payload, dict) or "tools" not in payload:
            return api_error(400, "invalid_parameter", 'The body needs a "tools" list.', parameter="tools")
        reason = payload.get("reason") or ""
        if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS:
            return api_error(
                400,
                "invalid_parameter",
                f"reason must be text of at most {MAX_REASON_CHARS} characters.",
                parameter="reason",
            )
        try:
            target = agent_set_tools(agent=target, tools=payload["tools"], user=request.user, reason=reason)
        except ValidationError as exc:
            return api_error(400, "invalid_parameter", "; ".join(exc.messages), parameter="tools")
    elif request.method != "GET":
        return _method_not_allowed(request, ["GET", "PUT"])
    # The load-time check runs now rather than at the agents' next fetch, so the caller sees what
    # the new list refuses and the alert goes out at once (once: see serving.load_refusals.load_refusal_record).
    served = serving.active_set_for_agent(agent=target, using="default")
    return JsonResponse(
        {
            "agent": target.name,
            "tools": list(target.tools),
            "toolsHash": load_refusals.tools_state_hash(list(target.tools)),
            "refused": served.data["refused"],
        }
    )
