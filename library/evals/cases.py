"""Regression cases: validation, create and edit, import from JSONL and from tau2-bench task files,
and "turn this session into a regression case".

JSONL, one case a line (`agent` may be left out when the importer names the agent):

    {"agent": "support_agent", "intent": "refund_over_limit", "name": "…", "task": "…",
     "context": {"order_id": "ORD-1"}, "expected_tools": ["lookupOrder", {"name": "createApproval",
     "args": {"order_id": "ORD-1"}}], "forbidden_tools": [{"name": "replyTemplates",
     "args": {"template": "refund_confirmed"}, "before": "createApproval"}], "reply_must_match": ["approv"],
     "reply_must_not_match": ["refund (is|has been) (processed|confirmed)"],
     "tool_results": {"lookupOrder": [{"total": 480}]}, "external_id": "crm-4711"}

Imported cases are redacted before they are stored, like session evidence: reviewers read and edit
cases, and tau2 tasks carry the world's names, user ids, birth dates and payment ids in the task, the
known info and the gold arguments. One redactor per case, so a value gets the same placeholder in
the task, the context, the tool results and the expected arguments (the replay stays coherent).

Every line is validated before anything is stored; one bad line stores nothing and the error names
the line and the field. A case whose `external_id` the agent already has is skipped, so importing a
file twice changes nothing.

tau2-bench task files (`id`, `user_scenario.instructions.reason_for_call`, `evaluation_criteria.
actions[{name, arguments}]`): the reason for call is the task, the gold actions are the expected
calls in order (with their arguments), `communicate_info` becomes reply patterns, and every write
tool of the domain that the gold actions do not use is forbidden (tau2 compares the final database:
an extra write fails the task). The intent is derived from the set of gold write actions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from .. import safe_json
from ..ingest.formats import taubench_intent
from ..interchange.procedure_files import ImportReport
from ..models import Agent, AgentSession, AuditEvent, Intent, RegressionCase, slug_validator
from ..permissions import user_is_reviewer
from ..redaction.redactor import redactor_for_session, strings_in
from ..services import audit
from .checks import CheckSpecError, validate_checks

CASE_FIELDS = (
    "name",
    "task",
    "context",
    "expected_tools",
    "forbidden_tools",
    "reply_must_match",
    "reply_must_not_match",
    "tool_results",
    "is_active",
)
# what redact_case may change
REDACTED_CASE_FIELDS = ("task", "context", "expected_tools", "forbidden_tools", "tool_results")
READ_ONLY_PREFIXES = ("get_", "find_", "search_", "list_", "calculate", "think", "transfer_to_human")


class CaseImportError(Exception):
    def __init__(self, where: str, field: str, message: str):
        self.where, self.field, self.message = where, field, message
        super().__init__(f"{where}: {field}: {message}")


def clean_case_fields(data: dict) -> dict:
    """Validates the editable fields of a case; raises ValidationError naming the field."""
    cleaned: dict[str, Any] = {}
    task = data.get("task")
    if not isinstance(task, str) or not task.strip():
        raise ValidationError({"task": "is required: the customer's request the agent replays"})
    cleaned["task"] = task.strip()
    name = data.get("name", "") or ""
    if not isinstance(name, str) or len(name) > 200:
        raise ValidationError({"name": "must be text of at most 200 characters"})
    cleaned["name"] = name.strip()
    for key in ("context", "tool_results"):
        value = data.get(key) or {}
        if not isinstance(value, dict):
            raise ValidationError({key: f"must be a JSON object, got {type(value).__name__}"})
        cleaned[key] = value
    for key in ("expected_tools", "forbidden_tools", "reply_must_match", "reply_must_not_match"):
        cleaned[key] = data.get(key) if data.get(key) is not None else []
    try:
        validate_checks(
            expected_tools=cleaned["expected_tools"],
            forbidden_tools=cleaned["forbidden_tools"],
            reply_must_match=cleaned["reply_must_match"],
            reply_must_not_match=cleaned["reply_must_not_match"],
        )
    except CheckSpecError as exc:
        field_name, _, message = str(exc).partition(": ")
        raise ValidationError({field_name.split("[")[0]: f"{field_name}: {message}"}) from None
    for key, value in cleaned.items():
        try:
            safe_json.check(value, path=key)  # a lone surrogate, NUL, NaN or a 64-bit overflow fails at the database
        except safe_json.JsonRefused as exc:
            raise ValidationError({key: f"{exc.path}: {exc.message}"}) from None
    cleaned["is_active"] = bool(data.get("is_active", True))
    return cleaned


def _require_reviewer(user) -> None:
    if user is not None and not user_is_reviewer(user):
        raise PermissionDenied("Only reviewers may change regression cases.")


def _snapshot(case: RegressionCase) -> dict[str, Any]:
    return {"case": case.pk, "intent": case.intent.name, **{key: getattr(case, key) for key in CASE_FIELDS}}


def _audit(case: RegressionCase, *, user, actor_label: str, reason: str, before: dict | None) -> None:
    audit(
        action=AuditEvent.Action.CASE_CHANGE,
        actor=user,
        actor_label=actor_label,
        agent=case.agent,
        reason=reason,
        before=before or {},
        after=_snapshot(case),
    )


def regression_case_create(
    *,
    agent: Agent,
    intent: Intent,
    user=None,
    actor_label: str = "",
    external_id: str = "",
    source_session=None,
    **fields,
) -> RegressionCase:
    """Creates a case, audited. `user` None is a management command or the demo seed (`actor_label`)."""
    _require_reviewer(user)
    if intent.agent_id != agent.pk:
        raise ValidationError({"intent": f"intent {intent.name!r} belongs to another agent"})
    cleaned = clean_case_fields(fields)
    with transaction.atomic():
        case = RegressionCase.objects.create(
            agent=agent,
            intent=intent,
            external_id=external_id,
            source_session=source_session,
            created_by=user if user is not None and user.is_authenticated else None,
            **cleaned,
        )
        reason = (
            f"Made from session {source_session.session_id}"
            if source_session
            else (f"Imported ({external_id})" if external_id else "Written by hand")
        )
        _audit(case, user=user, actor_label=actor_label or ("" if user else "import"), reason=reason, before=None)
    return case


def regression_case_update(*, case: RegressionCase, user, intent: Intent | None = None, **fields) -> RegressionCase:
    """Edits a case in place. Finished eval runs keep their stored results; runs in progress may
    pick up the edit for the case-arms they have not run yet."""
    _require_reviewer(user)
    cleaned = clean_case_fields(fields)
    with transaction.atomic():
        locked = RegressionCase.objects.select_for_update().select_related("agent", "intent").get(pk=case.pk)
        before = _snapshot(locked)
        if intent is not None:
            if intent.agent_id != locked.agent_id:
                raise ValidationError({"intent": f"intent {intent.name!r} belongs to another agent"})
            locked.intent = intent
        for key, value in cleaned.items():
            setattr(locked, key, value)
        locked.save()
        _audit(locked, user=user, actor_label="", reason="Edited", before=before)
    return locked


def regression_case_from_session(*, session: AgentSession, user) -> RegressionCase:
    """ "Turn this session into a regression case": its task and intent; for a resolved session the
    tools it called in order as the expected calls; the results it recorded as the replay's tool
    results; the string arguments of its calls as context — all redacted. The reviewer edits the
    checks after."""
    _require_reviewer(user)
    external_id = f"session:{session.session_id}"[:200]
    existing = RegressionCase.objects.filter(agent=session.agent, external_id=external_id).first()
    if existing is not None:
        return existing  # made before: one case per session
    if session.intent_id is None:
        raise ValidationError({"session": "the session has no intent; label it first"})
    if session.raw_purged or not session.task:
        raise ValidationError({"session": "the session's raw task was purged (retention); it cannot be replayed"})
    calls = [call for call in session.tool_calls or [] if isinstance(call, dict) and isinstance(call.get("name"), str)]
    # Reviewers read and edit cases: everything taken from the raw session is redacted with what
    # the session itself says is personal (the same placeholders in the task, context and results,
    # so the replay stays coherent).
    redactor = redactor_for_session(
        structured=[part for call in calls for part in (call.get("args"), call.get("result")) if part is not None],
        texts=[session.task],
        agent_patterns=session.agent.redaction_patterns,
    )
    tool_results: dict[str, list] = {}
    context: dict[str, Any] = {}
    for call in calls:
        if "result" in call:
            tool_results.setdefault(call["name"], []).append(redactor.value(call["result"]))
        args = redactor.value(call["args"]) if isinstance(call.get("args"), dict) else {}
        for key, value in args.items():
            if isinstance(value, (str, int, float)) and key not in context:
                context[key] = value
    expected = list(session.skeleton or []) if session.resolved and not session.escalated else []
    return regression_case_create(
        agent=session.agent,
        intent=session.intent,
        user=user,
        source_session=session,
        external_id=external_id,
        name=f"From session {session.session_id}"[:200],
        task=redactor.text(session.task),
        context=context,
        expected_tools=expected,
        tool_results=tool_results,
    )


def _with_args(checks: Any, redact) -> Any:
    if not isinstance(checks, list):
        return checks
    return [
        {**c, "args": redact(c["args"])} if isinstance(c, dict) and isinstance(c.get("args"), dict) else c
        for c in checks
    ]


def redact_case(data: dict, *, agent: Agent) -> dict:
    """The case with its task, context, tool results and call arguments redacted (see the module
    docstring); its checks' names, reply patterns and the rest as they are."""
    checks = [c for key in ("expected_tools", "forbidden_tools") for c in (data.get(key) or []) if isinstance(c, dict)]
    structured = [data.get("context"), data.get("tool_results"), *(c.get("args") for c in checks)]
    texts = [data.get("task") or "", *strings_in(data.get("context"))]
    redactor = redactor_for_session(
        structured=[part for part in structured if part], texts=texts, agent_patterns=agent.redaction_patterns
    )
    redacted = dict(data)
    if isinstance(data.get("task"), str):
        redacted["task"] = redactor.text(data["task"])
    for key in ("context", "tool_results"):
        if isinstance(data.get(key), dict):
            redacted[key] = redactor.value(data[key])
    for key in ("expected_tools", "forbidden_tools"):
        redacted[key] = _with_args(data.get(key), redactor.value)
    return redacted


def cases_redact_again(*, agent: Agent | None = None, batch_size: int = 200) -> int:
    """Applies the current redaction rules to stored cases, as an import does now (one redactor per
    case): for cases imported before imports were redacted, or under older rules. Placeholders stay,
    so a second run changes nothing. A changed case is audited with the names of the fields that
    changed and no values (the audit log is append-only: it must not receive what was redacted).
    Returns how many cases changed; one short transaction per batch."""
    queryset = RegressionCase.objects.select_related("agent")
    if agent is not None:
        queryset = queryset.filter(agent=agent)
    changed = 0
    last_pk = 0
    while True:
        with transaction.atomic():
            batch = list(queryset.filter(pk__gt=last_pk).select_for_update(of=("self",)).order_by("pk")[:batch_size])
            if not batch:
                return changed
            last_pk = batch[-1].pk
            for case in batch:
                stored = {key: getattr(case, key) for key in REDACTED_CASE_FIELDS}
                redacted = redact_case(stored, agent=case.agent)
                fields = [key for key in REDACTED_CASE_FIELDS if redacted[key] != stored[key]]
                if not fields:
                    continue
                for key in fields:
                    setattr(case, key, redacted[key])
                case.save(update_fields=[*fields, "updated_at"])
                _audit_redaction(case, fields)
                changed += 1


def _audit_redaction(case: RegressionCase, fields: list[str]) -> None:
    audit(
        action=AuditEvent.Action.CASE_CHANGE,
        actor_label="redact_stored",
        agent=case.agent,
        reason="Redacted again under the current rules",
        after={"case": case.pk, "fields": fields},
    )


# --------------------------------------------------------------------------------------------- JSONL


def _intent_for(agent: Agent, name: str, where: str, *, create: bool, report: ImportReport, cache: dict) -> Intent:
    if name in cache:
        return cache[name]
    intent = Intent.objects.filter(agent=agent, name=name).first()
    if intent is None:
        if not create:
            raise CaseImportError(where, "intent", f"agent {agent.name} has no intent {name!r} (use --create-intents)")
        try:
            slug_validator(name)
        except ValidationError:
            raise CaseImportError(where, "intent", f"{name!r} is not a valid intent name") from None
        intent = Intent.objects.create(agent=agent, name=name)
        report.intents_created.append(name)
    cache[name] = intent
    return intent


def _checked_case(where: str, data: dict) -> dict:
    """The case dict as read, once `clean_case_fields` accepts it; its first problem as a CaseImportError
    at `where`."""
    try:
        clean_case_fields(data)
    except ValidationError as exc:
        (field_name, messages), *_ = exc.message_dict.items()
        raise CaseImportError(where, field_name, "; ".join(messages)) from None
    return data


def parse_jsonl(lines: Iterable[str], *, source: str) -> list[tuple[str, dict]]:
    """Parses and validates every line; returns (where, data) pairs. Raises CaseImportError."""
    parsed = []
    try:
        for _, where, data in safe_json.jsonl_objects(lines, source=source):
            if not isinstance(data.get("intent"), str) or not data["intent"]:
                raise CaseImportError(where, "intent", "is required")
            parsed.append((where, _checked_case(where, data)))
    except safe_json.JsonLineError as exc:
        raise CaseImportError(exc.where, "(line)", exc.message) from None
    return parsed


def import_cases(
    items: list[tuple[str, dict]], *, agent: Agent | None, user=None, create_intents: bool = False
) -> ImportReport:
    """Stores validated case dicts, redacted, in one transaction (nothing is stored when one fails)."""
    report = ImportReport()
    agents: dict[str, Agent] = {}
    intents: dict[tuple[int, str], dict] = {}
    with transaction.atomic():
        for where, data in items:
            target = agent
            if data.get("agent") and (agent is None or data["agent"] != agent.name):
                if agent is not None:
                    raise CaseImportError(where, "agent", f"the line is for {data['agent']!r}, not {agent.name!r}")
                name = data["agent"]
                if name not in agents:
                    agents[name] = Agent.objects.filter(name=name).first()
                    if agents[name] is None:
                        raise CaseImportError(where, "agent", f"no agent named {name!r}")
                target = agents[name]
            if target is None:
                raise CaseImportError(where, "agent", "name the agent in the line or on the command line")
            intent = _intent_for(
                target,
                data["intent"],
                where,
                create=create_intents,
                report=report,
                cache=intents.setdefault(target.pk, {}),
            )
            external_id = str(data.get("external_id") or "")[:200]
            label = f"{target.name}/{intent.name}: {(data.get('name') or data['task'])[:60]}"
            if external_id and RegressionCase.objects.filter(agent=target, external_id=external_id).exists():
                report.skipped.append(label)
                continue
            fields = {key: value for key, value in redact_case(data, agent=target).items() if key in CASE_FIELDS}
            regression_case_create(agent=target, intent=intent, user=user, external_id=external_id, **fields)
            report.created.append(label)
    return report


def import_jsonl_file(path: Path, *, agent: Agent | None, user=None, create_intents: bool = False) -> ImportReport:
    with open(path, encoding="utf-8") as handle:
        items = parse_jsonl(handle, source=str(path))
    return import_cases(items, agent=agent, user=user, create_intents=create_intents)


# --------------------------------------------------------------------------------------------- tau2-bench


def _is_write(tool: str) -> bool:
    return not tool.startswith(READ_ONLY_PREFIXES)


def tau2_intent(actions: list[dict]) -> str:
    """The intent of a tau2 task: the label `import_sessions --intent-from taubench-actions` gives a
    tau-bench session with the same gold actions (their distinct write actions, sorted, joined by
    `-`; `no_write_action` for an answer or a refusal), so that an agent's imported cases replay the
    intents its sessions were mined under."""
    return taubench_intent(actions)[:100]


def parse_tau2(path: Path) -> list[tuple[str, dict]]:
    """tau2-bench task definitions as case dicts (see the module docstring)."""
    try:
        tasks = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CaseImportError(str(path), "(file)", f"cannot read a JSON list of tau2 tasks: {exc}") from None
    if not isinstance(tasks, list):
        raise CaseImportError(str(path), "(file)", "expected a JSON list of tasks")
    write_tools: set[str] = set()
    for task in tasks:
        for action in (task.get("evaluation_criteria") or {}).get("actions") or []:
            if _is_write(action.get("name", "")):
                write_tools.add(action["name"])
    items = []
    for index, task in enumerate(tasks):
        where = f"{path}[{index}]"
        try:
            instructions = task["user_scenario"]["instructions"]
            reason = instructions["reason_for_call"]
            domain = instructions.get("domain") or Path(path).stem
        except (KeyError, TypeError):
            raise CaseImportError(where, "user_scenario.instructions.reason_for_call", "is missing") from None
        criteria = task.get("evaluation_criteria") or {}
        actions = [a for a in (criteria.get("actions") or []) if isinstance(a, dict) and a.get("name")]
        used = {a["name"] for a in actions}
        context = {
            key: instructions[key]
            for key in ("known_info", "unknown_info", "task_instructions")
            if isinstance(instructions.get(key), str) and instructions[key]
        }
        data = {
            "intent": tau2_intent(actions),
            "name": f"tau2 {domain} task {task.get('id', index)}",
            "task": reason.strip(),
            "context": context,
            "expected_tools": [{"name": a["name"], "args": a.get("arguments") or {}} for a in actions],
            "forbidden_tools": sorted(write_tools - used),
            "reply_must_match": [re.escape(str(info)) for info in (criteria.get("communicate_info") or [])],
            "reply_must_not_match": [],
            "tool_results": {},
            "external_id": f"tau2:{domain}:{task.get('id', index)}",
        }
        items.append((where, _checked_case(where, data)))
    return items


def tau2_tools(items: list[tuple[str, dict]]) -> list[str]:
    """Every tool a tau2 file's cases name (for creating an agent from the file)."""
    tools: set[str] = set()
    for _where, data in items:
        tools.update(c["name"] for c in data["expected_tools"])
        tools.update(data["forbidden_tools"])
    return sorted(tools)
