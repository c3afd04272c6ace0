"""The component schemas of the agent API's OpenAPI documents (library/api/openapi.py writes the
paths that refer to them): the records an agent reads (Procedure, ActiveSet, Selection, ...) and
sends (SessionIn, TraceSession, OutcomeIn, ...), the shared error responses, and what differs in v2
(`component_schemas`). They change when a record of the contract changes; the paths change when a
route does.
"""

from __future__ import annotations

import copy
from typing import Any

STR_LIST = {"type": "array", "items": {"type": "string"}}


def error_response(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


RATE_LIMITED = {
    **error_response(
        "Over the agent's rate limit for this endpoint, per token or per client address; nothing was stored"
    ),
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
            "steps": STR_LIST,
            "requiredTools": STR_LIST,
            "forbiddenActions": STR_LIST,
            "evidence": {"type": "object", "description": "Session ids, support and contrast numbers, evalRunId"},
            "approvedBy": {"type": ["string", "null"]},
            "approvedAt": {"type": ["string", "null"], "format": "date-time"},
            "intent": {"type": "string"},
            "namespace": {
                "type": "string",
                "description": "The team or tenant the procedure belongs to (the agent's: only those are served)",
            },
            "roles": {
                **STR_LIST,
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
                **STR_LIST,
                "description": "Coding procedures only (absent otherwise): artefacts that must exist before, e.g. a failing test that reproduces the issue",
            },
            "postconditions": {
                **STR_LIST,
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
                        **STR_LIST,
                        "description": "The source files its postconditions, then preconditions name (a task family's most edited files); with select's taskFiles, first the files the task's words point to (at most 8 in all)",
                    },
                    "tests": {
                        **STR_LIST,
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
            "missingTools": STR_LIST,
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
            "tools": {**STR_LIST, "description": "The agent's tool list the set was checked against"},
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
                        "artefacts": STR_LIST,
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
            "tools": STR_LIST,
            "toolsHash": {"type": "string"},
            "refused": {"type": "array", "items": {"$ref": "#/components/schemas/RefusedProcedure"}},
        },
    },
}


SESSION_IN: dict[str, Any] = {
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
TRACE_SESSION: dict[str, Any] = {
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
INGEST_RESULT: dict[str, Any] = {
    "type": "object",
    "required": ["agent", "stored", "duplicate", "refused", "counts"],
    "properties": {
        "agent": {"type": "string"},
        "stored": STR_LIST,
        "duplicate": STR_LIST,
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


OUTCOME_IN: dict[str, Any] = {
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
OUTCOMES_RESULT: dict[str, Any] = {
    "type": "object",
    "required": ["agent", "applied", "duplicate", "held", "unknown", "refused", "counts"],
    "properties": {
        "agent": {"type": "string"},
        "applied": {**STR_LIST, "description": "Session ids whose label history took the outcome"},
        "held": {
            **STR_LIST,
            "description": "OTLP sessions whose spans still wait for the quiet period: the outcome is held and "
            "applied when the session is stored",
        },
        "message": {"type": "string", "description": "Present when outcomes were held: what happens to them"},
        "duplicate": {**STR_LIST, "description": "Outcomes already in the history (a resend): nothing changed"},
        "unknown": {**STR_LIST, "description": "Session ids this agent has not reported: nothing stored for them"},
        "refused": INGEST_RESULT["properties"]["refused"],
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
}


def component_schemas(api_version: str) -> dict[str, Any]:
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


FILE_INDEXES: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "agent", "taskFiles", "minLetters", "pathWeight", "indexes"],
    "properties": {
        "apiVersion": {"type": "string"},
        "agent": {"type": "string"},
        "taskFiles": {"type": "integer", "description": "Files a pointer names for the task, before the family's own"},
        "minLetters": {"type": "integer", "description": "The shortest identifier of a task that counts"},
        "pathWeight": {"type": "number", "description": "What a known file the task names by path or module adds"},
        "indexes": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["repository", "sessions", "files", "definitions"],
                "properties": {
                    "repository": {
                        "type": "string",
                        "description": "owner/name, lower-cased, as a mined family's evidence.repository; '' for sessions whose task names none",
                    },
                    "sessions": {"type": "integer", "description": "Sessions read"},
                    "files": {**STR_LIST, "description": "The repository's known source files, sorted"},
                    "definitions": {
                        "type": "object",
                        "additionalProperties": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                        "description": "Per Python identifier seen defined: the positions in files of the files defining it",
                    },
                },
            },
        },
    },
}
