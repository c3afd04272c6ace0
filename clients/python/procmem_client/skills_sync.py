"""`procmem skills sync DIR`: the agent's served skills written where skills-aware agents load them
(`.agents/skills/`, `.claude/skills/`, or any folder), with a lock file of what procmem wrote.

    procmem skills sync .claude/skills                 # write, update and remove procmem's skills
    procmem skills sync .claude/skills --check         # CI: exit 1 when the folder differs

The server comes from --url/--agent/--token or PROCMEM_URL, PROCMEM_AGENT, PROCMEM_TOKEN (a read
token), with --environment and --role as for `procmem check`. What is served is the discovery index
(/.well-known/agent-skills/index.json): each skill's name, version and the digest of every file.
The files are rendered here from the agent's active set (one request: the same renderer as the
server's, procmem_client.skill_rendering) and written only when each file's SHA-256 is the digest
the index names; a skill that does not match (another version of the renderer, a set that changed
between the two requests) is fetched from its own URL and checked against its digest instead.

Ownership. `DIR/procmem-skills.lock.json` lists the skills procmem wrote, with their procedure id,
version and file digests (sorted, no time stamps: it changes exactly when the folder does), and
`indexUrl`, the versioned index the sync read (`/.well-known/agent-skills/sets/<etag>/index.json`,
relative to the server's address, from the index's Content-Location): a later GET of it answers 404
once the agent is served another set. lockVersion 1 readers read `skills` only, so the field needs
no new lock version; `--check` compares the folder, not this URL. Sync
writes, replaces and removes only folders named in it; a folder of the same name that procmem did
not write, or one of its folders holding a file procmem did not write, is left alone and reported
(exit 1). A skill procmem no longer serves is removed. Each folder is written next to its place and
renamed into it, so an agent never loads half a skill.

Exit codes: 0 in sync (or synced), 1 a difference (--check) or a folder left alone, 2 sync could not
run (arguments, the server).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from .agent_checks import address_problem
from .skill_rendering import FILE_MODES, render_skill
from .skills import is_skill_name

LOCK_FILE = "procmem-skills.lock.json"
INDEX_PATH = "/.well-known/agent-skills/index.json"
DISCOVERY_SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
MAX_ARCHIVE_BYTES = 5 * 1024 * 1024  # a served skill is a SKILL.md and a script: far below this
EXIT_OK, EXIT_DIFFERS, EXIT_ERROR = 0, 1, 2


class SyncError(Exception):
    """Sync cannot run: the message says why (arguments, the server, the lock file)."""


@dataclass
class Served:
    """One index entry: the skill procmem serves under `name`."""

    name: str
    procedure_id: str
    version: int
    digest: str
    files: dict[str, str]  # path -> "sha256:…"
    url: str  # absolute

    def lock_entry(self) -> dict[str, Any]:
        return {"id": self.procedure_id, "version": self.version, "digest": self.digest, "files": dict(self.files)}


@dataclass
class Report:
    lines: list[str] = field(default_factory=list)
    differs: bool = False

    def say(self, word: str, text: str, *, bad: bool = False) -> None:
        self.lines.append(f"{word:<9} {text}")
        self.differs = self.differs or bad


# ------------------------------------------------------------------------------------------- the server


def _get(url: str, token: str, timeout: float) -> bytes:
    return _get_with_headers(url, token, timeout)[0]


def _get_with_headers(url: str, token: str, timeout: float) -> tuple[bytes, Mapping[str, str]]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read(), response.headers
    except urllib.error.HTTPError as exc:
        body = exc.read()[:500].decode("utf-8", "replace")
        try:
            body = json.loads(body)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            pass
        raise SyncError(f"GET {url} answered {exc.code}: {body}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise SyncError(f"GET {url} failed: {exc}") from None


def _safe_path(path: Any) -> bool:
    if not isinstance(path, str) or not path or "\\" in path:
        return False
    parts = PurePosixPath(path).parts
    return not PurePosixPath(path).is_absolute() and all(p not in ("", ".", "..") for p in parts)


def read_index(data: Any, *, index_url: str) -> list[Served]:
    """The index's entries, checked: every name a valid skill name, every file path relative and
    inside its folder, every digest `sha256:` and 64 hex digits."""
    if (
        not isinstance(data, dict)
        or data.get("$schema") != DISCOVERY_SCHEMA
        or not isinstance(data.get("skills"), list)
    ):
        raise SyncError(f"{index_url}: not an Agent Skills discovery index ({DISCOVERY_SCHEMA})")
    served: list[Served] = []
    for position, entry in enumerate(data["skills"]):
        where = f"{index_url}: skills[{position}]"
        if not isinstance(entry, dict) or not is_skill_name(str(entry.get("name", ""))):
            raise SyncError(f"{where}: no valid skill name")
        files = entry.get("procmemFiles")
        if not isinstance(files, dict) or "SKILL.md" not in files or not all(map(_safe_path, files)):
            raise SyncError(f"{where} ({entry['name']}): no procmemFiles with a SKILL.md, or a path outside the folder")
        digests = [entry.get("digest"), *files.values()]
        if not all(isinstance(d, str) and len(d) == 71 and d.startswith("sha256:") for d in digests):
            raise SyncError(f"{where} ({entry['name']}): a digest is not sha256:<64 hex digits>")
        served.append(
            Served(
                name=entry["name"],
                procedure_id=str(entry.get("procmemId", "")),
                version=int(entry.get("procmemVersion") or 0),
                digest=entry["digest"],
                files=dict(sorted(files.items())),
                url=urllib.parse.urljoin(index_url, str(entry.get("url", ""))),
            )
        )
    return served


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _unpacked(archive: bytes, skill: Served) -> dict[str, bytes]:
    """The files of a fetched .tar.gz: regular files at safe paths only, within a size bound."""
    files: dict[str, bytes] = {}
    total = 0
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for member in tar:
            if not member.isfile() or not _safe_path(member.name):
                raise SyncError(f"{skill.url}: the archive holds {member.name!r}, not a plain file in the folder")
            total += member.size
            if total > MAX_ARCHIVE_BYTES:
                raise SyncError(f"{skill.url}: the archive unpacks to more than {MAX_ARCHIVE_BYTES} bytes")
            files[member.name] = tar.extractfile(member).read()  # type: ignore[union-attr]
    return files


def _fetched(skill: Served, token: str, timeout: float) -> dict[str, bytes]:
    """The skill's files from its own URL, checked against the index's digests."""
    body = _get(skill.url, token, timeout)
    if _digest(body) != skill.digest:
        raise SyncError(f"{skill.url}: the bytes do not match the index's digest {skill.digest}")
    if len(body) > MAX_ARCHIVE_BYTES:
        raise SyncError(f"{skill.url}: larger than {MAX_ARCHIVE_BYTES} bytes")
    files = {"SKILL.md": body} if set(skill.files) == {"SKILL.md"} else _unpacked(body, skill)
    if {path: _digest(data) for path, data in files.items()} != skill.files:
        raise SyncError(f"{skill.url}: its files do not match the index's procmemFiles")
    return files


def served_files(
    skills: list[Served], *, records: list[Mapping[str, Any]], token: str, timeout: float
) -> dict[str, dict[str, bytes]]:
    """name -> path -> bytes for `skills`: rendered from `records` (the active set) where every
    file's digest is the index's, fetched from the skill's URL otherwise."""
    by_version = {(str(r.get("id")), r.get("version")): r for r in records}
    out: dict[str, dict[str, bytes]] = {}
    for skill in skills:
        record = by_version.get((skill.procedure_id, skill.version))
        files: dict[str, bytes] | None = None
        if record is not None:
            rendered = {path: text.encode("utf-8") for path, text in render_skill(record)["files"].items()}
            if {path: _digest(data) for path, data in rendered.items()} == skill.files:
                files = rendered
        out[skill.name] = files if files is not None else _fetched(skill, token, timeout)
    return out


# ------------------------------------------------------------------------------------------- the folder


def read_lock(directory: Path) -> dict[str, dict[str, Any]]:
    return _read_lock_file(directory)[0]


def _read_lock_file(directory: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    """The lock's skills and the versioned index it names (None: a lock written before the field,
    or from a server that names none). Other top-level fields are ignored, as lockVersion 1 readers do."""
    path = directory / LOCK_FILE
    if not path.exists():
        return {}, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        skills = data["skills"]
        if not isinstance(skills, dict) or not all(is_skill_name(n) and isinstance(e, dict) for n, e in skills.items()):
            raise ValueError("skills must map skill names to entries")
        for entry in skills.values():
            if not isinstance(entry.get("files"), dict) or not all(map(_safe_path, entry["files"])):
                raise ValueError("each entry needs its files, at paths inside its folder")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SyncError(f"{path}: not a lock file procmem can read ({exc}); move it away to start afresh") from None
    index_url = data.get("indexUrl")
    return skills, index_url if isinstance(index_url, str) else None


def _on_disk(folder: Path) -> dict[str, str] | None:
    """path -> digest of every file under `folder`; None when it is not a plain folder (a symlink,
    a file) or holds anything but plain files and folders."""
    if folder.is_symlink() or not folder.is_dir():
        return None
    found: dict[str, str] = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            if path.is_symlink() or not (path.is_dir() or path.is_file()):
                return None
        for name in files:
            path = Path(root) / name
            found[path.relative_to(folder).as_posix()] = _digest(path.read_bytes())
    return found


def _write_folder(directory: Path, name: str, files: Mapping[str, bytes], *, replace: bool) -> None:
    """`directory/name` becomes exactly `files`: written beside it, then renamed into place (`replace`:
    a folder of procmem's is there already). Plain os calls: this runs once per skill."""
    base = os.fspath(directory)
    staging = os.path.join(base, f".{name}.procmem-new")
    if os.path.lexists(staging):  # left by a sync that was stopped
        shutil.rmtree(staging)
    os.mkdir(staging)
    for path, data in files.items():
        target = os.path.join(staging, path)
        parent = os.path.dirname(target)
        if parent != staging:
            os.makedirs(parent, exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(data)
        os.chmod(target, FILE_MODES.get(path, 0o644))
    final = os.path.join(base, name)
    if replace:
        retired = os.path.join(base, f".{name}.procmem-old")
        if os.path.lexists(retired):
            shutil.rmtree(retired)
        os.rename(final, retired)
        os.rename(staging, final)
        shutil.rmtree(retired)
    else:
        os.rename(staging, final)


def _write_lock(directory: Path, skills: Mapping[str, dict[str, Any]], index_url: str | None = None) -> None:
    """The lock: one line per skill (sorted, stable), so a change reads as a one-line diff; the
    versioned index the skills came from, when the server named one."""
    entries = ",\n".join(
        f"    {json.dumps(name)}: {json.dumps(entry, sort_keys=True, ensure_ascii=False)}"
        for name, entry in sorted(skills.items())
    )
    pinned = f'  "indexUrl": {json.dumps(index_url, ensure_ascii=False)},\n' if index_url else ""
    body = (
        '{\n  "generatedBy": "procmem skills sync",\n'
        + pinned
        + '  "lockVersion": 1,\n  "skills": {'
        + (f"\n{entries}\n  " if entries else "")
        + "}\n}\n"
    )
    staging = directory / f".{LOCK_FILE}.new"
    staging.write_text(body, encoding="utf-8")
    os.replace(staging, directory / LOCK_FILE)


def plan_and_apply(
    directory: Path,
    served: list[Served],
    *,
    files_for: Any,
    check: bool,
    index_url: str | None = None,
) -> Report:
    """Compares `directory` with `served` and, unless `check`, makes it so. `files_for(skills)` gives
    the files of the skills to write (called once, only with those that need writing); `index_url`
    is the versioned index `served` was read from, recorded in the lock (not compared by `check`:
    the folder is what CI checks, and a lock written before the field must not fail it)."""
    report = Report()
    lock, locked_index = _read_lock_file(directory) if directory.exists() else ({}, None)
    kept: dict[str, dict[str, Any]] = {}
    to_write: list[Served] = []
    present = set(os.listdir(directory)) if directory.is_dir() else set()  # one listing, not a stat per skill
    for skill in served:
        folder = directory / skill.name
        owned = lock.get(skill.name)
        there = skill.name in present
        disk = _on_disk(folder) if there else {}
        if owned is None and there:
            report.say("LEFT", f"{skill.name}: {folder} exists and procmem did not write it; not touched", bad=True)
            continue
        if disk is None or (owned is not None and set(disk) - set(owned["files"])):
            report.say("LEFT", f"{skill.name}: {folder} holds files procmem did not write; not touched", bad=True)
            if owned is not None:
                kept[skill.name] = owned
            continue
        if owned is not None and owned.get("digest") == skill.digest and disk == skill.files:
            kept[skill.name] = owned
            report.say("OK", f"{skill.name} v{skill.version}")
            continue
        if owned is None:
            why = "new"
        elif owned.get("digest") != skill.digest:
            why = f"v{owned.get('version')} -> v{skill.version}"
        else:
            why = "changed on disk since procmem wrote it"
        report.say("WRITE" if not check else "DIFFERS", f"{skill.name} v{skill.version}: {why}", bad=check)
        to_write.append(skill)
    names = {skill.name for skill in served}
    to_remove: list[str] = []
    for name, owned in sorted(lock.items()):
        if name in names:
            continue
        folder = directory / name
        disk = _on_disk(folder) if name in present else {}
        if disk is None or set(disk) - set(owned.get("files", {})):
            report.say("LEFT", f"{name}: no longer served, but {folder} holds files procmem did not write", bad=True)
            kept[name] = owned
            continue
        report.say("REMOVE" if not check else "DIFFERS", f"{name}: no longer served", bad=check)
        to_remove.append(name)
    if check:
        if not (directory / LOCK_FILE).exists() and served:
            report.say("DIFFERS", f"{directory / LOCK_FILE} is missing", bad=True)
        return report
    if to_write or to_remove or kept != lock or locked_index != index_url or not (directory / LOCK_FILE).exists():
        directory.mkdir(parents=True, exist_ok=True)
        contents = files_for(to_write) if to_write else {}
        for skill in to_write:
            _write_folder(directory, skill.name, contents[skill.name], replace=skill.name in present)
            kept[skill.name] = skill.lock_entry()
        for name in to_remove:
            if name in present:
                shutil.rmtree(directory / name)
        _write_lock(directory, kept, index_url)
    return report


# ------------------------------------------------------------------------------------------ the command


def add_parser(commands: Any) -> None:
    skills = commands.add_parser("skills", help="the agent's served skills as Agent Skills folders")
    # the metavar names the commands in "the following arguments are required: …" (was: skills_command)
    actions = skills.add_subparsers(dest="skills_command", required=True, metavar="{sync}")
    sync = actions.add_parser(
        "sync",
        help="write the agent's served skills into DIR (.agents/skills, .claude/skills, ...)",
        description="Writes the skills procmem serves the agent into DIR with a lock file, removes those it no "
        "longer serves, and never touches a folder it did not write. Exit 0: in sync; 1: differs (--check) or "
        "a folder was left alone; 2: sync could not run.",
    )
    sync.add_argument("directory", type=Path, metavar="DIR", help="the skills folder, e.g. .claude/skills")
    sync.add_argument("--check", action="store_true", help="change nothing; exit 1 when DIR differs")
    sync.add_argument("--url", help="procmem's address (default: PROCMEM_URL)")
    sync.add_argument("--agent", help="the agent (default: PROCMEM_AGENT)")
    sync.add_argument("--token", help="a read token (default: PROCMEM_TOKEN)")
    sync.add_argument("--environment", help="the agent's environment (default production)")
    sync.add_argument("--role", help="the agent instance's role")
    sync.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")


def sync(
    directory: Path,
    *,
    url: str,
    token: str,
    agent: str | None = None,
    environment: str | None = None,
    role: str | None = None,
    check: bool = False,
    timeout: float = 60.0,
) -> Report:
    """Sync (or with `check`, compare) `directory` with the agent's served skills."""
    if not url and not token:
        raise SyncError("skills sync needs --url and --token (or PROCMEM_URL, PROCMEM_TOKEN)")
    if not url or not token:  # name the one missing, as `procmem check` does
        raise SyncError(
            "skills sync needs --url (or PROCMEM_URL)"
            if not url
            else "skills sync needs --token (or PROCMEM_TOKEN): a read token"
        )
    problem = address_problem(url)
    if problem:
        raise SyncError(problem)
    base = url.rstrip("/")
    query = urllib.parse.urlencode({k: v for k, v in (("environment", environment), ("role", role)) if v})
    index_url = f"{base}{INDEX_PATH}" + (f"?{query}" if query else "")
    body, headers = _get_with_headers(index_url, token, timeout)
    try:
        data = json.loads(body)
    except ValueError:
        raise SyncError(f"{index_url}: the answer is not JSON") from None
    served = read_index(data, index_url=index_url)

    def files_for(skills: list[Served]) -> dict[str, dict[str, bytes]]:
        records: list[Mapping[str, Any]] = []
        if agent:  # one request for every skill; without the agent's name each skill is fetched on its own
            set_url = f"{base}/api/v1/agents/{urllib.parse.quote(agent, safe='')}/procedures" + (
                f"?{query}" if query else ""
            )
            try:
                answer = json.loads(_get(set_url, token, timeout))
            except ValueError:
                raise SyncError(f"{set_url}: the answer is not JSON") from None
            records = answer.get("procedures") or [] if isinstance(answer, dict) else []
        return served_files(skills, records=records, token=token, timeout=timeout)

    return plan_and_apply(
        directory, served, files_for=files_for, check=check, index_url=pinned_index_url(index_url, headers, base=base)
    )


def pinned_index_url(index_url: str, headers: Mapping[str, str], *, base: str) -> str | None:
    """The versioned index the index names in its Content-Location (`sets/<etag>/index.json`,
    relative to the index), as the lock records it: relative to the server's address `base`, so the
    lock reads the same whichever address of the server a sync used. None from a server that names
    none (before versioned indexes)."""
    location = headers.get("Content-Location")
    if not location:
        return None
    pinned = urllib.parse.urljoin(index_url, location)
    return pinned[len(base) :] if pinned.startswith(base + "/") else pinned


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        report = sync(
            args.directory,
            url=args.url or os.environ.get("PROCMEM_URL", ""),
            token=args.token or os.environ.get("PROCMEM_TOKEN", ""),
            agent=args.agent or os.environ.get("PROCMEM_AGENT") or None,
            environment=args.environment,
            role=args.role,
            check=args.check,
            timeout=args.timeout,
        )
    except SyncError as exc:
        err.write(f"procmem skills sync: error: {exc}\n")
        return EXIT_ERROR
    for line in report.lines:
        out.write(line + "\n")
    verdict = "differs" if report.differs and args.check else ("left folders alone" if report.differs else "in sync")
    out.write(f"procmem skills sync: {args.directory}: {verdict}\n")
    return EXIT_DIFFERS if report.differs else EXIT_OK
