"""One SKILL.md into what a procedure version holds (the skills → procedures direction of
docs/api.md "Agent Skills"). Pure Python; the front matter is read by procmem_client.skills, the
same reader and name mapping the serving side writes with.

- `name` (equal to the folder's name) → the procedure id: `metadata.procmem-id` when the skill
  carries one (procmem wrote it), else `skill_name_to_id(name)`, else, for a one-word name that is
  no procmem name, `skill.<name with _>` (a warning says so: that id serves as another name);
- `description` → appliesWhen (whole; of a skill procmem wrote, its "Use it when:" part);
- `allowed-tools` (space-delimited, or a YAML list) → requiredTools (of a skill procmem wrote, which has
  none: those of its `procmem-version` that the steps still name), checked against the agent's
  tools by the importer;
- the body: the first numbered list → the steps; `Do not:` lines → forbiddenActions; a coding
  procedure's `Before:`, `After:` and `Verify:` lines → preconditions, postconditions and the verify
  command; the lines procmem's skill renderer writes around them map to nothing. When any other
  line is there (prose, headings, code, a second list), the whole body is kept (`unmapped_body`),
  shown on the candidate page and never dropped. A body with no numbered list gets one step that
  points at that kept text.
- `license`, `compatibility`, `metadata` and any other keys are kept as read (`front_matter`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from procmem_client import skills
from procmem_client.rendering import HEADER

COMPATIBILITY_MAX = 500
NO_STEPS = (
    "Follow the skill's instructions: its SKILL.md had no numbered list of steps, so its whole text is kept "
    "with this version for the reviewer to turn into steps."
)
_NUMBERED = re.compile(r"^(\d{1,3})[.)]\s+(\S.*)$")
_LINE_FIELDS = {"do not:": "forbidden", "before:": "pre", "after:": "post", "verify:": "verify"}
_FENCE = re.compile(r"^\s*(```|~~~)")


class SkillError(Exception):
    """The skill is refused: `field` names the front matter key or the part of the file."""

    def __init__(self, field: str, message: str):
        self.field, self.message = field, message
        super().__init__(f"{field}: {message}")


@dataclass
class MappedSkill:
    name: str
    key: str
    applies_when: str
    steps: list[str]
    required_tools: list[str]
    forbidden_actions: list[str]
    preconditions: list[str] = field(default_factory=list)
    postconditions: list[str] = field(default_factory=list)
    verify_command: str = ""
    unmapped_body: str = ""  # the whole body when any of it could not be mapped, else ""
    front_matter: dict[str, Any] = field(default_factory=dict)  # every key but name and description
    intent: str = ""  # metadata.procmem-intent when procmem wrote the skill
    warnings: list[str] = field(default_factory=list)


def _refuse_aliases_and_twice_named_keys(text: str) -> None:
    """YAML anchors and aliases have no place in front matter (plain keys and strings) and are how
    a small file expands into a huge value: refused before anything walks the value. A key named
    twice in one mapping is refused too: YAML forbids it, and readers disagree on which value wins
    (PyYAML the last, others the first), so the reviewer and another agent could read two skills."""
    raw, _body = skills.split_front_matter(text)
    try:
        for token in yaml.scan(raw):
            if isinstance(token, (yaml.AliasToken, yaml.AnchorToken)):
                raise SkillError("front matter", "uses a YAML anchor or alias (& or *); write plain values")
        root = yaml.compose(raw, Loader=yaml.SafeLoader)  # nodes only: no value is built
    except yaml.YAMLError:
        return  # the reader reports the syntax error with its line and column
    pending = [root] if root is not None else []
    while pending:
        node = pending.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        line = key.start_mark.line + 2  # the front matter starts on the line after `---`
                        raise SkillError("front matter", f"names the key {key.value!r} twice (SKILL.md line {line})")
                    seen.add(key.value)
                pending.append(value)
        elif isinstance(node, yaml.SequenceNode):
            pending.extend(node.value)


def _string_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise SkillError(where, "must be a mapping of strings to strings")
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, (str, int, float, bool)) or item is None:
            raise SkillError(f"{where}.{key}", "must be a string")
    return {key: str(item) for key, item in value.items()}


def _tools(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [part for item in value for part in item.split()]
    raise SkillError("allowed-tools", "must be a space-delimited string of tool names")


def procedure_key(name: str, metadata: dict[str, str]) -> tuple[str, str]:
    """(the procedure id for a skill, a warning or "")."""
    given = metadata.get("procmem-id")
    if given is not None:
        if not skills.is_procedure_id(given):
            raise SkillError("metadata.procmem-id", f"{given!r} is not a procedure id (dotted lower-case words)")
        return given, ""
    try:
        return skills.skill_name_to_id(name), ""
    except skills.SkillNameError:
        key = "skill." + name.replace("-", "_")
        if not skills.is_procedure_id(key):
            raise SkillError("name", f"{name!r} maps to no procedure id") from None
        served = skills.id_to_skill_name(key)
        return key, f"name {name!r} is no procmem name: imported as {key}, which procmem serves as {served!r}"


# Lines procmem's own skill renderer writes around the fields (procmem_client.skill_rendering):
# the renderer's header, the procedure line, "Use it when: …" and the pointer to scripts/verify.sh.
# They map to nothing and lose nothing (they are rebuilt from the fields).
_PROCEDURE_LINE = re.compile(r"^Procedure [a-z][a-z0-9_]*(\.[a-z0-9_]+)+ v\d+ \(source: .*\)$")
_USE_WHEN = re.compile(r"^Use it when: (\S.*)$")
_VERIFY_POINTER = "The Verify command is also scripts/verify.sh in this folder."


def _procmem_line(line: str) -> bool:
    return line == HEADER or line == _VERIFY_POINTER or bool(_PROCEDURE_LINE.match(line) or _USE_WHEN.match(line))


def map_body(body: str, *, coding: bool = False) -> tuple[dict[str, Any], bool]:
    """The fields the body's lines give, and whether every line mapped (blank lines and the lines
    procmem writes around the fields aside). Lines inside code fences are never read as fields;
    `Before:`, `After:` and `Verify:` only for a coding agent (another agent's procedure has no such
    fields: the lines stay in the kept body). Only the first numbered list gives steps."""
    fields: dict[str, Any] = {"steps": [], "forbidden": [], "pre": [], "post": [], "verify": "", "when": ""}
    in_fence, list_state, every_line = False, "before", True  # list: before → in → after
    for line in body.splitlines():
        if _FENCE.match(line):
            in_fence, every_line = not in_fence, False
            continue
        stripped = line.strip()
        if in_fence or not stripped:
            every_line = every_line and not in_fence
            continue
        numbered = _NUMBERED.match(line) if list_state != "after" else None
        if numbered:
            list_state = "in"
            fields["steps"].append(numbered.group(2).strip())
            continue
        if list_state == "in" and not line[:1].isspace():
            list_state = "after"
        if _procmem_line(line):
            when = _USE_WHEN.match(line)
            if when and not fields["when"]:
                fields["when"] = when.group(1).strip()
            continue
        lowered = stripped.lower()
        for prefix, name in _LINE_FIELDS.items():
            if lowered.startswith(prefix) and not line[:1].isspace() and (coding or name == "forbidden"):
                text = stripped[len(prefix) :].strip()
                if not text:
                    continue
                if name == "verify":
                    fields["verify"] = fields["verify"] or text.strip("`")
                else:
                    fields[name].append(text)
                break
        else:
            every_line = False
    return fields, every_line and bool(fields["steps"])


def applies_when_from(description: str, metadata: dict[str, str], body_when: str) -> str:
    """appliesWhen: the description whole, except for a skill procmem wrote ("<what it does>. Use it
    when: <appliesWhen>"): then its "Use it when:" part (the body's line first: the description may
    have been cut to fit 1,024 characters)."""
    description = " ".join(description.split())
    if "procmem-id" in metadata:
        if body_when:
            return body_when
        _, found, when = description.partition(" Use it when: ")
        if found and when:
            return when
    return description


def map_skill(text: str, *, folder: str, coding: bool = False) -> MappedSkill:
    """The mapped skill, or SkillError naming the field."""
    try:
        _refuse_aliases_and_twice_named_keys(text)
        front, body = skills.read_skill_file(text)
    except skills.SkillFileError as exc:
        raise SkillError(exc.field or "front matter", exc.reason) from None
    name = front["name"]
    if name != folder:
        raise SkillError("name", f"{name!r} must equal the name of its folder, {folder!r}")
    metadata = _string_map(front.get("metadata") or {}, "metadata")
    for key in ("license", "compatibility"):
        if key in front and not isinstance(front[key], str):
            raise SkillError(key, "must be a string")
    if len(front.get("compatibility") or "") > COMPATIBILITY_MAX:
        raise SkillError("compatibility", f"{len(front['compatibility'])} characters, at most {COMPATIBILITY_MAX}")
    tools = _tools(front.get("allowed-tools"))
    if len(set(tools)) != len(tools):
        raise SkillError("allowed-tools", "lists a tool twice")
    key, key_warning = procedure_key(name, metadata)
    fields, every_line = map_body(body, coding=coding)
    kept = {k: v for k, v in front.items() if k not in ("name", "description")}
    if "metadata" in kept:
        kept["metadata"] = metadata
    mapped = MappedSkill(
        name=name,
        key=key,
        applies_when=applies_when_from(front["description"], metadata, fields["when"]),
        steps=fields["steps"] or [NO_STEPS],
        required_tools=tools,
        forbidden_actions=fields["forbidden"],
        preconditions=fields["pre"],
        postconditions=fields["post"],
        verify_command=fields["verify"],
        front_matter=kept,
        intent=metadata.get("procmem-intent", ""),
        warnings=[key_warning] if key_warning else [],
    )
    if not every_line:
        mapped.unmapped_body = body.strip("\n")
        mapped.warnings.append(
            "body text beyond the steps is kept whole beside them"
            if fields["steps"]
            else "no numbered list of steps: the whole body is kept for the reviewer"
        )
    return mapped
