"""Import and export of procedures as JSON files, so that a team can keep its library under code
review in git: one directory per agent, one file per procedure with all its versions.

    <dir>/<agent>/<procedure id>.json
    {"format": "procmem.procedure/1", "id": "refund.over_limit", "agent": "support_agent",
     "intent": "refund_over_limit", "versions": [{"version": 1, "status": "ACTIVE", "appliesWhen": ...,
     "steps": [...], "requiredTools": [...], "forbiddenActions": [...], "evidence": {...},
     "approvedBy": "...", "approvedAt": "..."}]}

Import never creates an ACTIVE version: every imported version arrives as a CANDIDATE (its status
and approval in the file are kept in the provenance for the reviewer to read). A version whose
content already exists for that procedure is skipped, so re-importing an export changes nothing.
Every file is validated before anything is stored; one bad file stores nothing from any file, and
the error names the file and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from . import services
from .models import Agent, Intent, ProcedureVersion, Source, procedure_key_validator

FORMAT = "procmem.procedure/1"


class ImportFileError(Exception):
    def __init__(self, path: Path, field: str, message: str):
        self.path, self.field, self.message = path, field, message
        super().__init__(f"{path}: {field}: {message}")


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    intents_created: list[str] = field(default_factory=list)


@dataclass
class _ParsedVersion:
    source_number: int | None
    source_status: str | None
    content: services.Content
    evidence: dict
    approved_by: str | None
    approved_at: str | None


@dataclass
class _ParsedFile:
    path: Path
    agent: str
    key: str
    intent: str
    versions: list[_ParsedVersion]


def export_library(directory: Path, *, agents: list[Agent] | None = None) -> list[Path]:
    directory = Path(directory)
    # with nothing to export the directory is still written: an empty export, which imports as nothing
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    agent_qs = Agent.objects.all() if agents is None else agents
    for agent in agent_qs:
        for procedure in agent.procedures.select_related("intent").order_by("key"):
            versions = procedure.versions.select_related("approved_by", "procedure").order_by("number")
            payload = {
                "format": FORMAT,
                "id": procedure.key,
                "agent": agent.name,
                "intent": procedure.intent.name,
                "versions": [v.to_dict() for v in versions],
            }
            path = directory / agent.name / f"{procedure.key}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            written.append(path)
    return written


def _parse_file(path: Path, agent_name_from_dir: str | None) -> _ParsedFile:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ImportFileError(path, "(file)", f"is not UTF-8 text: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ImportFileError(path, "(file)", f"is not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ImportFileError(path, "(file)", "must hold a JSON object")
    if data.get("format", FORMAT) != FORMAT:
        raise ImportFileError(path, "format", f"unknown format {data.get('format')!r}; expected {FORMAT!r}")
    for name in ("id", "intent"):
        if not isinstance(data.get(name), str) or not data[name].strip():
            raise ImportFileError(path, name, "is required and must be a string")
    try:
        procedure_key_validator(data["id"])
    except ValidationError as exc:
        raise ImportFileError(path, "id", "; ".join(exc.messages)) from None
    agent_name = data.get("agent") or agent_name_from_dir
    if not isinstance(agent_name, str) or not agent_name:
        raise ImportFileError(path, "agent", "is required (in the file or as the directory name)")
    if agent_name_from_dir and agent_name != agent_name_from_dir:
        raise ImportFileError(path, "agent", f"says {agent_name!r} but the file lies in directory {agent_name_from_dir!r}")
    versions = data.get("versions")
    if not isinstance(versions, list) or not versions:
        raise ImportFileError(path, "versions", "must be a non-empty list")
    parsed: list[_ParsedVersion] = []
    for index, item in enumerate(versions):
        where = f"versions[{index}]"
        if not isinstance(item, dict):
            raise ImportFileError(path, where, "must be an object")
        try:
            content = services.validate_content(
                applies_when=item.get("appliesWhen"),
                steps=item.get("steps"),
                required_tools=item.get("requiredTools", []),
                forbidden_actions=item.get("forbiddenActions", []),
                preconditions=item.get("preconditions"),
                postconditions=item.get("postconditions"),
                verify_command=item.get("verifyCommand"),
            )
        except ValidationError as exc:
            field_name, messages = next(iter(exc.message_dict.items()))
            raise ImportFileError(path, f"{where}.{field_name}", "; ".join(messages)) from None
        number = item.get("version")
        if number is not None and (not isinstance(number, int) or isinstance(number, bool) or number < 1):
            raise ImportFileError(path, f"{where}.version", "must be a positive integer")
        evidence = item.get("evidence", {})
        if not isinstance(evidence, dict):
            raise ImportFileError(path, f"{where}.evidence", "must be an object")
        parsed.append(
            _ParsedVersion(
                source_number=number,
                source_status=item.get("status") if isinstance(item.get("status"), str) else None,
                content=content,
                evidence=evidence,
                approved_by=item.get("approvedBy") if isinstance(item.get("approvedBy"), str) else None,
                approved_at=item.get("approvedAt") if isinstance(item.get("approvedAt"), str) else None,
            )
        )
    return _ParsedFile(path=path, agent=agent_name, key=data["id"], intent=data["intent"], versions=parsed)


def _collect_files(paths: list[Path]) -> list[tuple[Path, str | None]]:
    found: list[tuple[Path, str | None]] = []
    for root in paths:
        root = Path(root)
        if root.is_file():
            found.append((root, None))
        elif root.is_dir():
            # <dir>/<agent>/<id>.json, or an agent's own directory given directly
            found.extend((file, file.parent.name) for file in sorted(root.rglob("*.json")))
        else:
            raise ImportFileError(root, "(path)", "does not exist")
    return found


def import_library(paths: list[Path], *, user=None, create_intents: bool = False) -> ImportReport:
    """Validates every file, then stores all of them in one transaction (all or nothing)."""
    parsed = [_parse_file(path, agent_dir) for path, agent_dir in _collect_files(paths)]
    agents = {a.name: a for a in Agent.objects.filter(name__in={p.agent for p in parsed})}
    for item in parsed:
        if item.agent not in agents:
            raise ImportFileError(item.path, "agent", f"no agent named {item.agent!r} exists")
        if not create_intents and not Intent.objects.filter(agent=agents[item.agent], name=item.intent).exists():
            raise ImportFileError(
                item.path, "intent", f"agent {item.agent!r} has no intent {item.intent!r} (use --create-intents)"
            )
    report = ImportReport()
    with transaction.atomic():
        for item in parsed:
            agent = agents[item.agent]
            intent, intent_created = Intent.objects.get_or_create(agent=agent, name=item.intent)
            if intent_created:
                report.intents_created.append(f"{agent.name}/{intent.name}")
            existing = set(
                ProcedureVersion.objects.filter(procedure__agent=agent, procedure__key=item.key).values_list(
                    "content_hash", flat=True
                )
            )
            for version in item.versions:
                label = f"{agent.name}/{item.key} v{version.source_number or '?'}"
                if version.content.hash in existing:
                    report.skipped.append(label)
                    continue
                try:
                    created = services.procedure_propose(
                        agent=agent,
                        intent=intent,
                        key=item.key,
                        applies_when=version.content.applies_when,
                        steps=version.content.steps,
                        required_tools=version.content.required_tools,
                        forbidden_actions=version.content.forbidden_actions,
                        preconditions=version.content.preconditions,
                        postconditions=version.content.postconditions,
                        verify_command=version.content.verify_command,
                        evidence=version.evidence,
                        source=Source.IMPORTED,
                        proposed_by=user,
                        actor_label="import",
                        provenance={
                            "file": str(item.path),
                            "fileVersion": version.source_number,
                            "fileStatus": version.source_status,
                            "fileApprovedBy": version.approved_by,
                            "fileApprovedAt": version.approved_at,
                        },
                        reason=f"Imported from {item.path.name}",
                    )
                except ValidationError as exc:
                    field_name = next(iter(exc.message_dict)) if hasattr(exc, "error_dict") else "intent"
                    raise ImportFileError(item.path, field_name, "; ".join(exc.messages)) from None
                existing.add(created.content_hash)
                report.created.append(f"{agent.name}/{item.key} v{created.number}")
    return report
