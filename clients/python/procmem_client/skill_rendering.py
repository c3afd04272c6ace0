"""A procedure version as an Agent Skill folder (agentskills.io): THE skill renderer, pure Python.

The server serves what this writes (library/serving/skills.py), `procmem skills sync` writes it into
an agent's repository, and the TypeScript client (clients/typescript/src/skills.ts) writes the same
bytes; the golden files in clients/golden/skills/ are checked by both test suites.

The input is a served procedure record (the active set's: `id`, `version`, `intent`, `appliesWhen`,
`steps`, `requiredTools`, `forbiddenActions`, `evidence`, `approvedBy`, `approvedAt`, a coding
procedure's `preconditions`, `postconditions` and `verifyCommand`). The folder:

    refund-over-limit/SKILL.md
        ---
        name: refund-over-limit
        description: "Refund over limit: a reviewed procedure of 4 steps with lookupOrder, .... Use it
          when: <appliesWhen>"
        metadata:
          procmem-id: "refund.over_limit"
          procmem-version: "3"
          procmem-approved-by: "alice"
          procmem-approved-at: "2026-11-29T10:04:05Z"
          procmem-content-sha256: "<the version's content hash>"
        ---
        <the renderer's block for this one procedure: the header, `Procedure … v3 (source …)`, the
        steps, the Before/After/Do not/Verify lines, exactly as procmem_client.rendering writes them>

        Use it when: <appliesWhen>
    refund-over-limit/scripts/verify.sh    (coding procedures with a verify command only)

The description says what the procedure does (its intent, how many steps, with which tools) and
when to use it (appliesWhen), at most 1,024 characters counted in UTF-16 units, which is how the
reference validator (skills-ref) counts, and never more code points either: appliesWhen is cut
with "…" when it would not fit. `procmem-content-sha256` is the version's content hash
(library/models/versions.py content_hash), recomputed here from the record's content fields.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Mapping
from typing import Any, TypedDict

from .rendering import render_block
from .skills import DESCRIPTION_MAX, id_to_skill_name, write_front_matter

MAX_TOOLS_NAMED = 8  # a description names this many of the required tools, then "and N more"
VERIFY_SCRIPT = "scripts/verify.sh"
SKILL_FILE = "SKILL.md"
# file modes in an archive (and what `procmem skills sync` gives the files it writes)
FILE_MODES = {SKILL_FILE: 0o644, VERIFY_SCRIPT: 0o755}


class SkillFolder(TypedDict):
    name: str  # the folder's name and the front matter's
    description: str
    files: dict[str, str]  # relative path -> UTF-8 text, in the order written (SKILL.md first)


def _utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _words(text: str) -> str:
    """White space collapsed the way Python's str.split() sees it (the TypeScript client too)."""
    return " ".join(text.split())


def content_sha256(record: Mapping[str, Any]) -> str:
    """The version's content hash, from the record's content fields: sha256 over the canonical
    JSON (sorted keys, no spaces, UTF-8) that library/models/versions.py content_hash hashes."""
    fields: dict[str, Any] = {
        "appliesWhen": record.get("appliesWhen") or "",
        "steps": list(record.get("steps") or []),
        "requiredTools": list(record.get("requiredTools") or []),
        "forbiddenActions": list(record.get("forbiddenActions") or []),
    }
    for optional in ("preconditions", "postconditions", "verifyCommand"):
        if record.get(optional):
            fields[optional] = record[optional] if optional == "verifyCommand" else list(record[optional])
    payload = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _what_it_does(record: Mapping[str, Any]) -> str:
    intent = _words(str(record.get("intent") or "").replace("_", " ").replace("-", " "))
    subject = (intent[:1].upper() + intent[1:]) if intent else f"Procedure {record['id']}"
    count = len(record.get("steps") or [])  # as the renderer numbers them
    what = f"{subject}: a reviewed procedure of {count} step{'' if count == 1 else 's'}"
    tools = [tool for tool in record.get("requiredTools") or [] if tool.strip()]
    if tools:
        named = tools[:MAX_TOOLS_NAMED]
        more = len(tools) - len(named)
        listed = ", ".join(named) + (f" and {more} more" if more else "")
        what += f" with {listed}"
    return what + "."


def describe(record: Mapping[str, Any]) -> str:
    """What the skill does and when to use it, within the specification's 1,024 characters."""
    what = _what_it_does(record)
    when = _words(str(record.get("appliesWhen") or ""))
    if not when:
        return _cut(what, DESCRIPTION_MAX)
    lead = f"{what} Use it when: "
    budget = DESCRIPTION_MAX - _utf16_length(lead)
    if budget < 2:  # the tool list alone fills the description
        return _cut(what, DESCRIPTION_MAX)
    return lead + _cut(when, budget)


def _cut(text: str, budget: int) -> str:
    """`text` within `budget` UTF-16 units, cut at a code point and ended with "…" when cut."""
    if _utf16_length(text) <= budget:
        return text
    kept, used = [], 1  # the ellipsis is one unit
    for char in text:
        width = 2 if ord(char) > 0xFFFF else 1
        if used + width > budget:
            break
        kept.append(char)
        used += width
    return "".join(kept).rstrip() + "…"


def skill_metadata(record: Mapping[str, Any]) -> dict[str, str]:
    metadata = {"procmem-id": str(record["id"]), "procmem-version": str(record["version"])}
    if record.get("approvedBy"):
        metadata["procmem-approved-by"] = str(record["approvedBy"])
    if record.get("approvedAt"):
        metadata["procmem-approved-at"] = str(record["approvedAt"])
    metadata["procmem-content-sha256"] = content_sha256(record)
    return metadata


def skill_body(record: Mapping[str, Any]) -> str:
    """The Markdown body: the block the renderer writes for this one procedure (no cap), when to
    use it, and where the verify script is."""
    parts = [render_block([record], max_chars=None)["text"]]
    when = _words(str(record.get("appliesWhen") or ""))
    if when:
        parts.append(f"Use it when: {when}")
    if (record.get("verifyCommand") or "").strip():
        parts.append(f"The Verify command is also {VERIFY_SCRIPT} in this folder.")
    return "\n\n".join(parts) + "\n"


def verify_script(record: Mapping[str, Any]) -> str:
    return (
        "#!/bin/sh\n"
        f"# The Verify command of the reviewed procedure {record['id']} v{record['version']} (see SKILL.md).\n"
        f"{record['verifyCommand'].strip()}\n"
    )


def render_skill(record: Mapping[str, Any]) -> SkillFolder:
    """The skill folder of one procedure version. Deterministic: the same record, the same bytes."""
    name = id_to_skill_name(str(record["id"]))
    description = describe(record)
    front = write_front_matter({"name": name, "description": description, "metadata": skill_metadata(record)})
    files = {SKILL_FILE: front + skill_body(record)}
    if (record.get("verifyCommand") or "").strip():
        files[VERIFY_SCRIPT] = verify_script(record)
    return {"name": name, "description": description, "files": files}


def skill_archive(folder: SkillFolder) -> bytes:
    """The folder as a .tar.gz with its files at the root (the discovery specification's archive
    form): sorted paths, fixed owner, modes and times, so the same folder gives the same bytes."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(folder["files"]):
            data = folder["files"][path].encode("utf-8")
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), FILE_MODES.get(path, 0o644), 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), compresslevel=9, mtime=0)


def sha256_digest(data: bytes) -> str:
    """The discovery index's digest form: `sha256:` and 64 lower-case hex digits."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


__all__ = [
    "FILE_MODES",
    "SKILL_FILE",
    "VERIFY_SCRIPT",
    "SkillFolder",
    "content_sha256",
    "describe",
    "render_skill",
    "sha256_digest",
    "skill_archive",
    "skill_body",
    "skill_metadata",
]
