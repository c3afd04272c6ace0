"""The served set as Agent Skills (agentskills.io): each served procedure version as a skill folder,
and the discovery index of them (docs/api.md "Agent Skills").

A skill is rendered from the served record by THE skill renderer
(procmem_client/skill_rendering.py), so the bytes here are the bytes `procmem skills sync` and the
TypeScript client write. What an agent may read is exactly what its served set holds (the same
namespace, role, environment and rollout arm as the active-set view): the skills are derived from
that set and kept per set, so they change exactly when it does and never cost a query of their own.

The index (discovery schema 0.2.0) names each skill with a relative URL, so its bytes do not
depend on the host it is fetched from, and with the `sha256:` digest of the artifact: the SKILL.md
of a skill that is only a SKILL.md (`"type": "skill-md"`), the .tar.gz of a folder with a
scripts/verify.sh (`"type": "archive"`). Each entry also carries procmem's own fields (clients
ignore fields they do not know): the procedure id and version, and the digest of every file of
the folder, which `procmem skills sync --check` compares against what is on disk.

URLs of a skill name its version (`skills/<name>/v<N>/SKILL.md`, `skills/<name>/v<N>/skill.tar.gz`):
a version's content, approver and approval time never change, so neither do those bytes.

The index has a versioned twin, `sets/<etag>/index.json` (the specification's "versioned index
paths"): the same entries, their URLs written relative to that deeper path, at a URL named by the
unversioned index's ETag. Content-addressed, so the bytes at such a URL never change; it is served
while its set is the one served (a pinned set whose skills procmem no longer serves is not served
either, as their versioned URLs are not).
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from procmem_client.skill_rendering import SKILL_FILE, render_skill, sha256_digest, skill_archive

from .active_set import ServedSet

DISCOVERY_SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
ARCHIVE_FILE = "skill.tar.gz"
SNAPSHOT_BASE = "../../"  # from sets/<etag>/index.json back to the folder of the unversioned index


@dataclass(frozen=True)
class ServedSkill:
    name: str
    procedure_id: str
    version: int
    description: str
    files: dict[str, bytes]  # relative path -> bytes, SKILL.md first
    file_digests: dict[str, str]
    skill_md_digest: str
    has_scripts: bool
    _archive: list[bytes] = field(default_factory=list, repr=False, compare=False)  # built on first request

    @property
    def skill_md(self) -> bytes:
        return self.files[SKILL_FILE]

    def archive(self) -> bytes:
        if not self._archive:
            self._archive.append(
                skill_archive(
                    {
                        "name": self.name,
                        "description": self.description,
                        "files": {p: b.decode() for p, b in self.files.items()},
                    }
                )
            )
        return self._archive[0]

    @property
    def kind(self) -> str:
        return "archive" if self.has_scripts else "skill-md"


@dataclass
class SkillSet:
    """The skills of one served set: by name, in the set's order (procedure id)."""

    skills: dict[str, ServedSkill]
    _indexes: dict[tuple[str, str], tuple[bytes, str]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def get(self, name: str, version: int) -> ServedSkill | None:
        skill = self.skills.get(name)
        return skill if skill is not None and skill.version == version else None

    def index(self, query: dict[str, str]) -> tuple[bytes, str]:
        """The index's bytes and strong ETag. `query` (environment, role, session as the caller gave
        them) is carried into each skill's URL, so the skills resolve in the same set."""
        return self._built(query, base="")

    def snapshot(self, query: dict[str, str]) -> tuple[bytes, str]:
        """The versioned index (`sets/<etag>/index.json`, `<etag>` the unversioned index's ETag for
        the same `query`): the same entries with each URL climbing back from that path. Its own
        bytes and strong ETag."""
        return self._built(query, base=SNAPSHOT_BASE)

    def _built(self, query: dict[str, str], *, base: str) -> tuple[bytes, str]:
        key = urlencode(sorted(query.items()))
        with self._lock:
            cached = self._indexes.get((base, key))
        if cached is not None:
            return cached
        body = json.dumps(
            {"$schema": DISCOVERY_SCHEMA, "skills": [_entry(skill, key, base) for skill in self.skills.values()]},
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode("utf-8")
        built = (body, f'"{hashlib.sha256(body).hexdigest()[:40]}"')
        with self._lock:
            if len(self._indexes) < 32:  # callers choose the query: bound what is kept
                self._indexes[(base, key)] = built
        return built


def snapshot_path(etag: str, query: dict[str, str]) -> str:
    """Where the versioned index of the set whose unversioned index has `etag` is, relative to the
    unversioned index (the request's parameters carried along, so it names the same set)."""
    suffix = urlencode(sorted(query.items()))
    return f"sets/{etag.strip(chr(34))}/index.json" + (f"?{suffix}" if suffix else "")


def skill_path(skill: ServedSkill, file: str) -> str:
    return f"skills/{skill.name}/v{skill.version}/{file}"


def _entry(skill: ServedSkill, query: str, base: str) -> dict[str, Any]:
    suffix = f"?{query}" if query else ""
    archive = skill.has_scripts
    return {
        "name": skill.name,
        "type": skill.kind,
        "description": skill.description,
        "url": base + skill_path(skill, ARCHIVE_FILE if archive else SKILL_FILE) + suffix,
        "digest": sha256_digest(skill.archive()) if archive else skill.skill_md_digest,
        "procmemId": skill.procedure_id,
        "procmemVersion": skill.version,
        "procmemFiles": skill.file_digests,
    }


def skill_from_record(record: dict[str, Any]) -> ServedSkill:
    folder = render_skill(record)
    files = {path: text.encode("utf-8") for path, text in folder["files"].items()}
    return ServedSkill(
        name=folder["name"],
        procedure_id=record["id"],
        version=int(record["version"]),
        description=folder["description"],
        files=files,
        file_digests={path: sha256_digest(data) for path, data in files.items()},
        skill_md_digest=sha256_digest(files[SKILL_FILE]),
        has_scripts=len(files) > 1,
    )


def skills_for(served: ServedSet) -> SkillSet:
    """The skills of `served` (a set as releases.served_for(...).for_role(...) gives it), built once
    per set and process and kept with it: they go when the set goes (a change, an erasure)."""
    built = served.skills
    if built is None:
        built = SkillSet(skills={})
        for record in served.procedures:
            skill = skill_from_record(record)
            built.skills[skill.name] = skill
        served.skills = built  # two threads may both build it: the same bytes either way
    return built
