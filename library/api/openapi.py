"""The OpenAPI 3.1 documents of the agent API (served at GET /api/v1/openapi.json and
/api/v2/openapi.json: the same endpoints; v2's Procedure.evidence holds scalar facts only).

Written out by hand next to the views it describes, because the API is small and its contract is
versioned: field names here are the ones a Java agent maps onto its `Procedure` record.
The component schemas the paths refer to are in library/api/openapi_schemas.py.
tests/library/test_api.py checks that every route of library/api/urls.py is described and that the
responses carry the documented fields.
"""

from __future__ import annotations

from typing import Any

from procmem_client.ranking import MAX_K

from .openapi_schemas import (
    FILE_INDEXES,
    INGEST_RESULT,
    OUTCOME_IN,
    OUTCOMES_RESULT,
    RATE_LIMITED,
    SESSION_IN,
    STR_LIST,
    TRACE_SESSION,
    component_schemas,
    error_response,
)


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
    task_files_param = {
        "name": "taskFiles",
        "in": "query",
        "required": False,
        "schema": {"type": "boolean", "default": False},
        "description": (
            "true (or 1): each injected coding procedure's recallPointer names first the source files the task's "
            "words point to in what the agent's sessions of the procedure's repository saw (GET …/file-index), "
            "the same 300-token bound and format; false, 0 or absent: the set's pointer, the same for every task"
        ),
    }
    token_errors = {
        "401": error_response("No token, or an unknown or revoked one"),
        "403": error_response("A token of another scope (e.g. ingest) or of another agent"),
        "405": error_response("Any method but GET/HEAD: agents never write procedures"),
        "429": RATE_LIMITED,
    }
    select_errors = {  # select also answers POST (the task in the body), and needs the embeddings
        **token_errors,
        "405": error_response("Any method but GET/HEAD/POST: agents never write procedures"),
        "503": error_response(
            "embeddings_not_ready: the library is embedded with another model than EMBEDDING_BACKEND "
            "(run manage.py reembed_library)"
        ),
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "procmem agent API",
            "version": api_version,
            "description": (
                "Agents read the reviewed active set of procedures and never write it; they report finished "
                f"sessions. Read endpoints take `Authorization: Bearer <read token>`, POST /{api_version}/sessions an ingest "
                "token; a token belongs to one agent and one scope (`manage.py tokens create <agent> --scope read`)."
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
                **component_schemas(api_version),
                "SessionIn": SESSION_IN,
                "TraceSession": TRACE_SESSION,
                "IngestResult": INGEST_RESULT,
                "OutcomeIn": OUTCOME_IN,
                "OutcomesResult": OUTCOMES_RESULT,
                "FileIndexes": FILE_INDEXES,
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
                        "400": error_response("Not JSON, an unknown format, or an empty batch"),
                        "401": error_response("No token, or an unknown or revoked one"),
                        "403": error_response("A token of another scope (e.g. read)"),
                        "413": error_response(
                            "Body over PROCMEM_INGEST_MAX_BODY_BYTES or batch over PROCMEM_INGEST_MAX_BATCH"
                        ),
                        "429": RATE_LIMITED,
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
                        "400": error_response("Not JSON, the wrong shape, or an empty batch"),
                        "401": error_response("No token, or an unknown or revoked one"),
                        "403": error_response("A token of another scope (e.g. read)"),
                        "413": error_response(
                            "Body over PROCMEM_INGEST_MAX_BODY_BYTES or batch over PROCMEM_INGEST_MAX_BATCH"
                        ),
                        "429": RATE_LIMITED,
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
                        "400": error_response(
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
                        task_files_param,
                    ],
                    "responses": {
                        "200": {
                            "description": "The selection",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Selection"}}},
                        },
                        "400": error_response(
                            "task missing or too long, k outside 1..20, role not a role name, an unknown environment, a session id over 200 characters or taskFiles not a boolean"
                        ),
                        **select_errors,
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
                                        "taskFiles": {
                                            "type": ["boolean", "null"],
                                            "description": task_files_param["description"],
                                        },
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
                        "400": error_response(
                            "not a JSON object, an unknown field, or a parameter the GET would refuse"
                        ),
                        **select_errors,
                    },
                },
            },
            f"/{api_version}/agents/{{agent}}/file-index": {
                "get": {
                    "summary": "The agent's file indexes (coding agents)",
                    "description": (
                        "What the agent's stored sessions of each repository saw, rebuilt by each mining run: the "
                        "repository's source files they named (repository-relative paths only) and, per Python "
                        "identifier they saw defined, the positions of its files in that list; with the ranking's "
                        "parameters, so that a client ranking locally names the same task files in a recall pointer as "
                        "select's taskFiles (procmem_client.task_files). Strong ETag; send If-None-Match to get 304. "
                        "Cache-Control: private, max-age=10; Vary: Authorization."
                    ),
                    "security": [{"readToken": []}],
                    "parameters": [
                        agent_param,
                        {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"}},
                    ],
                    "responses": {
                        "200": {
                            "description": "The indexes (an empty list when the agent has none)",
                            "headers": {
                                "ETag": {"schema": {"type": "string"}},
                                "Cache-Control": {"schema": {"type": "string"}},
                            },
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FileIndexes"}}},
                        },
                        "304": {"description": "Not modified: the indexes' ETag matches If-None-Match"},
                        **token_errors,
                    },
                }
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
                        "401": error_response("No token, or an unknown or revoked one"),
                        "403": error_response("A token of another agent"),
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
                        "401": error_response("Not signed in"),
                        "403": error_response("Signed in without manage_agent on this agent"),
                        "404": error_response("No such agent"),
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
                                    "properties": {"tools": STR_LIST, "reason": {"type": "string"}},
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "The new list and what it refuses",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ToolList"}}},
                        },
                        "400": error_response("Not a list of distinct tool names"),
                        "401": error_response("Not signed in"),
                        "403": error_response("Without manage_agent, or without the CSRF token"),
                        "404": error_response("No such agent"),
                    },
                },
            },
        },
    }
