"""/api/v1/agents/{agent}/mcp: procmem-mcp's tools at the server itself, for remote MCP clients
(streamable HTTP, docs/api.md "MCP").

The tools, their schemas and answers are procmem_client.mcp_server's (`build_server`), served here by
the official MCP SDK's streamable HTTP transport in stateless JSON mode: every POST is answered on its
own, so any gunicorn worker can take any request. The Django view authenticates the bearer token
first (a read token: recall_procedures and the resources; an ingest token: report_session), then
hands the request to the SDK on an event loop:

- read tokens: the view reads the served set (and builds its index) before the loop runs, so the
  tools only rank and render — CPU work, no database — and run on an event loop of this very
  thread (Django's async-safety check would stop any query made there). That loop, the MCP server
  and the SDK's session manager are kept per thread and agent (`_kept`), as the SDK means a manager
  to be run once and serve every request: a loop, a server and a manager started and stopped per
  request cost more than the tool's own work besides the query's embedding (bench/RESULTS.md,
  "Agent runtimes"). The request's backend reaches the kept server's tools through a context
  variable;
- ingest tokens: report_session writes, so the SDK runs inside `async_to_sync` and the write comes
  back to this request's thread through `sync_to_async` (thread-sensitive), on the request's
  connection as in every other view. (That bridge hands over between threads several times a
  request: 10 ms more under load, bench/RESULTS.md, so reads avoid it.)

The resources are the served procedures (`procmem://…`) and the served skills (`skill://<name>/v<N>`,
their SKILL.md exactly as /.well-known/agent-skills/ serves it without parameters).

recall_procedures answers with the select endpoint's own selection (`serving.selection.select_for_agent`):
the same set, ranker, caps and renderer, so the same block byte for byte; coding procedures' pointers
name the task's files first (select's `taskFiles`; the agent's file indexes are read with the set).

Only POST is served. A GET is the streamable HTTP transport's stream for server-initiated messages:
in stateless mode there are none, and the SDK would hold the stream (and with it a sync worker)
open until the worker is killed (issue 42), so GET — like DELETE, which ends sessions this mode
does not keep — is answered 405 with `Allow: POST`, as the transport's specification provides for
a server without that stream. Every refusal (405, 401, 403, 429) carries a JSON-RPC error body
besides its status and headers, which MCP clients show as the error's message (the official SDK
turns any other error body into "Server returned an error response"); a 401 keeps its
`WWW-Authenticate` challenge (MCP authorization, RFC 6750).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import logging
import threading
from collections import OrderedDict
from typing import Any

import anyio
from asgiref.sync import async_to_sync, sync_to_async
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.request import RawPostDataException
from django.utils.cache import patch_vary_headers
from django.views.decorators.csrf import csrf_exempt
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from procmem_client.mcp_server import Recall, Skill, build_server, coding_pointers

from ..models import Agent, ApiToken
from ..serving import active_set as serving
from ..serving import selection, task_files
from ..serving.skills import skills_for
from .ingest import sessions_accept
from .limits import rate_limited
from .tokens import api_error, token_required

# Django checks the Host header (ALLOWED_HOSTS) and the bearer token is required, so the SDK's
# DNS-rebinding guard for unauthenticated local servers has nothing to add here.
_SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)
# Stateless mode starts and stops a session manager per request; its INFO lines would be two log
# lines per agent request.
logging.getLogger("mcp.server.streamable_http_manager").setLevel(logging.WARNING)


class ServedBackend:
    """The MCP tools over the agent's served set (production's, as the select endpoint without
    parameters). What the token's scope allows decides which tools are listed."""

    def __init__(self, *, agent: Agent, scope: str, api_version: str) -> None:
        self._agent = agent
        self.agent = agent.name
        self.api_version = api_version
        self.can_recall = scope == ApiToken.Scope.READ
        self.can_report = scope == ApiToken.Scope.INGEST
        self._served: serving.ServedSet | None = None
        self._file_indexes: dict[str, Any] = {}
        if self.can_recall:  # read now, in the request's thread: the tools then touch no database
            self._served = serving.active_set_for_agent(agent=agent)
            self._served.index()
            if any("recallPointer" in p for p in self._served.procedures):  # coding procedures: their task files
                self._file_indexes = task_files.file_indexes_for_agent(agent=agent).indexes

    def recall(self, *, task: str, intent: str | None) -> Recall:
        result = selection.select_for_agent(
            agent=self._agent,
            task=task,
            intent=intent,
            served=self._served,
            api_version=self.api_version,
            task_files=True,
            file_indexes=self._file_indexes,
        )
        return {
            "rendered": result["rendered"],
            "chars": result["renderedChars"],
            "injected": [{"id": p["id"], "version": p["version"]} for p in result["injected"]],
            "setEtag": result["setEtag"],
            "stale": False,
            "note": result.get("note"),
            **coding_pointers(result["injected"]),
        }

    def procedures(self) -> list[dict[str, Any]]:
        return list(self._served.in_version(self.api_version).procedures) if self._served else []

    def report(self, record: dict[str, Any]) -> dict[str, Any]:
        return sessions_accept(agent=self._agent, items=[record])

    def skills(self) -> list[Skill]:
        """The set's skills as /.well-known/agent-skills/ serves them (built once per set)."""
        if self._served is None:
            return []
        return [
            {
                "name": skill.name,
                "version": skill.version,
                "description": skill.description,
                "skill_md": skill.skill_md.decode("utf-8"),
            }
            for skill in skills_for(self._served).skills.values()
        ]


def _asgi_scope(request: HttpRequest) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "root_path": "",
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in request.headers.items()
        ],
        "server": (request.get_host().rsplit(":", 1)[0], int(request.get_port())),
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
    }


Answer = tuple[int, list[tuple[bytes, bytes]], bytes]  # status, headers, body


async def _here(function: Any, *args: Any) -> Any:
    return function(*args)


async def _in_request_thread(function: Any, *args: Any) -> Any:
    return await sync_to_async(function, thread_sensitive=True)(*args)


async def _exchange(manager: StreamableHTTPSessionManager, scope: dict[str, Any], body: bytes) -> Answer:
    """One HTTP exchange with the SDK's stateless streamable HTTP transport (`manager` is running)."""
    answered = anyio.Event()
    sent_body = False
    status, headers, chunks = 500, [], []

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status, headers = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                answered.set()

    await manager.handle_request(scope, receive, send)
    return status, headers, b"".join(chunks)


def _manager(server: Any) -> StreamableHTTPSessionManager:
    return StreamableHTTPSessionManager(app=server, stateless=True, json_response=True, security_settings=_SECURITY)


async def _serve(backend: ServedBackend, scope: dict[str, Any], body: bytes, run_sync: Any = _here) -> Answer:
    """One exchange with a server and manager of its own (the ingest path, in `async_to_sync`)."""
    manager = _manager(build_server(backend, run_sync=run_sync))
    async with manager.run():
        return await _exchange(manager, scope, body)


# ------------------------------------------------------------------------------- the kept read path

_request_backend: contextvars.ContextVar[ServedBackend] = contextvars.ContextVar("procmem_mcp_backend")
KEPT_AGENTS = 64  # servers kept per thread: the agents a deployment serves, the oldest let go past it


class _RequestBackend:
    """The backend of the request being served (`_request_backend`), under the kept server's agent:
    the tools read it per call, so one server serves every request for the agent in this thread."""

    def __init__(self, agent: str) -> None:
        self.agent = agent

    def __getattr__(self, name: str) -> Any:
        return getattr(_request_backend.get(), name)


class _Kept:
    """A running manager over a kept server: its task holds `manager.run()` open until `stop`."""

    def __init__(self, agent: str) -> None:
        self.manager = _manager(build_server(_RequestBackend(agent), run_sync=_here))
        self.stop = asyncio.Event()
        self.task: asyncio.Task | None = None  # a strong reference: the loop keeps only weak ones

    async def start(self) -> None:
        running = asyncio.Event()

        async def hold() -> None:
            async with self.manager.run():
                running.set()
                await self.stop.wait()

        self.task = asyncio.get_running_loop().create_task(hold())
        await running.wait()


class _ThreadServers(threading.local):
    """This thread's event loop and the servers kept on it, by agent (most recently used last).
    A thread serves one request at a time, so its loop runs only while one of its requests does."""

    def __init__(self) -> None:
        self.runner = asyncio.Runner()
        self.kept: OrderedDict[str, _Kept] = OrderedDict()

    def serve(self, backend: ServedBackend, scope: dict[str, Any], body: bytes) -> Answer:
        kept = self.kept.get(backend.agent)
        if kept is None or kept.task is None or kept.task.done():  # new, or its manager stopped
            kept = self.kept[backend.agent] = _Kept(backend.agent)
            self.runner.run(kept.start())
            while len(self.kept) > KEPT_AGENTS:
                self.kept.popitem(last=False)[1].stop.set()  # ends on this loop's next run
        self.kept.move_to_end(backend.agent)
        return self.runner.run(self._exchange(kept, backend, scope, body))

    @staticmethod
    async def _exchange(kept: _Kept, backend: ServedBackend, scope: dict[str, Any], body: bytes) -> Answer:
        token = _request_backend.set(backend)  # copied into the tasks the manager starts for this request
        try:
            return await _exchange(kept.manager, scope, body)
        finally:
            _request_backend.reset(token)


_thread_servers = _ThreadServers()


# JSON-RPC error codes of the refusals (implementation-defined server errors, -32000 to -32099);
# `data` names the HTTP status and the agent API's error code, with the error's other fields.
REFUSAL_CODES = {401: -32001, 403: -32003, 405: -32005, 429: -32029}
SERVER_ERROR = -32000


def _request_id(body: bytes) -> Any:
    """The JSON-RPC id of the request in `body`, or None (an id the body does not carry, a batch,
    or no JSON)."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    request_id = message.get("id") if isinstance(message, dict) else None
    return request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None


def _body(request: HttpRequest) -> bytes:
    """The request's body, or nothing when it was already read as a form (a browser's POST): Django
    then no longer has it, and the refusal carries no id."""
    try:
        return request.body
    except RawPostDataException:
        return b""


def _as_jsonrpc_error(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """`response` (an agent API error: {"error": {"code", "message", ...}}) with a JSON-RPC error
    body instead, same status and headers (WWW-Authenticate, Retry-After)."""
    try:
        error = json.loads(response.content)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        error, code, message = {}, "error", response.reason_phrase
    # the agent API error's other fields (a rate limit's scope and limit) stay readable in `data`
    details = {key: value for key, value in error.items() if key not in {"code", "message"}}
    prefix = "Unauthorized: " if response.status_code == 401 else ""
    answer = JsonResponse(
        {
            "jsonrpc": "2.0",
            "id": _request_id(_body(request)) if request.method == "POST" else None,
            "error": {
                "code": REFUSAL_CODES.get(response.status_code, SERVER_ERROR),
                "message": f"{prefix}{message} (HTTP {response.status_code} {code})",
                "data": {**details, "status": response.status_code, "code": code},
            },
        },
        status=response.status_code,
    )
    for name, value in response.items():
        if name.lower() not in {"content-type", "content-length"}:
            answer[name] = value
    return answer


def _jsonrpc_refusals(view):
    """Serves POST only (405 otherwise, before any token lookup) and gives every refusal of `view`
    a JSON-RPC error body (see the module's docstring)."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method != "POST":
            refused = api_error(
                405,
                "method_not_allowed",
                "This endpoint is stateless streamable HTTP: POST JSON-RPC messages; it offers no GET stream.",
            )
            refused["Allow"] = "POST"
            return _as_jsonrpc_error(request, refused)
        response = view(request, *args, **kwargs)
        # the SDK's own errors (a malformed message: 400) are JSON-RPC already; the agent API's are not
        if response.status_code >= 400 and response.get("Content-Type", "").startswith("application/json"):
            try:
                is_api_error = "jsonrpc" not in json.loads(response.content)
            except ValueError:
                is_api_error = False
            if is_api_error:
                return _as_jsonrpc_error(request, response)
        return response

    return wrapper


@csrf_exempt  # bearer-token endpoint: no cookies, so no CSRF
@_jsonrpc_refusals
# a read token is reused for the active set's recheck interval, as the select endpoint does (one
# query less per recall); an ingest token is read every time, as the ingest API reads it
@token_required(
    (ApiToken.Scope.READ, ApiToken.Scope.INGEST),
    cache_seconds=serving.recheck_seconds,
    cache_scopes=(ApiToken.Scope.READ,),
)
def mcp(request: HttpRequest, agent: str, api_version: str = "v1") -> HttpResponse:
    # every JSON-RPC request counts against the rate limit of what the token may do here
    refused = rate_limited(
        request,
        token=request.api_token,
        endpoint="select" if request.api_token.scope == ApiToken.Scope.READ else "ingest",
    )
    if refused is not None:
        return refused
    backend = ServedBackend(agent=request.agent, scope=request.api_token.scope, api_version=api_version)
    if backend.can_report:
        status, headers, body = async_to_sync(_serve)(backend, _asgi_scope(request), request.body, _in_request_thread)
    else:
        status, headers, body = _thread_servers.serve(backend, _asgi_scope(request), request.body)
    response = HttpResponse(body, status=status)
    for name, value in headers:
        if name.lower() != b"content-length":
            response[name.decode("latin-1")] = value.decode("latin-1")
    response["Cache-Control"] = "no-store"
    patch_vary_headers(response, ["Authorization"])
    return response
