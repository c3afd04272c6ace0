"""The OpenAPI 3.1 documents of the agent API (served at GET /api/v1/openapi.json and
/api/v2/openapi.json: the same endpoints; v2's Procedure.evidence holds scalar facts only).

Written out by hand next to the views it describes, because the API is small and its contract is
versioned: field names here are the ones a Java agent maps onto its `Procedure` record.
tests/library/test_api.py checks that every route of library/api/urls.py is described and that the
responses carry the documented fields.
"""

from __future__ import annotations

import copy
from typing import Any

from procmem_client.ranking import MAX_K

_STR_LIST = {"type": "array", "items": {"type": "string"}}


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


_RATE_LIMITED = {
    **_error("Over the agent's rate limit for this endpoint, per token or per client address; nothing was stored"),
    "headers": {
        "Retry-After": {"description": "Seconds until a request is admitted again", "schema": {"type": "integer"}}
    },
}

# the rollout arm a session got for a procedure (the served JSON says it; sessions report it back)
_ARM = {
    "type": "string",
    "enum": ["rollout", "control"],
    "description": "The rollout arm the served JSON gave this session (optional)",
}

SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {
                        "type": "string",
                        "examples": [
                            "unauthorized",
                            "wrong_scope",
                            "wrong_agent",
                            "invalid_parameter",
                            "unknown_environment",
                        ],
                    },
                    "message": {"type": "string"},
                    "parameter": {"type": "string"},
                },
            }
        },
    },
    "Procedure": {
        "type": "object",
        "description": (
            "One served procedure version, with the seed record's field names: ACTIVE in production; in another "
            "environment the version released there (APPROVED) or production's; in production under a rollout, the "
            "session's arm's version."
        ),
        "required": [
            "id",
            "version",
            "status",
            "appliesWhen",
            "steps",
            "requiredTools",
            "forbiddenActions",
            "evidence",
            "approvedBy",
            "approvedAt",
            "intent",
            "namespace",
            "roles",
            "priority",
            "confidence",
            "rendered",
            "renderedChars",
            "renderedTokens",
        ],
        "properties": {
            "id": {"type": "string", "examples": ["refund.over_limit"]},
            "version": {"type": "integer", "minimum": 1},
            "status": {
                "type": "string",
                "enum": ["ACTIVE", "APPROVED"],
                "description": "APPROVED: approved, not (yet) the production version",
            },
            "appliesWhen": {"type": "string"},
            "steps": _STR_LIST,
            "requiredTools": _STR_LIST,
            "forbiddenActions": _STR_LIST,
            "evidence": {"type": "object", "description": "Session ids, support and contrast numbers, evalRunId"},
            "approvedBy": {"type": ["string", "null"]},
            "approvedAt": {"type": ["string", "null"], "format": "date-time"},
            "intent": {"type": "string"},
            "namespace": {
                "type": "string",
                "description": "The team or tenant the procedure belongs to (the agent's: only those are served)",
            },
            "roles": {
                **_STR_LIST,
                "description": "Roles an agent instance must present (?role=) to receive it; empty: every role",
            },
            "priority": {
                "type": "integer",
                "minimum": -100,
                "maximum": 100,
                "description": "Breaks near-ties in selection: higher first among totals within the ranker's PRIORITY_EPSILON (0.02)",
            },
            "confidence": {
                "type": "string",
                "enum": ["low", "medium", "high"],
                "description": "How sure the library's people are of it (set by an admin; not a measured figure)",
            },
            "rendered": {"type": "string", "description": "The text to put into the instruction"},
            "renderedChars": {"type": "integer"},
            "renderedTokens": {"type": "integer", "description": "Estimate: ceil(chars / 4)"},
            "preconditions": {
                **_STR_LIST,
                "description": "Coding procedures only (absent otherwise): artefacts that must exist before, e.g. a failing test that reproduces the issue",
            },
            "postconditions": {
                **_STR_LIST,
                "description": "Coding procedures only (absent otherwise): artefacts that exist after, e.g. an edited source file, a passing test",
            },
            "verifyCommand": {
                "type": "string",
                "description": "Coding procedures only (absent otherwise; a coding procedure always has one): the command that verifies the work",
            },
            "arm": {
                "type": "string",
                "enum": ["rollout", "control"],
                "description": "Present only for a procedure under a production rollout: the arm this session got (report it with the session)",
            },
            "recallPointer": {
                "type": "object",
                "description": "Coding procedures only (absent otherwise): the short form a coding agent keeps in view, at most 300 tokens (estimate: ceil(chars / 4))",
                "required": ["id", "version", "whenToUse", "verifyCommand", "files", "text", "tokens"],
                "properties": {
                    "id": {"type": "string"},
                    "version": {"type": "integer"},
                    "whenToUse": {"type": "string", "description": "The first sentence of appliesWhen, on one line"},
                    "files": {
                        **_STR_LIST,
                        "description": "The source files its postconditions, then preconditions name (a task family's most edited files; at most 6)",
                    },
                    "tests": {
                        **_STR_LIST,
                        "description": "The test files it names (a task family's, those that pair with its files first; at most 3): what fills the verify command's {{test_file}}",
                    },
                    "verifyCommand": {"type": "string"},
                    "text": {"type": "string"},
                    "tokens": {"type": "integer", "maximum": 300},
                },
            },
        },
    },
    "RefusedProcedure": {
        "type": "object",
        "required": ["id", "version", "intent", "reason", "message", "missingTools"],
        "properties": {
            "id": {"type": "string"},
            "version": {"type": "integer"},
            "intent": {"type": "string"},
            "reason": {"type": "string", "enum": ["missing_tools"]},
            "message": {"type": "string"},
            "missingTools": _STR_LIST,
        },
    },
    "ActiveSet": {
        "type": "object",
        "required": [
            "apiVersion",
            "agent",
            "namespace",
            "proceduralMemoryEnabled",
            "injectionCap",
            "tools",
            "toolsHash",
            "procedures",
            "refused",
        ],
        "properties": {
            "apiVersion": {"type": "string", "const": "v1"},
            "agent": {"type": "string"},
            "namespace": {
                "type": "string",
                "description": "The agent's namespace: the set holds its procedures in this namespace",
            },
            "role": {
                "type": "string",
                "description": "Present with ?role=: the set holds only procedures open to this role",
            },
            "proceduralMemoryEnabled": {"type": "boolean"},
            "injectionCap": {"type": "integer", "description": "At most this many procedures per task"},
            "tools": {**_STR_LIST, "description": "The agent's tool list the set was checked against"},
            "toolsHash": {"type": "string"},
            "procedures": {"type": "array", "items": {"$ref": "#/components/schemas/Procedure"}},
            "refused": {"type": "array", "items": {"$ref": "#/components/schemas/RefusedProcedure"}},
            "note": {"type": "string", "description": "Present when procedural memory is switched off"},
            "environment": {"type": "string", "description": "Present for an environment other than production"},
            "arms": {
                "type": "object",
                "additionalProperties": {"type": "string", "enum": ["rollout", "control"]},
                "description": "Present while a rollout runs: procedure id → the arm this session got (control without ?session=)",
            },
        },
    },
    "RankedCandidate": {
        "type": "object",
        "required": ["id", "version", "intent", "scores", "ranks", "fused", "eligible", "injected"],
        "properties": {
            "id": {"type": "string"},
            "version": {"type": "integer"},
            "intent": {"type": ["string", "null"]},
            "scores": {
                "type": "object",
                "properties": {
                    "semantic": {"type": "number", "description": "cosine(task, appliesWhen)"},
                    "lexical": {"type": "number", "description": "IDF-weighted share of appliesWhen found in the task"},
                    "exact": {
                        "type": "integer",
                        "description": "identifiers of the procedure (id, identifier-shaped tool names, paths) found in the task, ignoring case",
                    },
                },
            },
            "ranks": {
                "type": "object",
                "description": "Rank per retriever among candidates at or above its floor; null below the floor",
                "properties": {k: {"type": ["integer", "null"]} for k in ("semantic", "lexical", "exact")},
            },
            "fused": {
                "type": "number",
                "description": "The ranking score: the weighted sum of the normalised retriever scores (semantic, lexical, exact, best step)",
            },
            "eligible": {"type": "boolean"},
            "injected": {"type": "boolean"},
        },
    },
    "Selection": {
        "type": "object",
        "required": [
            "apiVersion",
            "agent",
            "setEtag",
            "task",
            "intent",
            "cap",
            "injected",
            "rendered",
            "renderedChars",
            "renderedTokens",
        ],
        "properties": {
            "apiVersion": {"type": "string", "const": "v1"},
            "agent": {"type": "string"},
            "setEtag": {"type": "string", "description": "ETag of the active set the selection ran on"},
            "task": {"type": "string"},
            "intent": {"type": ["string", "null"]},
            "role": {"type": "string", "description": "Present with ?role="},
            "cap": {"type": "integer"},
            "injected": {
                "type": "array",
                "items": {"$ref": "#/components/schemas/Procedure"},
                "description": "At most cap",
            },
            "rendered": {"type": "string"},
            "renderedChars": {"type": "integer"},
            "renderedTokens": {"type": "integer"},
            "ranked": {
                "type": "array",
                "items": {"$ref": "#/components/schemas/RankedCandidate"},
                "description": "Only with k",
            },
            "pulledIn": {
                "type": "array",
                "description": "Only when a selected coding procedure's producer was injected with it (docs/selection.md)",
                "items": {
                    "type": "object",
                    "required": ["id", "version", "forId", "artefacts"],
                    "properties": {
                        "id": {"type": "string"},
                        "version": {"type": "integer"},
                        "forId": {"type": "string"},
                        "artefacts": _STR_LIST,
                    },
                },
            },
            "note": {"type": "string"},
            "environment": {"type": "string", "description": "Present for an environment other than production"},
            "arms": {
                "type": "object",
                "additionalProperties": {"type": "string", "enum": ["rollout", "control"]},
                "description": "Present while a rollout runs",
            },
        },
    },
    "ToolList": {
        "type": "object",
        "required": ["agent", "tools", "toolsHash", "refused"],
        "properties": {
            "agent": {"type": "string"},
            "tools": _STR_LIST,
            "toolsHash": {"type": "string"},
            "refused": {"type": "array", "items": {"$ref": "#/components/schemas/RefusedProcedure"}},
        },
    },
}


_SESSION_IN: dict[str, Any] = {
    "type": "object",
    "description": "One finished session in procmem's format (docs/api.md); ?format=openai|adk|mini-swe-agent|trace takes the others (trace: see TraceSession).",
    "required": ["session_id"],
    "properties": {
        "session_id": {"type": "string"},
        "agent": {"type": "string", "description": "Optional; must be the token's agent"},
        "intent": {"type": ["string", "null"]},
        "task": {"type": "string"},
        "outcome": {
            "type": "object",
            "properties": {
                "resolved": {"type": "boolean"},
                "escalated": {"type": "boolean"},
                "rating": {"type": ["number", "null"]},
            },
        },
        "tool_calls": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}, "args": {"type": "object"}, "ok": {"type": "boolean"}},
            },
        },
        "injected": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "version"],
                "properties": {"id": {"type": "string"}, "version": {"type": "integer"}, "arm": _ARM},
            },
        },
        "instruction_chars": {"type": "integer", "minimum": 0},
        "model": {"type": "string"},
        "ended_at": {"type": "string", "format": "date-time"},
    },
}
_TRACE_SESSION: dict[str, Any] = {
    "type": "object",
    "description": (
        "A coding agent's session from a trace hook (?format=trace): per action only the tool or command, "
        "its target and its exit code — no arguments, no outputs. procmem classifies each action (search, read, "
        "edit, run, test, build, vcs, environment, submit, other) and generalises its target (docs/api.md)."
    ),
    "required": ["session_id", "actions"],
    "properties": {
        "session_id": {"type": "string"},
        "agent": {"type": "string", "description": "Optional; must be the token's agent"},
        "intent": {"type": ["string", "null"], "description": "Default resolve_issue"},
        "task": {"type": "string"},
        "outcome": {"type": "object", "properties": {"resolved": {"type": ["boolean", "null"]}}},
        "actions": {
            "type": "array",
            "maxItems": 500,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "tool": {
                        "type": "string",
                        "examples": ["Read", "Edit", "Grep", "pytest"],
                        "description": "A tool or command name (this or command)",
                    },
                    "command": {
                        "type": "string",
                        "examples": ["python -m pytest tests/test_models.py"],
                        "description": "A shell command line (this or tool)",
                    },
                    "target": {
                        "type": "string",
                        "examples": ["django/forms/models.py", "auth_tests.test_validators"],
                        "description": "The path, module or test it acts on",
                    },
                    "result": {
                        "type": ["integer", "boolean", "null"],
                        "description": "Exit code (0 = success); true/false accepted",
                    },
                },
            },
        },
        "injected": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "version"],
                "properties": {"id": {"type": "string"}, "version": {"type": "integer"}, "arm": _ARM},
            },
        },
        "model": {"type": "string"},
        "ended_at": {"type": "string", "format": "date-time"},
    },
}
_INGEST_RESULT: dict[str, Any] = {
    "type": "object",
    "required": ["agent", "stored", "duplicate", "refused", "counts"],
    "properties": {
        "agent": {"type": "string"},
        "stored": _STR_LIST,
        "duplicate": _STR_LIST,
        "refused": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "session_id": {"type": ["string", "null"]},
                    "errors": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
                        },
                    },
                },
            },
        },
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
}


_OUTCOME_IN: dict[str, Any] = {
    "type": "object",
    "description": "What became known about a finished session later; at least one of resolved, escalated, rating, complaint, closed_by_customer.",
    "required": ["session_id"],
    "additionalProperties": False,
    "properties": {
        "session_id": {"type": "string", "maxLength": 200, "description": "The id the session was reported with"},
        "resolved": {"type": ["boolean", "null"]},
        "escalated": {"type": ["boolean", "null"]},
        "rating": {
            "type": ["number", "null"],
            "description": "e.g. a CSAT score; with the agent's min_rating it can decide resolved",
        },
        "complaint": {
            "type": ["boolean", "null"],
            "description": "Within the agent's complaint window it makes the session failed",
        },
        "closed_by_customer": {
            "type": ["boolean", "null"],
            "description": "Counts as resolved when no outcome says (the agent's rule)",
        },
        "at": {
            "type": ["string", "null"],
            "format": "date-time",
            "description": "When it happened (default: when received)",
        },
        "source": {"type": ["string", "null"], "maxLength": 100, "examples": ["csat_survey", "helpdesk"]},
    },
}
_OUTCOMES_RESULT: dict[str, Any] = {
    "type": "object",
    "required": ["agent", "applied", "duplicate", "held", "unknown", "refused", "counts"],
    "properties": {
        "agent": {"type": "string"},
        "applied": {**_STR_LIST, "description": "Session ids whose label history took the outcome"},
        "held": {
            **_STR_LIST,
            "description": "OTLP sessions whose spans still wait for the quiet period: the outcome is held and "
            "applied when the session is stored",
        },
        "message": {"type": "string", "description": "Present when outcomes were held: what happens to them"},
        "duplicate": {**_STR_LIST, "description": "Outcomes already in the history (a resend): nothing changed"},
        "unknown": {**_STR_LIST, "description": "Session ids this agent has not reported: nothing stored for them"},
        "refused": _INGEST_RESULT["properties"]["refused"],
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
}


def _schemas(api_version: str) -> dict[str, Any]:
    """The component schemas of `api_version`: its apiVersion constants, and in v2 the evidence of a
    served procedure as scalar facts."""
    schemas = copy.deepcopy(SCHEMAS)
    for name in ("ActiveSet", "Selection"):
        schemas[name]["properties"]["apiVersion"]["const"] = api_version
    if api_version == "v2":
        schemas["Procedure"]["properties"]["evidence"] = {
            "type": "object",
            "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
            "description": (
                "The evidence's scalar facts: support and contrast counts and rates, miningRunId, evalRunId, the "
                "one-line summary (session ids, excerpts and statistics tables are on the review pages only)"
            ),
        }
    return schemas


def openapi_document(*, server_url: str = "/api", api_version: str = "v1") -> dict[str, Any]:
    agent_param = {
        "name": "agent",
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
        "example": "support_agent",
    }
    serving_params = [
        {
            "name": "environment",
            "in": "query",
            "required": False,
            "schema": {"type": "string", "default": "production"},
            "description": "production (default) or an environment the agent's admins defined, e.g. staging; an unknown one is a 400 unknown_environment naming the agent's environments",
        },
        {
            "name": "session",
            "in": "query",
            "required": False,
            "schema": {"type": "string", "maxLength": 200},
            "description": "The session id: picks this session's arm of every running rollout (deterministic: a hash of the session id)",
        },
    ]
    role_param = {
        "name": "role",
        "in": "query",
        "required": False,
        "schema": {"type": "string", "pattern": "^[a-z][a-z0-9_\\-]{0,63}$"},
        "description": "The agent instance's role: only procedures whose roles are empty or name it (none given: every procedure of the namespace)",
    }
    token_errors = {
        "401": _error("No token, or an unknown or revoked one"),
        "403": _error("A token of another scope (e.g. ingest) or of another agent"),
        "405": _error("Any method but GET/HEAD: agents never write procedures"),
        "429": _RATE_LIMITED,
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "procmem agent API",
            "version": api_version,
            "description": (
                "Agents read the reviewed active set of procedures and never write it; they report finished "
                f"sessions. Read endpoints take `Authorization: Bearer <read token>`, POST /{api_version}/sessions an ingest "
                "token; a token belongs to one agent and one scope (`manage.py create_token <agent> --scope read`)."
            ),
        },
        "servers": [{"url": server_url}],
        "components": {
            "securitySchemes": {
                "readToken": {"type": "http", "scheme": "bearer", "description": "A read-scope token of the agent"},
                "ingestToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An ingest-scope token of the agent",
                },
                "adminSession": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": "sessionid",
                    "description": "A signed-in user holding manage_agent; send the CSRF token in X-CSRFToken",
                },
            },
            "schemas": {
                **_schemas(api_version),
                "SessionIn": _SESSION_IN,
                "TraceSession": _TRACE_SESSION,
                "IngestResult": _INGEST_RESULT,
                "OutcomeIn": _OUTCOME_IN,
                "OutcomesResult": _OUTCOMES_RESULT,
            },
        },
        "paths": {
            f"/{api_version}/health": {
                "get": {"summary": "Liveness", "security": [], "responses": {"200": {"description": "ok"}}}
            },
            f"/{api_version}/sessions": {
                "post": {
                    "summary": 'Report finished sessions (one, a list, or {"sessions": [...]})',
                    "description": (
                        "Idempotent by session id. Each item is validated alone: good items are stored in one "
                        "transaction, bad ones are refused with their index and fields, never half-stored."
                    ),
                    "security": [{"ingestToken": []}],
                    "parameters": [
                        {
                            "name": "format",
                            "in": "query",
                            "required": False,
                            "schema": {
                                "type": "string",
                                "enum": ["procmem", "openai", "adk", "mini-swe-agent", "trace"],
                                "default": "procmem",
                            },
                        },
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "oneOf": [
                                        {"$ref": "#/components/schemas/SessionIn"},
                                        {"$ref": "#/components/schemas/TraceSession"},
                                        {
                                            "type": "object",
                                            "required": ["sessions"],
                                            "properties": {
                                                "sessions": {
                                                    "type": "array",
                                                    "items": {"$ref": "#/components/schemas/TraceSession"},
                                                }
                                            },
                                        },
                                        {"type": "array", "items": {"$ref": "#/components/schemas/SessionIn"}},
                                        {
                                            "type": "object",
                                            "required": ["sessions"],
                                            "properties": {
                                                "sessions": {
                                                    "type": "array",
                                                    "items": {"$ref": "#/components/schemas/SessionIn"},
                                                }
                                            },
                                        },
                                    ]
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "Nothing refused",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/IngestResult"}}},
                        },
                        "207": {
                            "description": "Some items refused",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/IngestResult"}}},
                        },
                        "400": _error("Not JSON, an unknown format, or an empty batch"),
                        "401": _error("No token, or an unknown or revoked one"),
                        "403": _error("A token of another scope (e.g. read)"),
                        "413": _error("Body over PROCMEM_INGEST_MAX_BODY_BYTES or batch over PROCMEM_INGEST_MAX_BATCH"),
                        "429": _RATE_LIMITED,
                        "422": {
                            "description": "Every item refused",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/IngestResult"}}},
                        },
                    },
                }
            },
            f"/{api_version}/sessions/outcomes": {
                "post": {
                    "summary": 'Report outcomes known after the session (one, a list, {"outcomes": [...]}, or JSON Lines)',
                    "description": (
                        "Each outcome joins its session's label history (audited); the agent's label rule (shown on its "
                        "settings page) derives the label the miner uses. Unknown session ids are answered under `unknown`, "
                        "never dropped silently; an outcome already in the history is a duplicate and changes nothing."
                    ),
                    "security": [{"ingestToken": []}],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "oneOf": [
                                        {"$ref": "#/components/schemas/OutcomeIn"},
                                        {"type": "array", "items": {"$ref": "#/components/schemas/OutcomeIn"}},
                                        {
                                            "type": "object",
                                            "required": ["outcomes"],
                                            "properties": {
                                                "outcomes": {
                                                    "type": "array",
                                                    "items": {"$ref": "#/components/schemas/OutcomeIn"},
                                                }
                                            },
                                        },
                                    ]
                                }
                            },
                            "application/x-ndjson": {
                                "schema": {"type": "string", "description": "One OutcomeIn object a line"}
                            },
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "Every outcome applied or a duplicate",
                            "content": {
                                "application/json": {"schema": {"$ref": "#/components/schemas/OutcomesResult"}}
                            },
                        },
                        "202": {
                            "description": "Every outcome applied, a duplicate or held (some for OTLP sessions "
                            "still waiting: applied when they are stored)",
                            "content": {
                                "application/json": {"schema": {"$ref": "#/components/schemas/OutcomesResult"}}
                            },
                        },
                        "207": {
                            "description": "Some applied; some ids unknown or some items refused",
                            "content": {
                                "application/json": {"schema": {"$ref": "#/components/schemas/OutcomesResult"}}
                            },
                        },
                        "422": {
                            "description": "Nothing applied: every id unknown or every item refused",
                            "content": {
                                "application/json": {"schema": {"$ref": "#/components/schemas/OutcomesResult"}}
                            },
                        },
                        "400": _error("Not JSON, the wrong shape, or an empty batch"),
                        "401": _error("No token, or an unknown or revoked one"),
                        "403": _error("A token of another scope (e.g. read)"),
                        "413": _error("Body over PROCMEM_INGEST_MAX_BODY_BYTES or batch over PROCMEM_INGEST_MAX_BATCH"),
                        "429": _RATE_LIMITED,
                    },
                }
            },
            f"/{api_version}/openapi.json": {
                "get": {
                    "summary": "This document",
                    "security": [],
                    "responses": {"200": {"description": "OpenAPI 3.1"}},
                }
            },
            f"/{api_version}/agents/{{agent}}/procedures": {
                "get": {
                    "summary": "The active set",
                    "description": (
                        "ACTIVE versions of the agent's procedures in the agent's namespace (and open to ?role= when "
                        "given) whose requiredTools the agent has, rendered; the tool list they were checked "
                        "against; versions refused at load with the reason. Strong ETag over the whole body "
                        "(a scope change changes it; one per environment and rollout arm); send If-None-Match to "
                        "get 304. Cache-Control: private, max-age=10; Vary: Authorization. ?environment= serves "
                        "another environment of the agent (the versions released there, else production's); "
                        "?session= gives the session its rollout arms."
                    ),
                    "security": [{"readToken": []}],
                    "parameters": [
                        agent_param,
                        role_param,
                        *serving_params,
                        {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"}},
                    ],
                    "responses": {
                        "200": {
                            "description": "The set",
                            "headers": {
                                "ETag": {"schema": {"type": "string"}},
                                "Cache-Control": {"schema": {"type": "string"}},
                            },
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ActiveSet"}}},
                        },
                        "304": {"description": "Not modified: the set's ETag matches If-None-Match"},
                        "400": _error(
                            "role not a role name, an unknown environment (code unknown_environment) or a session id over 200 characters"
                        ),
                        **token_errors,
                    },
                }
            },
            f"/{api_version}/agents/{{agent}}/select": {
                "get": {
                    "summary": "Select procedures for a task",
                    "description": (
                        "Hard filter by intent, then ordered by a weighted sum of normalised semantic, lexical, exact "
                        "and best-step scores, totals within PRIORITY_EPSILON (0.02) ordered by priority; score "
                        "floors decide only which candidates may be injected. At most "
                        "the agent's injection cap is injected, in a block capped in characters (the lower-ranked "
                        "procedure dropped first). k (1..20) returns the top k candidates with every retriever's "
                        "score, for diagnostics."
                    ),
                    "security": [{"readToken": []}],
                    "parameters": [
                        agent_param,
                        {
                            "name": "task",
                            "in": "query",
                            "required": True,
                            "schema": {"type": "string", "maxLength": 8000},
                        },
                        {"name": "intent", "in": "query", "required": False, "schema": {"type": "string"}},
                        {
                            "name": "k",
                            "in": "query",
                            "required": False,
                            "schema": {"type": "integer", "minimum": 1, "maximum": MAX_K},
                        },
                        role_param,
                        *serving_params,
                    ],
                    "responses": {
                        "200": {
                            "description": "The selection",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Selection"}}},
                        },
                        "400": _error(
                            "task missing or too long, k outside 1..20, role not a role name, an unknown environment or a session id over 200 characters"
                        ),
                        **token_errors,
                    },
                },
                "post": {
                    "summary": "Select procedures for a task (the parameters in the body)",
                    "description": (
                        "The GET's selection with its parameters in a JSON object instead of the query string, so the "
                        "task appears in no URL and hence in no access or proxy log; the clients use it."
                    ),
                    "security": [{"readToken": []}],
                    "parameters": [agent_param],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["task"],
                                    "additionalProperties": False,
                                    "properties": {
                                        "task": {"type": "string", "maxLength": 8000},
                                        "intent": {"type": ["string", "null"]},
                                        "k": {"type": ["integer", "string", "null"], "minimum": 1, "maximum": MAX_K},
                                        "role": {"type": ["string", "null"]},
                                        "environment": {"type": ["string", "null"]},
                                        "session": {"type": ["string", "null"]},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "The selection (the GET's, byte for byte)",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Selection"}}},
                        },
                        "400": _error("not a JSON object, an unknown field, or a parameter the GET would refuse"),
                        **token_errors,
                    },
                },
            },
            f"/{api_version}/agents/{{agent}}/mcp": {
                "post": {
                    "summary": "MCP over streamable HTTP (stateless, JSON responses)",
                    "description": (
                        "The tools of procmem-mcp for remote MCP clients (Model Context Protocol JSON-RPC; use an MCP "
                        "client SDK). A read token gets recall_procedures (the select endpoint's block for a task, "
                        "with the injected ids and versions) and one resource per ACTIVE procedure; an ingest token "
                        "gets report_session. Each POST is answered on its own (no MCP session id)."
                    ),
                    "security": [{"readToken": []}, {"ingestToken": []}],
                    "parameters": [agent_param],
                    "requestBody": {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}},
                    "responses": {
                        "200": {
                            "description": "The JSON-RPC answer",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        },
                        "401": _error("No token, or an unknown or revoked one"),
                        "403": _error("A token of another agent"),
                    },
                }
            },
            f"/{api_version}/agents/{{agent}}/tools": {
                "get": {
                    "summary": "The agent's tool list (admin)",
                    "security": [{"adminSession": []}],
                    "parameters": [agent_param],
                    "responses": {
                        "200": {
                            "description": "Tool list",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ToolList"}}},
                        },
                        "401": _error("Not signed in"),
                        "403": _error("Signed in without manage_agent on this agent"),
                        "404": _error("No such agent"),
                    },
                },
                "put": {
                    "summary": "Replace the agent's tool list (admin)",
                    "description": (
                        "Keeps the history and an audit row. Versions whose requiredTools are no longer all present "
                        "are refused at load from now on; the alert (audit row, e-mail, banner) is raised once."
                    ),
                    "security": [{"adminSession": []}],
                    "parameters": [agent_param],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["tools"],
                                    "properties": {"tools": _STR_LIST, "reason": {"type": "string"}},
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "The new list and what it refuses",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ToolList"}}},
                        },
                        "400": _error("Not a list of distinct tool names"),
                        "401": _error("Not signed in"),
                        "403": _error("Without manage_agent, or without the CSRF token"),
                        "404": _error("No such agent"),
                    },
                },
            },
        },
    }
