"""Reading skills out of what people hand in: a folder of skill folders (a git checkout too), one
skill folder, or a `.zip`/`.skill` archive. Pure Python, no Django; nothing is extracted to disk.

Each `SKILL.md` found is one skill; its folder is the skill's folder and the other files in it are
listed (path, size, sha256), never read into the library. The limits below bound what an archive
may make us read or hold. A structural fault of an archive (a path that climbs out with `..`, an
absolute path, a symbolic link, an encrypted member, a member compressed more than
`MAX_RATIO` to 1, more members than `MAX_FILES`, more than `MAX_TOTAL_BYTES` unpacked, a file over
`MAX_FILE_BYTES`) refuses the whole archive with the member and the reason: a hostile archive is not
trusted in part. In a folder, a symbolic link or an oversize file refuses only the skill whose folder
holds it, and the others go on.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

SKILL_FILE = "SKILL.md"
MAX_ARCHIVE_BYTES = 20 * 1024 * 1024  # the archive file itself (an upload's size)
MAX_FILES = 2000  # members of an archive, files under a folder
MAX_SKILLS = 500
MAX_SKILL_MD_BYTES = 256 * 1024  # the spec asks for a SKILL.md under 500 lines; this is far above
MAX_FILE_BYTES = 10 * 1024 * 1024  # any one file of a skill, unpacked
MAX_TOTAL_BYTES = 100 * 1024 * 1024  # everything an archive unpacks to
MAX_RATIO = 100  # unpacked / packed size of one member (of members over RATIO_FROM_BYTES)
RATIO_FROM_BYTES = 64 * 1024
SKIPPED_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__"}


class SourceError(Exception):
    """The whole source is refused: `where` names the path or archive member, `message` why."""

    def __init__(self, where: str, message: str):
        self.where, self.message = where, message
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class ListedFile:
    path: str  # relative to the skill's folder
    bytes: int
    sha256: str


@dataclass
class FoundSkill:
    """One SKILL.md and its folder. `text` is None when `problem` says why the skill cannot be read."""

    path: str  # where it was found, for reports: "<source>/<folder>/SKILL.md"
    folder: str  # the folder's name (the skill's name must equal it)
    text: str | None = None
    sha256: str = ""  # of the SKILL.md bytes
    files: list[ListedFile] = field(default_factory=list)
    problem: str = ""
    problem_field: str = "(file)"


@dataclass
class Source:
    label: str  # what the reports call it: the path given, or the upload's name
    skills: list[FoundSkill] = field(default_factory=list)
    git_commit: str = ""  # the checkout's HEAD, when the folder is a git checkout


def read_source(path: Path) -> Source:
    """The skills under `path`: a folder (searched for SKILL.md files, skipping .git and the like)
    or a .zip/.skill archive. Raises SourceError when the whole source is refused."""
    path = Path(path)
    if path.is_symlink():
        raise SourceError(str(path), "is a symbolic link; give the folder or archive itself")
    if path.is_dir():
        return _read_folder(path)
    if path.is_file():
        if path.name == SKILL_FILE:
            return _read_folder(path.parent, only=path)
        size = path.stat().st_size
        if size > MAX_ARCHIVE_BYTES:
            raise SourceError(str(path), f"is {size:,} bytes; an archive may have at most {MAX_ARCHIVE_BYTES:,}")
        with path.open("rb") as handle:
            return read_archive(handle, label=str(path))
    raise SourceError(str(path), "does not exist")


# ---------------------------------------------------------------------------------------------- archives


def _member_problem(info: zipfile.ZipInfo) -> str:
    name = info.filename
    if "\x00" in name:
        return "has a NUL character in its name"
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "is an absolute path; members must be relative to the archive"
    parts = name.replace("\\", "/").split("/")
    if ".." in parts:
        return "climbs out of the archive with '..' (path traversal)"
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "is a symbolic link; skills are read without following links"
    if info.flag_bits & 0x1:
        return "is encrypted"
    if not info.is_dir() and info.file_size > MAX_FILE_BYTES:
        return f"unpacks to {info.file_size:,} bytes; a file may have at most {MAX_FILE_BYTES:,}"
    if info.file_size > RATIO_FROM_BYTES and info.compress_size > 0 and info.file_size / info.compress_size > MAX_RATIO:
        return (
            f"is compressed {info.file_size / info.compress_size:,.0f} to 1 "
            f"({info.compress_size:,} → {info.file_size:,} bytes); at most {MAX_RATIO} to 1 is read (a zip bomb?)"
        )
    if info.file_size > RATIO_FROM_BYTES and info.compress_size == 0:
        return "claims to unpack from nothing (a zip bomb?)"
    return ""


def read_archive(handle: IO[bytes], *, label: str) -> Source:
    """The skills in a zip archive (`.zip` or `.skill`), read in memory within the module's limits."""
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise SourceError(label, f"is not a zip archive ({exc})") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_FILES:
            raise SourceError(label, f"has {len(infos):,} members; at most {MAX_FILES:,} are read")
        total, seen = 0, set()
        for info in infos:
            problem = _member_problem(info)
            if problem:
                raise SourceError(f"{label}: {info.filename}", problem)
            normalised = info.filename.replace("\\", "/").strip("/")
            if normalised in seen:
                raise SourceError(f"{label}: {info.filename}", "appears twice in the archive")
            seen.add(normalised)
            total += info.file_size
            if total > MAX_TOTAL_BYTES:
                raise SourceError(label, f"unpacks to more than {MAX_TOTAL_BYTES:,} bytes; refused before reading")
        files = [i for i in infos if not i.is_dir()]
        skill_infos = [i for i in files if PurePosixPath(i.filename.replace("\\", "/")).name == SKILL_FILE]
        if not skill_infos:
            raise SourceError(label, f"holds no {SKILL_FILE}")
        if len(skill_infos) > MAX_SKILLS:
            raise SourceError(label, f"holds {len(skill_infos):,} skills; at most {MAX_SKILLS} are imported at once")
        stem = PurePosixPath(label.replace("\\", "/")).stem
        source = Source(label=label)
        folders = sorted(str(PurePosixPath(i.filename.replace("\\", "/")).parent) for i in skill_infos)
        for info in sorted(skill_infos, key=lambda i: i.filename):
            member = PurePosixPath(info.filename.replace("\\", "/"))
            folder = str(member.parent)
            found = FoundSkill(path=f"{label}: {info.filename}", folder=member.parent.name if folder != "." else stem)
            if info.file_size > MAX_SKILL_MD_BYTES:
                found.problem = f"is {info.file_size:,} bytes; a SKILL.md may have at most {MAX_SKILL_MD_BYTES:,}"
            else:
                data = _read_member(archive, info, MAX_SKILL_MD_BYTES)
                _set_text(found, data)
            found.files = [
                ListedFile(
                    path=rel,
                    bytes=i.file_size,
                    sha256=hashlib.sha256(_read_member(archive, i, MAX_FILE_BYTES)).hexdigest(),
                )
                for i in files
                if i is not info
                and (rel := _relative(i.filename, folder)) is not None
                and _owner(i.filename, folders) == folder
            ]
            source.skills.append(found)
        return source


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """At most `limit` bytes of a member: the header's size was checked, and the read is bounded
    again in case the header lies."""
    with archive.open(info) as member:
        data = member.read(limit + 1)
    if len(data) > limit:
        raise SourceError(info.filename, f"unpacks to more than {limit:,} bytes")
    return data


def _relative(name: str, folder: str) -> str | None:
    path = PurePosixPath(name.replace("\\", "/"))
    if folder == ".":
        return str(path)
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return None


def _owner(name: str, folders: list[str]) -> str:
    """The innermost skill folder holding the file ("." for the archive's root)."""
    path = name.replace("\\", "/")
    inside = [f for f in folders if f == "." or path.startswith(f + "/")]
    return max(inside, key=len) if inside else ""


def _set_text(found: FoundSkill, data: bytes) -> None:
    found.sha256 = hashlib.sha256(data).hexdigest()
    try:
        found.text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        found.problem = f"is not UTF-8 text ({exc.reason} at byte {exc.start})"


# ---------------------------------------------------------------------------------------------- folders


def _read_folder(root: Path, only: Path | None = None) -> Source:
    source = Source(label=str(only or root), git_commit=_git_commit(root))
    skill_paths: list[Path] = []
    count = 0
    if only is not None:
        skill_paths = [only]
    else:
        for directory, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
            count += len(filenames)
            if count > MAX_FILES * 10:
                raise SourceError(str(root), f"holds more than {MAX_FILES * 10:,} files; point at the skills folder")
            if SKILL_FILE in filenames:
                skill_paths.append(Path(directory) / SKILL_FILE)
    if not skill_paths:
        raise SourceError(str(root), f"holds no {SKILL_FILE}")
    if len(skill_paths) > MAX_SKILLS:
        raise SourceError(str(root), f"holds {len(skill_paths):,} skills; at most {MAX_SKILLS} are imported at once")
    folders = {p.parent for p in skill_paths}
    for skill_path in sorted(skill_paths):
        source.skills.append(_read_skill_folder(skill_path, folders))
    return source


def _read_skill_folder(skill_path: Path, folders: set[Path]) -> FoundSkill:
    folder = skill_path.parent
    found = FoundSkill(path=str(skill_path), folder=folder.resolve().name)
    try:
        listed: list[ListedFile] = []
        total = 0
        for directory, dirnames, filenames in os.walk(folder, followlinks=False):
            here = Path(directory)
            if here != folder and here in folders:
                dirnames[:] = []  # another skill's folder
                continue
            for name in [*dirnames, *filenames]:
                if (here / name).is_symlink():
                    found.problem_field = str((here / name).relative_to(folder))
                    found.problem = "is a symbolic link; skills are read without following links"
                    return found
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
            for name in sorted(filenames):
                file = here / name
                size = file.stat().st_size
                relative = str(file.relative_to(folder))
                limit = MAX_SKILL_MD_BYTES if file == skill_path else MAX_FILE_BYTES
                if size > limit:
                    found.problem_field = relative
                    found.problem = f"is {size:,} bytes; at most {limit:,} are read"
                    return found
                total += size
                if len(listed) >= MAX_FILES or total > MAX_TOTAL_BYTES:
                    found.problem = (
                        f"the skill's folder holds more than {MAX_FILES:,} files or {MAX_TOTAL_BYTES:,} bytes"
                    )
                    return found
                if file != skill_path:
                    listed.append(ListedFile(relative, size, hashlib.sha256(file.read_bytes()).hexdigest()))
        found.files = listed
        _set_text(found, skill_path.read_bytes())
    except OSError as exc:
        found.problem = f"cannot be read: {exc.strerror or exc}"
    return found


def _git_commit(root: Path) -> str:
    """HEAD of the checkout `root` lies in, or "" (not a checkout, or git missing)."""
    try:
        result = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--verify", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    commit = result.stdout.strip()
    return commit if result.returncode == 0 and len(commit) in (40, 64) else ""
