"""Import and export of procedures as JSON files, so that a team can keep its library under code
review in git: one directory per agent, one file per procedure with its scope and all its versions.

    <dir>/<agent>/<procedure id>.json
    {"format": "procmem.procedure/1", "id": "refund.over_limit", "agent": "support_agent",
     "intent": "refund_over_limit", "namespace": "support", "roles": [], "priority": 0,
     "confidence": "medium", "releases": {"staging": 3},
     "versions": [{"version": 1, "status": "ACTIVE", "source": "mined", "basedOn": null,
     "appliesWhen": ..., "steps": [...], "requiredTools": [...], "forbiddenActions": [...],
     "evidence": {...}, "approvedBy": "...", "approvedAt": "...", "proposedBy": "...", "miningRun": 12},
     {"version": 2, "status": "ERASED", "tombstone": {"reference": "[erased with tombstone 4]",
     "contentHash": "...", "statusBefore": "CANDIDATE", "ground": "personal_data", ...}}]}

The export carries every field of the record; an erased version is its tombstone, without content.
An empty library exports as an empty directory (valid: importing it changes nothing).

Import never creates an ACTIVE version: every imported version arrives as a CANDIDATE (its status
and approval in the file are kept in the provenance for the reviewer to read). A procedure the
import creates takes the file's scope (roles, priority, confidence, an existing namespace). A version whose
content already exists for that procedure (erased ones included: the tombstone keeps the hash) is
skipped, and so is a tombstone, so re-importing an export changes nothing. Each file is validated
and stored on its own: a bad file is reported with its path, the field and the reason, and the
others go on. No file can stop the run (library/interchange/file_checks.py): symbolic links, files over
5 MB, JSON nested over 64 levels, a NUL or a lone surrogate anywhere are refused with the path and
where; two files with one agent and id are both refused, each naming the other.

`library_differences` compares files and library per procedure without writing (`import_procedures
--check`), both ways: what the files add, and where the library is ahead (content it erased still
in a file, versions, statuses and releases the files lack; versions matched by content hash);
`library_sync` turns each difference into what the library allows (`--sync`): a new or
changed file's newest version becomes a CANDIDATE (review and the eval decide), a scope that
differs is changed through `procedure_scope_update` by the given user, and a live procedure whose
file is gone gets a retirement request — only for an agent whose whole directory the paths hold
and none of whose files was refused (otherwise a missing file may only be one not given or not
readable: the comparison says so in `partial` and looks for no removals there) (the `retirement_requested` signal: reviews opens a demotion
proposal an admin confirms or dismisses); where the library is ahead it reports, since only a new
export changes the files. Nothing becomes ACTIVE without the gate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import DatabaseError, transaction

from .. import services
from ..models import Agent, Intent, Namespace, Procedure, ProcedureVersion, Source, Status, procedure_key_validator
from ..services import clean_confidence, clean_priority, clean_roles, procedure_scope_update
from ..signals import retirement_requested
from .file_checks import ImportFileError, collect_files, read_json

FORMAT = "procmem.procedure/1"


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    intents_created: list[str] = field(default_factory=list)
    errors: list[ImportFileError] = field(default_factory=list)


@dataclass
class _ParsedVersion:
    source_number: int | None
    source_status: str | None
    content: services.Content | None  # None: a tombstone (an erased version; never imported)
    evidence: dict
    approved_by: str | None
    approved_at: str | None
    content_hash: str = ""


@dataclass
class _ParsedFile:
    path: Path
    agent: str
    key: str
    intent: str
    versions: list[_ParsedVersion]
    scope: dict[str, Any] = field(default_factory=dict)  # only the keys the file has
    releases: dict[str, int] | None = None  # None: the file has no "releases"


def export_library(directory: Path, *, agents: list[Agent] | None = None) -> list[Path]:
    """Writes one file per procedure; returns the paths (none for an empty library: the directory
    is still created, an empty export)."""
    directory = Path(directory)
    # with nothing to export the directory is still written: an empty export, which imports as nothing
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    agent_qs = Agent.objects.order_by("name") if agents is None else sorted(agents, key=lambda a: a.name)
    for agent in agent_qs:
        procedures = (
            agent.procedures.select_related("intent", "namespace").prefetch_related("releases__version").order_by("key")
        )
        for procedure in procedures:
            versions = procedure.versions.select_related(
                "approved_by", "proposed_by", "procedure", "based_on", "tombstone__erased_by"
            ).order_by("number")
            payload = procedure_payload(procedure, list(versions))
            path = directory / agent.name / f"{procedure.key}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            written.append(path)
    return written


def procedure_payload(procedure: Procedure, versions: list[ProcedureVersion]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "id": procedure.key,
        "agent": procedure.agent.name,
        "intent": procedure.intent.name,
        "namespace": procedure.namespace.name,
        "roles": list(procedure.roles or []),
        "priority": procedure.priority,
        "confidence": procedure.confidence,
        "releases": {
            r.environment: r.version.number for r in sorted(procedure.releases.all(), key=lambda r: r.environment)
        },
        "versions": [_version_record(v) for v in versions],
    }


def _version_record(version: ProcedureVersion) -> dict[str, Any]:
    if version.status == Status.ERASED:
        tombstone = getattr(version, "tombstone", None)
        record: dict[str, Any] = {"version": version.number, "status": Status.ERASED}
        if tombstone is not None:
            record["tombstone"] = {
                "reference": tombstone.reference,
                "contentHash": tombstone.content_hash,
                "statusBefore": tombstone.status_before,
                "ground": tombstone.ground,
                "reason": tombstone.reason,
                "erasedBy": tombstone.erased_by.get_username(),
                "erasedAt": tombstone.erased_at.isoformat().replace("+00:00", "Z"),
            }
        return record
    record = dict(version.to_dict())
    # the provenance of the record (docs/design.md): how it came, edited from which version, by whom,
    # from which mining run
    record["source"] = version.source
    record["basedOn"] = version.based_on.number if version.based_on_id else None
    record["proposedBy"] = version.proposed_by.get_username() if version.proposed_by_id else None
    record["miningRun"] = version.mining_run_id
    return record


def _parse_file(path: Path, agent_name_from_dir: str | None) -> _ParsedFile:
    data = read_json(path, agent=agent_name_from_dir)  # size, depth, NUL and surrogates checked
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
        raise ImportFileError(
            path, "agent", f"says {agent_name!r} but the file lies in directory {agent_name_from_dir!r}"
        )
    versions = data.get("versions")
    if not isinstance(versions, list) or not versions:
        raise ImportFileError(path, "versions", "must be a non-empty list")
    parsed: list[_ParsedVersion] = []
    for index, item in enumerate(versions):
        where = f"versions[{index}]"
        if not isinstance(item, dict):
            raise ImportFileError(path, where, "must be an object")
        if item.get("status") == Status.ERASED:
            parsed.append(_parse_tombstone(path, where, item))
            continue
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
    return _ParsedFile(
        path=path,
        agent=agent_name,
        key=data["id"],
        intent=data["intent"],
        versions=parsed,
        scope=_parse_scope(path, data),
        releases=_parse_releases(path, data),
    )


def _parse_tombstone(path: Path, where: str, item: dict) -> _ParsedVersion:
    tombstone = item.get("tombstone", {})
    if not isinstance(tombstone, dict):
        raise ImportFileError(path, f"{where}.tombstone", "must be an object")
    content_fields = [
        k for k in ("appliesWhen", "steps", "preconditions", "postconditions", "verifyCommand") if item.get(k)
    ]
    if content_fields:
        raise ImportFileError(
            path, f"{where}.{content_fields[0]}", "an erased version carries no content, only its tombstone"
        )
    number = item.get("version")
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise ImportFileError(path, f"{where}.version", "must be a positive integer")
    content_hash = tombstone.get("contentHash", "")
    return _ParsedVersion(
        source_number=number,
        source_status=Status.ERASED,
        content=None,
        evidence={},
        approved_by=None,
        approved_at=None,
        content_hash=content_hash if isinstance(content_hash, str) else "",
    )


def _parse_scope(path: Path, data: dict) -> dict[str, Any]:
    scope: dict[str, Any] = {}
    cleaners = {"roles": clean_roles, "priority": clean_priority, "confidence": clean_confidence}
    for name, clean in cleaners.items():
        if name in data:
            try:
                scope[name] = clean(data[name])
            except ValidationError as exc:
                raise ImportFileError(path, name, "; ".join(exc.messages)) from None
    if "namespace" in data:
        if not isinstance(data["namespace"], str) or not data["namespace"]:
            raise ImportFileError(path, "namespace", "must be a namespace name")
        scope["namespace"] = data["namespace"]
    return scope


def _parse_releases(path: Path, data: dict) -> dict[str, int] | None:
    if "releases" not in data:
        return None
    releases = data["releases"]
    if not isinstance(releases, dict):
        raise ImportFileError(path, "releases", "must be an object of environment → version number")
    for environment, number in releases.items():
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise ImportFileError(path, f"releases.{environment}", "must be a positive version number")
    return dict(releases)


@dataclass
class _Files:
    parsed: list[_ParsedFile]
    errors: list[ImportFileError]
    covered: set[str]  # existing agents the paths name (files or directories)
    # existing agents whose every procedure file the paths hold: their directory was given and
    # none of its files was refused. Only for those does a procedure without a file count as removed.
    complete: set[str]
    partial: list[str]  # why each other covered agent is not complete


def _parse_all(paths: list[Path]) -> _Files:
    """Every file parsed, or its error; two files with the same agent and id are both refused."""
    found, errors = collect_files(paths)
    parsed: list[_ParsedFile] = []
    for path, agent_dir in found:
        try:
            parsed.append(_parse_file(path, agent_dir))
        except ImportFileError as exc:
            errors.append(exc)
    by_id: dict[tuple[str, str], list[_ParsedFile]] = {}
    for item in parsed:
        by_id.setdefault((item.agent, item.key), []).append(item)
    for (agent_name, key), items in by_id.items():
        if len(items) > 1:
            for item in items:
                others = ", ".join(str(o.path) for o in items if o is not item)
                errors.append(
                    ImportFileError(
                        item.path,
                        "id",
                        f"{key!r} of agent {agent_name!r} is also the id in {others}: one file per procedure",
                        agent=agent_name,
                    )
                )
    parsed = [item for item in parsed if len(by_id[(item.agent, item.key)]) == 1]
    directories: set[str] = set()
    for root in map(Path, paths):
        if root.is_dir() and not root.is_symlink():
            directories.update(d.name for d in root.iterdir() if d.is_dir() and not d.is_symlink())
            directories.add(root.name)
    named = {p.agent for p in parsed} | {e.agent for e in errors if e.agent} | directories
    covered = set(Agent.objects.filter(name__in=named).values_list("name", flat=True))
    refused_in = {e.agent for e in errors if e.agent}
    partial = []
    for name in sorted(covered):
        if name not in directories:
            partial.append(
                f"{name}: only single files of this agent were given, not its directory: "
                "procedures without a file are not looked for (give the directory to sync removals)"
            )
        elif name in refused_in:
            partial.append(
                f"{name}: a file of this agent was refused: procedures without a readable file are not looked for"
            )
    complete = {name for name in covered if name in directories and name not in refused_in}
    return _Files(parsed=parsed, errors=errors, covered=covered, complete=complete, partial=partial)


def _resolve(item: _ParsedFile, agents: dict[str, Agent], create_intents: bool) -> Agent:
    if item.agent not in agents:
        raise ImportFileError(item.path, "agent", f"no agent named {item.agent!r} exists")
    if not create_intents and not Intent.objects.filter(agent=agents[item.agent], name=item.intent).exists():
        raise ImportFileError(
            item.path, "intent", f"agent {item.agent!r} has no intent {item.intent!r} (use --create-intents)"
        )
    return agents[item.agent]


def import_library(
    paths: list[Path], *, user=None, create_intents: bool = False, newest_only: bool = False
) -> ImportReport:
    """Validates and stores each file on its own transaction: a bad file lands in `report.errors`
    (path, field, reason) with nothing of it stored, and the others go on. `newest_only`: of a
    file's versions the library lacks, only the newest is proposed (a sync)."""
    files = _parse_all(paths)
    report = ImportReport(errors=files.errors)
    agents = {a.name: a for a in Agent.objects.filter(name__in={p.agent for p in files.parsed})}
    for item in files.parsed:
        try:
            agent = _resolve(item, agents, create_intents)
            with transaction.atomic():
                _import_file(item, agent, user=user, report=report, newest_only=newest_only)
        except ImportFileError as exc:
            report.errors.append(exc)
        except (DatabaseError, ValueError) as exc:  # what the checks above missed: this file only
            report.errors.append(ImportFileError(item.path, "(file)", f"could not be stored: {exc}"))
    return report


def _import_file(item: _ParsedFile, agent: Agent, *, user, report: ImportReport, newest_only: bool) -> None:
    intent, intent_created = Intent.objects.get_or_create(agent=agent, name=item.intent)
    if intent_created:
        report.intents_created.append(f"{agent.name}/{intent.name}")
    existing = _known_hashes(ProcedureVersion.objects.filter(procedure__agent=agent, procedure__key=item.key)).get(
        item.key, set()
    )
    is_new = not Procedure.objects.filter(agent=agent, key=item.key).exists()
    missing = []
    for version in item.versions:
        label = f"{agent.name}/{item.key} v{version.source_number or '?'}"
        if version.content is None or version.content.hash in existing:
            report.skipped.append(label + (" (erased: its tombstone)" if version.content is None else ""))
            continue
        missing.append(version)
    if newest_only:
        missing = missing[-1:]
    for version in missing:
        if version.content.hash in existing:
            report.skipped.append(f"{agent.name}/{item.key} v{version.source_number or '?'}")
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
        if is_new:
            _take_scope_of_file(item, created.procedure)
            is_new = False
        existing.add(created.content_hash)
        report.created.append(f"{agent.name}/{item.key} v{created.number}")


def _take_scope_of_file(item: _ParsedFile, procedure: Procedure) -> None:
    """A procedure the import creates takes the file's scope (roles, priority, confidence, and the
    namespace when it exists here): the file is its only record, so a library rebuilt from an export
    keeps them. An existing procedure's scope changes only through `library_sync` (a person who
    manages it, `procedure_scope_update`)."""
    changed = [name for name in ("roles", "priority", "confidence") if name in item.scope]
    for name in changed:
        setattr(procedure, name, item.scope[name])
    namespace = Namespace.objects.filter(name=item.scope.get("namespace", "")).first()
    if namespace is not None and namespace.pk != procedure.namespace_id:
        procedure.namespace = namespace
        changed.append("namespace")
    if changed:
        procedure.save(update_fields=changed)


# ---------------------------------------------------------------------------------------------- check and sync


@dataclass(frozen=True)
class Difference:
    """One way a procedure differs between the files and the library."""

    agent: str
    key: str
    kind: str  # one of KINDS
    detail: str
    path: Path | None = None

    def __str__(self) -> str:
        return f"{self.agent}/{self.key}: {self.kind}: {self.detail}"


# What --sync does with each kind: the first four change the library (through the gate); the
# others say the library is ahead of the files, which only a new export (a commit) brings level.
KINDS = ("new procedure", "new version", "scope", "removed", "erased", "library only", "status", "releases")
EXPORT_AGAIN = {
    "erased": "the file must hold the erased version's tombstone only (export_procedures writes it)",
    "library only": "export_procedures writes it into the file",
    "status": "statuses change in the library (review, approval, retirement); export_procedures writes them",
    "releases": "releases change on the release page; export_procedures writes them",
}


@dataclass
class Comparison:
    differences: list[Difference] = field(default_factory=list)
    errors: list[ImportFileError] = field(default_factory=list)
    files: dict[tuple[str, str], _ParsedFile] = field(default_factory=dict)
    # agents whose files the paths hold only in part (`_Files.partial`): nothing is "removed" there
    partial: list[str] = field(default_factory=list)


def _scope_differences(item: _ParsedFile, procedure: Procedure) -> list[str]:
    now = {
        "namespace": procedure.namespace.name,
        "roles": list(procedure.roles or []),
        "priority": procedure.priority,
        "confidence": procedure.confidence,
    }

    def same(name: str, value: Any) -> bool:  # roles are a set (clean_roles sorts them; older rows may not be)
        return sorted(now[name]) == sorted(value) if name == "roles" else now[name] == value

    return [
        f"{name} {now[name]!r} in the library, {value!r} in the file"
        for name, value in item.scope.items()
        if not same(name, value)
    ]


def _known_hashes(versions, by: str = "key") -> dict[Any, set[str]]:
    """Per procedure (its key, or `by="procedure_id"`), the content hashes its versions are known
    by: the recorded one (an erased version's tombstone keeps it, so erased content is never
    imported again) and the hash of the text as it is now (a version an erasure sweep rewrote
    keeps the hash of what was approved; library/services/erasure_sweep.py), so its export re-imports as nothing."""
    known: dict[Any, set[str]] = {}
    for version in versions.select_related("procedure"):
        group = known.setdefault(version.procedure.key if by == "key" else version.procedure_id, set())
        group.add(version.content_hash)
        if version.status != Status.ERASED:
            group.add(version.compute_content_hash())
    return known


def _version_differences(item: _ParsedFile, versions: list[ProcedureVersion]) -> list[tuple[str, str]]:
    """(kind, detail) for each library version the file holds otherwise or not at all, matched by
    content hash (numbers may differ: an imported version gets the library's next number)."""
    in_file = {v.content.hash: v for v in item.versions if v.content is not None}
    tombstones = {v.content_hash for v in item.versions if v.content is None and v.content_hash}
    found: list[tuple[str, str]] = []
    for version in versions:
        if version.status == Status.ERASED:
            reference = version.tombstone.reference if hasattr(version, "tombstone") else "its tombstone"
            copy = in_file.get(version.content_hash)
            if copy is not None:
                found.append(
                    (
                        "erased",
                        f"v{copy.source_number or '?'} of {item.path} holds the content of v{version.number}, "
                        f"which the library erased ({reference})",
                    )
                )
            elif version.content_hash not in tombstones:
                found.append(("library only", f"v{version.number} (ERASED) is not in {item.path}"))
            continue
        match = in_file.get(version.content_hash) or in_file.get(version.compute_content_hash())
        if match is None:
            found.append(("library only", f"v{version.number} ({version.status}) is not in {item.path}"))
        elif match.source_status and match.source_status != version.status:
            found.append(
                (
                    "status",
                    f"v{version.number} is {version.status} in the library, "
                    f"{match.source_status} in the file (its v{match.source_number or '?'})",
                )
            )
    return found


def _release_differences(item: _ParsedFile, procedure: Procedure) -> list[str]:
    if item.releases is None:
        return []
    now = {r.environment: r.version.number for r in procedure.releases.all()}
    return [
        f"{environment} serves v{now[environment] if environment in now else '-'} in the library, "
        f"v{item.releases[environment] if environment in item.releases else '-'} in the file"
        for environment in sorted(set(now) | set(item.releases))
        if now.get(environment) != item.releases.get(environment)
    ]


def library_differences(paths: list[Path]) -> Comparison:
    """Per procedure, what differs between the files under `paths` and the library (KINDS). Never
    writes. Agents compared: those the files name or whose directories the paths hold."""
    files = _parse_all(paths)
    result = Comparison(errors=files.errors, partial=files.partial)
    procedures = {
        (p.agent.name, p.key): p
        for p in Procedure.objects.filter(agent__name__in=files.covered)
        .select_related("agent", "namespace")
        .prefetch_related("releases__version")
    }
    versions: dict[int, list[ProcedureVersion]] = {}
    for version in (
        ProcedureVersion.objects.filter(procedure__in=list(procedures.values()))
        .select_related("procedure", "tombstone")
        .order_by("procedure_id", "number")
    ):
        versions.setdefault(version.procedure_id, []).append(version)
    hashes = _known_hashes(ProcedureVersion.objects.filter(procedure__in=list(procedures.values())), by="procedure_id")
    for item in files.parsed:
        result.files[(item.agent, item.key)] = item
        procedure = procedures.get((item.agent, item.key))
        if procedure is None:
            result.differences.append(
                Difference(item.agent, item.key, "new procedure", f"only in {item.path}", item.path)
            )
            continue
        known = hashes.get(procedure.pk, set())
        missing = [v.source_number for v in item.versions if v.content is not None and v.content.hash not in known]
        if missing:
            numbers = ", ".join(f"v{n}" if n else "a version" for n in missing)
            result.differences.append(
                Difference(
                    item.agent, item.key, "new version", f"{numbers} of {item.path} not in the library", item.path
                )
            )
        for detail in _scope_differences(item, procedure):
            result.differences.append(Difference(item.agent, item.key, "scope", detail, item.path))
        for kind, detail in _version_differences(item, versions.get(procedure.pk, [])):
            result.differences.append(Difference(item.agent, item.key, kind, detail, item.path))
        for detail in _release_differences(item, procedure):
            result.differences.append(Difference(item.agent, item.key, "releases", detail, item.path))
    for (agent_name, key), procedure in sorted(procedures.items()):
        if (agent_name, key) in result.files or agent_name not in files.complete:
            continue  # a procedure without a file counts only where the paths hold all the agent's files
        own = versions.get(procedure.pk, [])
        if any(v.status in (Status.ACTIVE, Status.APPROVED) for v in own):
            result.differences.append(
                Difference(agent_name, key, "removed", "no file for a procedure the library serves")
            )
        elif own:
            listed = ", ".join(f"v{v.number} ({v.status})" for v in own)
            result.differences.append(Difference(agent_name, key, "library only", f"{listed}: no file"))
    result.differences.sort(key=lambda d: (d.agent, d.key, KINDS.index(d.kind)))
    return result


@dataclass
class SyncReport:
    imported: ImportReport
    scope_changed: list[str] = field(default_factory=list)
    retirement_requested: list[str] = field(default_factory=list)
    not_applied: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)


def library_sync(paths: list[Path], *, user=None, create_intents: bool = False) -> SyncReport:
    """Turns each difference into what the library allows (module docstring). Bad files are in
    `report.imported.errors`; a change the user may not make is in `not_applied` with the reason."""

    comparison = library_differences(paths)
    report = SyncReport(
        imported=import_library(paths, user=user, create_intents=create_intents, newest_only=True),
        partial=comparison.partial,
    )
    for difference in comparison.differences:
        label = f"{difference.agent}/{difference.key}"
        if difference.kind == "scope":
            if label in report.scope_changed or any(n.startswith(label + ": scope") for n in report.not_applied):
                continue
            item = comparison.files[(difference.agent, difference.key)]
            procedure = Procedure.objects.select_related("namespace").get(
                agent__name=difference.agent, key=difference.key
            )
            namespace = Namespace.objects.filter(name=item.scope.get("namespace", procedure.namespace.name)).first()
            try:
                if user is None:
                    raise PermissionDenied("a scope change needs a person (--as-user) who manages the procedure")
                if namespace is None:
                    raise ValidationError(f"no namespace named {item.scope['namespace']!r}")
                procedure_scope_update(
                    procedure=procedure,
                    user=user,
                    namespace=namespace,
                    roles=item.scope.get("roles", procedure.roles),
                    priority=item.scope.get("priority", procedure.priority),
                    confidence=item.scope.get("confidence", procedure.confidence),
                    reason=f"Synced from {item.path.name}",
                )
                report.scope_changed.append(label)
            except (PermissionDenied, ValidationError, services.LifecycleError) as exc:
                message = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
                report.not_applied.append(f"{label}: scope: {message}")
        elif difference.kind == "removed":
            version = ProcedureVersion.objects.filter(
                procedure__agent__name=difference.agent, procedure__key=difference.key, status=Status.ACTIVE
            ).first()
            if version is None:
                report.not_applied.append(
                    f"{label}: removed: no ACTIVE version to retire (an approved one is withdrawn on its page)"
                )
                continue
            retirement_requested.send(
                sender=ProcedureVersion,
                version_id=version.pk,
                reason="Its file was removed from the procedures repository",
                actor_label="sync",
            )
            report.retirement_requested.append(f"{label} v{version.number}")
        elif difference.kind in EXPORT_AGAIN:
            report.not_applied.append(
                f"{label}: {difference.kind}: {difference.detail}: {EXPORT_AGAIN[difference.kind]}"
            )
    return report
