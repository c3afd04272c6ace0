"""Importing Agent Skills as candidates: every SKILL.md of a folder, a git checkout or a
`.zip`/`.skill` archive goes through the same gate as every other write.

Per skill, in this order, each step refusing the skill with its path, the field and the reason
(the others go on):
1. reading (sources.py: the archive's limits, symbolic links, oversize files, UTF-8);
2. validation of the front matter and the mapping to a procedure (mapping.py);
3. the tool contract: every `allowed-tools` entry must be one of the agent's tools;
4. redaction of every text field and of the kept body (the agent's patterns, the built-in shapes;
   the agent's tool names, the skill's own file names and colour literals kept);
5. `services.procedure_propose`: the content's shape, the policy screen over every field and the
   kept body and front matter (a finding quarantines the version), a CANDIDATE, audited.
Review and the eval then decide as for any candidate; nothing an import writes is ACTIVE.

A skill whose content (and kept body) a version of its procedure already has changes nothing; a
changed one becomes a new version based on the newest version (the candidate page shows the diff);
content the library erased is never imported again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from django.core.exceptions import ValidationError
from django.db import transaction

from procmem_client.skill_rendering import render_skill

from .. import services
from ..interchange.procedure_files import _known_hashes
from ..models import Agent, Intent, Procedure, ProcedureVersion, Source, Status, slug_validator
from ..redaction.redactor import Redactor
from . import sources
from .mapping import MappedSkill, SkillError, map_skill
from .trigger import says_when_to_use

# metadata procmem writes into a skill it serves (ids, version, approval, content hash): not redacted
UNREDACTED_PREFIX = "procmem-"
# CSS colour literals with a hex letter (`#d97757`): a skill's design values, not ids of anyone
_COLOUR = re.compile(r"(?<![\w#])#(?=[0-9a-f]*[a-f])(?:[0-9a-f]{8}|[0-9a-f]{6}|[0-9a-f]{3})(?![\w])", re.IGNORECASE)


@dataclass(frozen=True)
class SkillProblem:
    path: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.message}"


@dataclass
class SkillImportReport:
    source: str
    created: list[tuple[str, ProcedureVersion]] = field(default_factory=list)
    unchanged: list[tuple[str, str]] = field(default_factory=list)
    errors: list[SkillProblem] = field(default_factory=list)
    warnings: list[SkillProblem] = field(default_factory=list)
    intents_created: list[str] = field(default_factory=list)


def skills_import_path(*, agent: Agent, path: Path, user=None, intent: str = "") -> SkillImportReport:
    """Imports the skills under `path` (a folder, a checkout, an archive) for `agent`."""
    try:
        source = sources.read_source(Path(path))
    except sources.SourceError as exc:
        return SkillImportReport(source=str(path), errors=[SkillProblem(exc.where, "(source)", exc.message)])
    return skills_import(agent=agent, source=source, user=user, intent=intent, actor_label="import_skills")


def skills_import_archive(
    *, agent: Agent, handle: IO[bytes], name: str, user=None, intent: str = ""
) -> SkillImportReport:
    """Imports an uploaded `.zip`/`.skill` archive, read in memory."""
    try:
        source = sources.read_archive(handle, label=name)
    except sources.SourceError as exc:
        return SkillImportReport(source=name, errors=[SkillProblem(exc.where, "(archive)", exc.message)])
    return skills_import(agent=agent, source=source, user=user, intent=intent, actor_label="skills upload")


def skills_import(
    *, agent: Agent, source: sources.Source, user=None, intent: str = "", actor_label: str = ""
) -> SkillImportReport:
    report = SkillImportReport(source=source.label)
    for found in source.skills:
        # kept from redaction like the agent's tool names: the skill's own file names (`LICENSE.txt`,
        # `examples/faq.md`) and colour literals, which have the shape of ids but name no one
        kept = [*agent.tools, *(f.path for f in found.files), *(PurePosixPath(f.path).name for f in found.files)]
        kept += _COLOUR.findall(found.text or "")
        redactor = Redactor(agent_patterns=agent.redaction_patterns, keep=kept)
        try:
            _import_one(
                found, agent=agent, source=source, user=user, intent=intent, actor_label=actor_label,
                redactor=redactor, report=report,
            )  # fmt: skip
        except SkillError as exc:
            report.errors.append(SkillProblem(found.path, exc.field, exc.message))
    return report


def _redacted(mapped: MappedSkill, redactor: Redactor) -> list[str]:
    """Redacts the mapped skill in place; returns the fields redaction changed."""
    changed: list[str] = []

    def text(value: str, where: str) -> str:
        out = redactor.text(value)
        if out != value:
            changed.append(where)
        return out

    mapped.applies_when = text(mapped.applies_when, "description")
    mapped.steps = [text(s, f"steps[{i}]") for i, s in enumerate(mapped.steps, start=1)]
    mapped.forbidden_actions = [text(s, f"forbiddenActions[{i}]") for i, s in enumerate(mapped.forbidden_actions, 1)]
    mapped.preconditions = [text(s, f"preconditions[{i}]") for i, s in enumerate(mapped.preconditions, 1)]
    mapped.postconditions = [text(s, f"postconditions[{i}]") for i, s in enumerate(mapped.postconditions, 1)]
    mapped.unmapped_body = text(mapped.unmapped_body, "body")
    for key, value in list(mapped.front_matter.items()):
        if isinstance(value, str):
            mapped.front_matter[key] = text(value, key)
        elif key == "metadata":
            mapped.front_matter[key] = {
                k: v if k.startswith(UNREDACTED_PREFIX) else text(v, f"metadata.{k}") for k, v in value.items()
            }
    return changed


def _screened_texts(mapped: MappedSkill) -> dict[str, str]:
    """What comes with the content and is screened beside it: the kept body and the front matter."""
    texts = {"body": mapped.unmapped_body} if mapped.unmapped_body else {}
    for key, value in mapped.front_matter.items():
        if isinstance(value, dict):
            texts.update({f"metadata.{k}": v for k, v in value.items() if not k.startswith(UNREDACTED_PREFIX)})
        elif isinstance(value, str):
            texts[key] = value
        elif value is not None:
            texts[key] = str(value)
    return texts


def _intent_for(mapped: MappedSkill, agent: Agent, procedure: Procedure | None, chosen: str) -> tuple[Intent, bool]:
    if procedure is not None:
        return procedure.intent, False
    name = chosen or mapped.intent or mapped.name
    try:
        slug_validator(name)
    except ValidationError:
        raise SkillError(
            "metadata.procmem-intent" if mapped.intent else "name", f"{name!r} is no intent name"
        ) from None
    return Intent.objects.get_or_create(agent=agent, name=name)


def _import_one(
    found: sources.FoundSkill,
    *,
    agent: Agent,
    source: sources.Source,
    user,
    intent: str,
    actor_label: str,
    redactor: Redactor,
    report: SkillImportReport,
) -> None:
    if found.text is None or found.problem:
        raise SkillError(found.problem_field, found.problem)
    mapped = map_skill(found.text, folder=found.folder, coding=agent.kind == Agent.Kind.CODING)
    if not mapped.required_tools:
        mapped.required_tools = _tools_kept_from_procmem(mapped, agent)
    missing = [tool for tool in mapped.required_tools if tool not in agent.tools]
    if missing:
        raise SkillError(
            "allowed-tools",
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not among the tools of agent {agent.name} "
            "(the tool contract); add the tool to the agent or take it out of allowed-tools",
        )
    redacted = _redacted(mapped, redactor)
    try:
        content = services.validate_content(
            applies_when=mapped.applies_when,
            steps=mapped.steps,
            required_tools=mapped.required_tools,
            forbidden_actions=mapped.forbidden_actions,
            preconditions=mapped.preconditions,
            postconditions=mapped.postconditions,
            verify_command=mapped.verify_command,
            coding=agent.kind == Agent.Kind.CODING,
        )
    except ValidationError as exc:
        raise _field_error(exc) from None
    with transaction.atomic():
        procedure = Procedure.objects.filter(agent=agent, key=mapped.key).select_related("intent").first()
        label = f"{agent.name}/{mapped.key}"
        if procedure is not None:
            versions = list(procedure.versions.select_related("approved_by").order_by("-number"))
            served = _served_as(versions, found.text, mapped)
            if served is not None:
                report.unchanged.append((found.path, f"{label} v{served.number}"))
                return
            if _unchanged(procedure, versions, content.hash, mapped.unmapped_body):
                same = next((v for v in versions if v.content_hash == content.hash), None)
                if same is not None and same.status == Status.ERASED:
                    raise SkillError("(content)", f"is the content of {label} v{same.number}, which was erased")
                report.unchanged.append((found.path, f"{label} v{same.number}" if same else label))
                return
        chosen_intent, created = _intent_for(mapped, agent, procedure, intent)
        if created:
            report.intents_created.append(f"{agent.name}/{chosen_intent.name}")
        base = next((v for v in versions if v.status != Status.ERASED), None) if procedure is not None else None
        try:
            version = services.procedure_propose(
                agent=agent,
                intent=chosen_intent,
                key=mapped.key,
                applies_when=content.applies_when,
                steps=content.steps,
                required_tools=content.required_tools,
                forbidden_actions=content.forbidden_actions,
                preconditions=content.preconditions,
                postconditions=content.postconditions,
                verify_command=content.verify_command,
                source=Source.IMPORTED,
                proposed_by=user,
                actor_label=actor_label,
                provenance={"file": found.path, "skill": _skill_record(found, source, mapped, redacted)},
                reason=f"Imported from skill {mapped.name} ({found.path})",
                screen_also=_screened_texts(mapped),
                based_on=base,
            )
        except ValidationError as exc:
            raise _field_error(exc) from None
    report.created.append((found.path, version))
    for warning in mapped.warnings:
        report.warnings.append(SkillProblem(found.path, "(import)", warning))
    if not says_when_to_use(mapped.applies_when):
        report.warnings.append(
            SkillProblem(found.path, "description", "does not say when to use the skill; agents choose by it alone")
        )


def _tools_kept_from_procmem(mapped: MappedSkill, agent: Agent) -> list[str]:
    """A skill procmem wrote carries no allowed-tools (procmem serves requiredTools as the steps'
    text): its requiredTools are those of the version it was written from (`procmem-version`) that
    the steps still name. Empty for any other skill."""
    metadata = mapped.front_matter.get("metadata") or {}
    number = metadata.get("procmem-version", "")
    if "procmem-id" not in metadata or not number.isdigit():
        return []
    base = ProcedureVersion.objects.filter(
        procedure__agent=agent, procedure__key=mapped.key, number=int(number)
    ).first()
    if base is None:
        return []
    steps = " ".join(mapped.steps)
    return [tool for tool in base.required_tools if re.search(rf"(?<![\w]){re.escape(tool)}(?![\w])", steps)]


def _served_as(versions: list[ProcedureVersion], text: str, mapped: MappedSkill) -> ProcedureVersion | None:
    """The version whose served SKILL.md (procmem_client.skill_rendering) is `text` exactly, when
    the skill names the content hash procmem wrote into it: a skill procmem served, unedited. (Its
    parsed fields need not hash alike: "Do not" prefixes and joined Before: lines are written
    differently from how they are stored.)"""
    digest = (mapped.front_matter.get("metadata") or {}).get("procmem-content-sha256")
    if not digest:
        return None
    for version in versions:
        if version.status == Status.ERASED or version.content_hash != digest:
            continue
        record = {**version.to_dict(), "intent": version.procedure.intent.name}
        if render_skill(record)["files"]["SKILL.md"] == text.lstrip("\ufeff"):
            return version
    return None


def _unchanged(procedure: Procedure, versions: list[ProcedureVersion], content_hash: str, kept: str) -> bool:
    """True when a version of the procedure already holds this content and kept body (an erased
    version by its tombstone's hash: erased content is not imported again)."""
    known = _known_hashes(ProcedureVersion.objects.filter(procedure=procedure), by="procedure_id").get(
        procedure.pk, set()
    )
    if content_hash not in known:
        return False
    for version in versions:
        if version.content_hash == content_hash or version.compute_content_hash() == content_hash:
            if version.status == Status.ERASED:
                return True
            if ((version.provenance or {}).get("skill") or {}).get("unmappedBody", "") == kept:
                return True
    return False


def _skill_record(found: sources.FoundSkill, source: sources.Source, mapped: MappedSkill, redacted: list[str]) -> dict:
    """What the version's provenance keeps of the skill (immutable, shown on the candidate page)."""
    record: dict[str, Any] = {
        "name": mapped.name,
        "path": found.path,
        "source": source.label,
        "sha256": found.sha256,
        "frontMatter": mapped.front_matter,
        "unmappedBody": mapped.unmapped_body,
        "files": [{"path": f.path, "bytes": f.bytes, "sha256": f.sha256} for f in found.files],
        "redacted": redacted,
    }
    if source.git_commit:
        record["gitCommit"] = source.git_commit
    return record


def _field_error(exc: ValidationError) -> SkillError:
    if hasattr(exc, "error_dict"):
        name, messages = next(iter(exc.message_dict.items()))
        return SkillError(name, "; ".join(messages))
    return SkillError("(content)", "; ".join(exc.messages))
