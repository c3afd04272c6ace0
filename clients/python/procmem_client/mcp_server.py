"""procmem over MCP (the Model Context Protocol), on the official MCP Python SDK: `pip install
'./clients/python[mcp]'`, then `procmem-mcp` (stdio) or `procmem-mcp --transport streamable-http`.

    procmem-mcp --url https://procmem.example.com --agent support_agent --token "$PROCMEM_TOKEN"
    # or PROCMEM_URL, PROCMEM_AGENT, PROCMEM_TOKEN (and PROCMEM_INGEST_TOKEN for reports)

What an MCP client sees (the same from the procmem server's own endpoint, library/api/mcp_endpoint.py):
- tool `recall_procedures(task, intent?)`: the block the select endpoint returns for the task (the
  fixed header and at most the agent's cap of procedures, under the character cap), as text, and as
  structured content with the injected ids and versions and the set's ETag;
- tool `report_session(...)`: reports one finished session (POST /api/v1/sessions), listed only when
  an ingest token is configured (at the server's endpoint: when the caller's token has the ingest scope);
- one resource per ACTIVE procedure, `procmem://<agent>/procedures/<id>`: the procedure as rendered;
- one resource per served skill, `skill://<name>/v<N>`: its SKILL.md (text/markdown), the bytes the
  server's /.well-known/agent-skills/ serves for it (procmem_client.skill_rendering).

The tools, their schemas and their answers are defined once here (`build_server`) over a `Backend`:
`ClientBackend` reads through `ProcmemClient` (its ETag cache; the last good set when procmem is
unreachable, ranked locally when the `[embeddings]` extra is installed), the server's backend
reads its own served set. One renderer either way (procmem_client.rendering).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NotRequired, Protocol, TypedDict

import anyio
import anyio.to_thread
from mcp import types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from .agent_checks import address_problem
from .client import ProcmemClient, ProcmemError, session_record
from .rendering import render_block, render_procedure
from .skill_rendering import SKILL_FILE, render_skill

RECALL_TOOL = "recall_procedures"
REPORT_TOOL = "report_session"
RESOURCE_PREFIX = "procmem://"
SKILL_PREFIX = "skill://"
MAX_TASK_CHARS = 8000  # as the select endpoint (library/api/views.py)
NOTHING_APPLIES = "No reviewed procedure applies to this task."
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class Recall(TypedDict):
    rendered: str  # the block, exactly as the select endpoint's `rendered` ("" when nothing applies)
    chars: int
    injected: list[dict[str, Any]]  # [{"id", "version"}] in the block's order
    setEtag: str | None
    stale: bool  # True when procmem was unreachable and the last good set answered
    note: str | None
    # coding procedures' recall pointers, naming the task's files first (select's taskFiles)
    pointers: NotRequired[list[dict[str, Any]]]


class Backend(Protocol):
    """What the MCP tools read and write. Methods are synchronous; the server runs them off the
    event loop (`run_sync`)."""

    agent: str
    can_recall: bool
    can_report: bool

    def recall(self, *, task: str, intent: str | None) -> Recall: ...

    def procedures(self) -> list[dict[str, Any]]: ...

    def report(self, record: dict[str, Any]) -> dict[str, Any]: ...

    def skills(self) -> list[Skill]: ...


class Skill(TypedDict):
    """A served skill as the MCP resources list it: name, version, description and SKILL.md."""

    name: str
    version: int
    description: str
    skill_md: str


def skills_of(records: list[dict[str, Any]]) -> list[Skill]:
    """The served records as skills, rendered here (the server's backend reads its built ones)."""
    skills: list[Skill] = []
    for record in records:
        folder = render_skill(record)
        skills.append(
            {
                "name": folder["name"],
                "version": int(record["version"]),
                "description": folder["description"],
                "skill_md": folder["files"][SKILL_FILE],
            }
        )
    return skills


class ToolInputError(ValueError):
    """A tool argument is missing or of the wrong type; the message names it."""


# ---------------------------------------------------------------------------------------------- the tools

RECALL_INPUT = {
    "type": "object",
    "properties": {
        "task": {
            "type": "string",
            "description": "The task or user request, in words.",
            "minLength": 1,
            "maxLength": MAX_TASK_CHARS,
        },
        "intent": {
            "type": "string",
            "description": "The task's intent label, when the agent knows it (narrows the candidates).",
        },
    },
    "required": ["task"],
    "additionalProperties": False,
}
RECALL_OUTPUT = {
    "type": "object",
    "properties": {
        "rendered": {"type": "string"},
        "chars": {"type": "integer"},
        "injected": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "version": {"type": "integer"}},
                "required": ["id", "version"],
            },
        },
        "setEtag": {"type": ["string", "null"]},
        "stale": {"type": "boolean"},
        "note": {"type": ["string", "null"]},
        "pointers": {
            "type": "array",
            "description": "Coding procedures only: their recall pointers, the task's files first",
            "items": {"type": "object"},
        },
    },
    "required": ["rendered", "chars", "injected", "setEtag", "stale"],
}
REPORT_INPUT = {
    "type": "object",
    "properties": {
        "session_id": {
            "type": "string",
            "minLength": 1,
            "description": "Your id of the session (a repeat is stored once).",
        },
        "task": {"type": "string", "minLength": 1, "description": "The task the session worked on."},
        "resolved": {"type": ["boolean", "null"], "description": "Did the session resolve the task (null: unknown)."},
        "escalated": {"type": ["boolean", "null"]},
        "rating": {"type": ["number", "null"]},
        "intent": {"type": ["string", "null"]},
        "tool_calls": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "args": {"type": "object"}, "ok": {"type": "boolean"}},
                "required": ["name"],
            },
        },
        "injected": {
            "type": "array",
            "description": "The procedures recall_procedures injected (its structured `injected`).",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "version": {"type": "integer"}, "arm": {"type": "string"}},
                "required": ["id", "version"],
            },
        },
        "model": {"type": "string"},
    },
    "required": ["session_id", "task", "resolved"],
    "additionalProperties": False,
}


def tools_for(backend: Backend) -> list[types.Tool]:
    tools = []
    if backend.can_recall:
        tools.append(
            types.Tool(
                name=RECALL_TOOL,
                title="Recall reviewed procedures",
                description=(
                    f"The reviewed procedures of agent {backend.agent} that apply to a task, rendered for your "
                    "instructions (at most the agent's cap). Call it once at the start of a task and follow them."
                ),
                input_schema=RECALL_INPUT,
                output_schema=RECALL_OUTPUT,
                annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
            )
        )
    if backend.can_report:
        tools.append(
            types.Tool(
                name=REPORT_TOOL,
                title="Report a finished session",
                description=(
                    f"Reports one finished session of agent {backend.agent} to procmem: the task, the outcome, the "
                    "tool calls and the procedures recall_procedures injected."
                ),
                input_schema=REPORT_INPUT,
                annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
            )
        )
    return tools


def _text(arguments: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    value = arguments.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise ToolInputError(f"{name} must be a non-empty string" + ("" if required else " when given"))
    return value


def recall_arguments(arguments: Mapping[str, Any]) -> tuple[str, str | None]:
    """The checked `task` and `intent` of a recall_procedures call."""
    unknown = sorted(set(arguments) - {"task", "intent"})
    if unknown:
        raise ToolInputError(f"unknown argument {unknown[0]!r}: recall_procedures takes task and intent")
    task = _text(arguments, "task")
    assert task is not None
    if len(task) > MAX_TASK_CHARS:
        raise ToolInputError(f"task is longer than {MAX_TASK_CHARS} characters")
    return task, _text(arguments, "intent", required=False) or None


def report_record(agent: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The procmem JSONL record of a report_session call (the server validates it again in full)."""
    unknown = sorted(set(arguments) - set(REPORT_INPUT["properties"]))
    if unknown:
        raise ToolInputError(f"unknown argument {unknown[0]!r} of report_session")
    session_id, task = _text(arguments, "session_id"), _text(arguments, "task")
    if "resolved" not in arguments or not isinstance(arguments["resolved"], (bool, type(None))):
        raise ToolInputError("resolved must be true, false or null")
    for name in ("tool_calls", "injected"):
        items = arguments.get(name, [])
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise ToolInputError(f"{name} must be a list of objects")
    for position, call in enumerate(arguments.get("tool_calls", [])):
        if not isinstance(call.get("name"), str) or not call["name"]:
            raise ToolInputError(f"tool_calls[{position}].name must be a non-empty string")
    for position, item in enumerate(arguments.get("injected", [])):
        if (
            not isinstance(item.get("id"), str)
            or not isinstance(item.get("version"), int)
            or isinstance(item.get("version"), bool)
        ):
            raise ToolInputError(f"injected[{position}] needs an id (string) and a version (integer)")
    return session_record(
        session_id=session_id or "",
        agent=agent,
        task=task or "",
        resolved=arguments["resolved"],
        escalated=arguments.get("escalated"),
        rating=arguments.get("rating"),
        intent=arguments.get("intent"),
        tool_calls=arguments.get("tool_calls", []),
        injected=arguments.get("injected", []),
        model=arguments.get("model") or "",
    )


def recall_result(recall: Recall) -> types.CallToolResult:
    """The text is the block itself (a model reads it as is); the structured content adds the ids,
    versions and the set's ETag that a session report names."""
    notes = [recall["note"]] if recall.get("note") else []
    if recall.get("pointers"):  # a coding agent keeps these in view: the files to open, the verify command
        notes.append("\n".join(str(pointer.get("text") or "") for pointer in recall["pointers"]))
    text = recall["rendered"] or NOTHING_APPLIES
    return types.CallToolResult(
        content=[types.TextContent(text=text), *[types.TextContent(text=note) for note in notes]],
        structured_content=dict(recall),
    )


def coding_pointers(injected: list[dict[str, Any]]) -> dict[str, Any]:
    """`{"pointers": [...]}` with the recall pointers of the injected coding procedures (as selected
    with the task's files), or nothing when none is one: other agents' answers stay as they were."""
    pointers = [record["recallPointer"] for record in injected if record.get("recallPointer")]
    return {"pointers": pointers} if pointers else {}


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def resource_uri(agent: str, procedure_id: str) -> str:
    return f"{RESOURCE_PREFIX}{agent}/procedures/{procedure_id}"


def procedure_resource(agent: str, record: Mapping[str, Any]) -> types.Resource:
    return types.Resource(
        uri=resource_uri(agent, record["id"]),
        name=record["id"],
        title=f"{record['id']} v{record['version']}",
        description=record.get("appliesWhen") or None,
        mime_type="text/plain",
    )


def skill_uri(skill: Skill) -> str:
    return f"{SKILL_PREFIX}{skill['name']}/v{skill['version']}"


def skill_resource(skill: Skill) -> types.Resource:
    return types.Resource(
        uri=skill_uri(skill),
        name=skill["name"],
        title=f"{skill['name']} v{skill['version']}",
        description=skill["description"],
        mime_type="text/markdown",
    )


RunSync = Callable[..., Awaitable[Any]]


async def _in_thread(function: Callable[..., Any], *args: Any) -> Any:
    return await anyio.to_thread.run_sync(function, *args)


def build_server(backend: Backend, *, run_sync: RunSync = _in_thread, name: str = "procmem") -> Server:
    """The MCP server over `backend`. `run_sync(function, *args)` runs a backend call off the event
    loop (a worker thread by default; the Django endpoint runs it in the request's own thread)."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools_for(backend))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        try:
            if params.name == RECALL_TOOL and backend.can_recall:
                task, intent = recall_arguments(arguments)
                return recall_result(await run_sync(functools.partial(backend.recall, task=task, intent=intent)))
            if params.name == REPORT_TOOL and backend.can_report:
                answer = await run_sync(backend.report, report_record(backend.agent, arguments))
                return types.CallToolResult(
                    content=[types.TextContent(text=_report_summary(answer))], structured_content=answer
                )
        except ToolInputError as exc:
            return _error(f"{params.name}: {exc}")
        except ProcmemError as exc:
            return _error(f"{params.name}: {exc}" + (f" ({exc.body})" if exc.body else ""))
        offered = ", ".join(tool.name for tool in tools_for(backend)) or "none"
        return _error(f"unknown tool {params.name!r}; this connection offers: {offered}")

    async def procedures() -> list[dict[str, Any]]:
        try:
            return await run_sync(backend.procedures) if backend.can_recall else []
        except ProcmemError as exc:
            raise MCPError(INTERNAL_ERROR, str(exc)) from None

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        records = await procedures()
        skills = await run_sync(backend.skills) if backend.can_recall else []
        return types.ListResourcesResult(
            resources=[procedure_resource(backend.agent, record) for record in records]
            + [skill_resource(skill) for skill in skills]
        )

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri.startswith(SKILL_PREFIX):
            for skill in await run_sync(backend.skills) if backend.can_recall else []:
                if skill_uri(skill) == uri:
                    return types.ReadResourceResult(
                        contents=[
                            types.TextResourceContents(uri=uri, mime_type="text/markdown", text=skill["skill_md"])
                        ]
                    )
            raise MCPError(INVALID_PARAMS, f"no served skill at {uri} (resources/list names them)")
        records = await procedures()
        for record in records:
            if resource_uri(backend.agent, record["id"]) == uri:
                return types.ReadResourceResult(
                    contents=[
                        types.TextResourceContents(uri=uri, mime_type="text/plain", text=render_procedure(record))
                    ]
                )
        raise MCPError(INVALID_PARAMS, f"no ACTIVE procedure at {uri} (resources/list names them)")

    return Server(
        name,
        version="1",
        instructions=f"Reviewed procedures of agent {backend.agent}: call {RECALL_TOOL} with the task before you act.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def _report_summary(answer: Mapping[str, Any]) -> str:
    counts = answer.get("counts") or {}
    return (
        f"stored {counts.get('stored', 0)}, duplicate {counts.get('duplicate', 0)}, refused {counts.get('refused', 0)}"
    )


# ---------------------------------------------------------------------------------------------- the client's backend


class ClientBackend:
    """The tools over a `ProcmemClient`: the set through its ETag cache, the last good set when
    procmem is unreachable (`stale` in the answer says so), selection as the client selects."""

    can_recall = True

    def __init__(self, client: ProcmemClient) -> None:
        self.client = client
        self.agent = client.agent
        self.can_report = client.can_report

    def recall(self, *, task: str, intent: str | None) -> Recall:
        if not self.client.local_ranking:
            self.client.last_error = None  # the server's select reports its own failure; a success leaves it as it was
        selection = self.client.select(task=task, intent=intent, task_files=True)
        self._refuse_a_refused_token()
        block = render_block(selection["injected"], max_chars=self.client.max_chars)
        stale = self.client.last_error is not None
        if stale:
            note = f"procmem is unreachable ({self.client.last_error}); " + (
                "these come from the last good set." if self.client.has_set else "no set has been fetched yet."
            )
        else:
            note = None
        return {
            "rendered": block["text"],
            "chars": block["chars"],
            "injected": [{"id": p["id"], "version": int(p["version"])} for p in block["included"]],
            "setEtag": self.client.etag if self.client.local_ranking else self.client.selected_set_etag,
            "stale": stale,
            "note": note,
            **coding_pointers(block["included"]),
        }

    def procedures(self) -> list[dict[str, Any]]:
        records = self.client.procedures()
        self._refuse_a_refused_token()
        return records

    def skills(self) -> list[Skill]:
        return skills_of(self.client.procedures())

    def report(self, record: dict[str, Any]) -> dict[str, Any]:
        return self.client.report_sessions([record])

    def _refuse_a_refused_token(self) -> None:
        """A token the server refuses is a configuration error, not an outage: answered as an
        empty library ("No reviewed procedure applies") an agent would go on without procedures
        and nobody would know (issue 39), so the tool fails and says why."""
        if self.client.token_refused:
            raise ProcmemError(
                f"procmem refused the read token for agent {self.agent} ({self.client.last_error}); "
                "check PROCMEM_TOKEN (--token): it must be a live read token of this agent",
                status=self.client.last_error_status,
            )


# ---------------------------------------------------------------------------------------------- procmem-mcp


def _parser() -> argparse.ArgumentParser:
    env = os.environ.get
    parser = argparse.ArgumentParser(
        prog="procmem-mcp", description="An MCP server for an agent's reviewed procedures (stdio or streamable HTTP)."
    )
    parser.add_argument("--url", default=env("PROCMEM_URL"), help="procmem's base URL (PROCMEM_URL)")
    parser.add_argument("--agent", default=env("PROCMEM_AGENT"), help="the agent's name (PROCMEM_AGENT)")
    parser.add_argument("--token", default=env("PROCMEM_TOKEN"), help="a read token of the agent (PROCMEM_TOKEN)")
    parser.add_argument(
        "--ingest-token",
        default=env("PROCMEM_INGEST_TOKEN"),
        help="an ingest token: adds the report_session tool (PROCMEM_INGEST_TOKEN)",
    )
    parser.add_argument("--transport", choices=("stdio", "streamable-http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="streamable HTTP: the address to listen on")
    parser.add_argument("--port", type=int, default=8765, help="streamable HTTP: the port (path /mcp)")
    parser.add_argument("--refresh-interval", type=float, default=30.0, help="seconds between revalidations of the set")
    parser.add_argument(
        "--local-ranking",
        choices=("auto", "yes", "no"),
        default="auto",
        help="rank here with the [embeddings] extra (auto: when it is installed), or ask the server",
    )
    return parser


def client_from_arguments(arguments: argparse.Namespace) -> ProcmemClient:
    missing = [
        f"--{name} (or PROCMEM_{name.upper()})" for name in ("url", "agent", "token") if not getattr(arguments, name)
    ]
    if missing:
        raise SystemExit(f"procmem-mcp: missing {', '.join(missing)}")
    problem = address_problem(arguments.url)  # at start, not as a tool error at the agent's first call
    if problem:
        raise SystemExit(f"procmem-mcp: {problem}")
    return ProcmemClient(
        base_url=arguments.url,
        agent=arguments.agent,
        token=arguments.token,
        ingest_token=arguments.ingest_token or None,
        refresh_interval=arguments.refresh_interval,
        local_ranking={"auto": None, "yes": True, "no": False}[arguments.local_ranking],
    )


async def _serve_stdio(server: Server) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    client = client_from_arguments(arguments)
    server = build_server(ClientBackend(client))
    try:
        if arguments.transport == "stdio":
            anyio.run(_serve_stdio, server)
        else:
            import uvicorn

            app = server.streamable_http_app(host=arguments.host, stateless_http=True, json_response=True)
            uvicorn.run(app, host=arguments.host, port=arguments.port, log_level="warning")
    except KeyboardInterrupt:
        pass
    finally:
        client.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


__all__ = [
    "Backend",
    "ClientBackend",
    "Recall",
    "RECALL_TOOL",
    "REPORT_TOOL",
    "Skill",
    "ToolInputError",
    "build_server",
    "main",
    "procedure_resource",
    "recall_arguments",
    "recall_result",
    "report_record",
    "resource_uri",
    "skill_resource",
    "skill_uri",
    "skills_of",
    "tools_for",
]
