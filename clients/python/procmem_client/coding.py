"""Coding procedures on the agent's side (pure Python, no Django): the roles of targets, the
producer → consumer graph, the exact retriever's coding terms and the recall pointer.

Roles. A path, module or test label gets a role and a placeholder by rules: ``django/contrib/auth/
validators.py`` → ``{{source_file}}`` (source), ``tests/auth_tests/test_validators.py`` →
``{{test_file}}``, ``auth_tests.test_validators`` → ``{{test_label}}``, ``reproduce.py`` →
``{{script}}``, ``setup.cfg`` → ``{{config_file}}``, ``docs/ref/forms.txt`` → ``{{doc_file}}``,
``django/forms`` → ``{{directory}}``. The server's activity classes (library/coding/activities.py)
use the same functions.

Graph. A coding procedure consumes the artefacts its preconditions name and produces those its
postconditions name; artefacts are the role placeholders. A procedure that produces an artefact
another consumes is linked to it (producer → consumer). Hubs — procedures linked to more than
`HUB_SHARE` (15 %) of the others — are cut (kept, without their links) so that one generic procedure
("edit a source file") does not connect everything; the rule applies from MIN_NODES_FOR_HUBS
procedures on, since in a graph of three every link is a third of the others. Selection uses the
links to pull a selected procedure's producer in (ranking.py); the agent's page draws them.

Exact terms. What a coding task and a coding procedure have in common are the targets and commands:
`query_terms` reads a prompt or tool calls (paths, modules, test labels, program names, each path
also as its role placeholder); `record_terms` reads a procedure's verify command, steps and
pre/postconditions the same way. The exact retriever counts the terms they share.

Area. A coding task rarely names a family's files, but it names their modules and identifiers: an
issue about ``autodoc_typehints`` or ``StrPrinter`` belongs where ``sphinx/ext/autodoc/typehints.py`` or
``sympy/printing/str.py`` are. `area_terms` reads the paths a coding procedure names (its appliesWhen,
pre- and postconditions) into words — each directory and file name, and its ``_`` pieces — and
`task_area_terms` reads a task's identifiers the same way (``_`` pieces and camelCase parts as well);
both compare by the light stemmer's stem cut to AREA_PREFIX letters ("matrix" meets ``matrices/``,
"Printer" meets ``printing/``). `AreaIndex` scores each coding procedure by the IDF mass, over the set's
coding procedures, of the area words the task shares with it: a word every family's paths carry (the
repository's name) counts little, one only ``autodoc``'s carry counts much. The ranker adds the score
to a coding procedure's total and lets a high enough one make it eligible (ranking.py).

Repositories. A library may hold several repositories' families at once. A mined family records its
repository (``evidence.repository``, ``owner/name``; `record_repository`). When a task names
the repository of some of the set's coding procedures — the repository's name is one of the pieces of
the task's identifiers (``from sympy import S``, "Django 3.2", ``sphinx-build``) — the area words of
the other repositories' procedures do not count for it: "set" in a Django issue is not the evidence
for ``sympy/sets/`` that it is in a sympy issue. Procedures that record no repository, and tasks that
name none, are scored as before; a set of one repository is scored exactly as before.

Recall pointer. `recall_pointer` is the short form of a coding procedure an agent keeps in view (its
id and version, one line on when to use it, its files, its verify command and the test files that
fill the command's placeholder for the next task): at most POINTER_MAX_TOKENS tokens by the renderer's
estimate (characters / 4, rounded up), guaranteed by cutting each part and dropping files from the end.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .terms import stem

_LABEL_RE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+$")

_DOC_EXT = {".txt", ".rst", ".md", ".html", ".adoc"}
_CONFIG_EXT = {".cfg", ".ini", ".toml", ".yaml", ".yml", ".json", ".lock", ".env"}
_CONFIG_NAMES = {
    "setup.py",
    "setup.cfg",
    "tox.ini",
    "pyproject.toml",
    "requirements.txt",
    "makefile",
    "package.json",
    "manifest.in",
    "conftest.py",
    ".gitignore",
    "dockerfile",
    ".flake8",
    "pytest.ini",
    "settings.py",
}
_FILE_EXTENSIONS = (
    ".py",
    ".pyi",
    ".txt",
    ".cfg",
    ".ini",
    ".toml",
    ".json",
    ".rst",
    ".md",
    ".sh",
    ".yaml",
    ".yml",
    ".html",
    ".js",
    ".css",
    ".po",
    ".mo",
    ".sql",
    ".log",
    ".out",
    ".diff",
    ".patch",
)


def is_label(path: str) -> bool:
    """A dotted module or test label (auth_tests.test_validators), not a file name (models.py)."""
    return "/" not in path and _LABEL_RE.match(path) is not None and not path.lower().endswith(_FILE_EXTENSIONS)


# Cached: the same files recur in the commands of a session and of an import (5,085 look-ups, 1,094
# paths in the 140 other-repository sessions); both are functions of the path alone.
@lru_cache(maxsize=8192)
def target_role(path: str) -> str:
    """The role of a path or label: test, config, docs, script, source or directory ('' if none)."""
    if not path:
        return ""
    name = path.rstrip("/").rsplit("/", 1)[-1].lower()
    parts = [p.lower() for p in path.strip("/").split("/")]
    if is_label(path):
        # a dotted label: tests name their modules *_tests / test_*; others are source modules
        return (
            "test"
            if any(part.startswith("test") or part.endswith("tests") for part in path.lower().split("."))
            else "source"
        )
    if name in _CONFIG_NAMES:
        return "config"
    ext = ("." + name.rsplit(".", 1)[-1]) if "." in name else ""
    if ext in (".py", ".sh") and (len(parts) == 1 or parts[0] in ("tmp", "reproduction", "scratch")):
        # a script in the working directory's root or /tmp: the agent's own, to try things out
        # (a project keeps its code and tests in packages; setup.py and conftest.py are config)
        return "script"
    if (
        any(p in ("tests", "test", "testing") or p.endswith("_tests") for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith(("_test.py", "_tests.py", "tests.py"))
    ):
        return "test"
    if ext in _DOC_EXT or parts[0] in ("docs", "doc"):
        return "docs"
    if ext in _CONFIG_EXT:
        return "config"
    if not ext:
        return "directory"
    return "source"


@lru_cache(maxsize=8192)
def generalise(path: str) -> tuple[str, str]:
    """(placeholder, role) of a target: django/contrib/auth/validators.py → ({{source_file}}, source)."""
    role = target_role(path)
    if not role:
        return "", ""
    label = is_label(path)
    if role == "test":
        return ("{{test_label}}" if label else "{{test_file}}"), role
    if role == "source" and label:
        return "{{module}}", role
    placeholder = {
        "source": "{{source_file}}",
        "config": "{{config_file}}",
        "docs": "{{doc_file}}",
        "script": "{{script}}",
        "directory": "{{directory}}",
    }[role]
    return placeholder, role


# ---------------------------------------------------------------------------------------------- graph

ARTEFACT_RE = re.compile(r"\{\{([a-z_]+)\}\}")
HUB_SHARE = 0.15
MIN_NODES_FOR_HUBS = 8


@dataclass(frozen=True)
class Node:
    key: str
    consumes: frozenset[str]
    produces: frozenset[str]


@dataclass(frozen=True)
class Edge:
    producer: str
    consumer: str
    artefacts: tuple[str, ...]


@dataclass
class Graph:
    nodes: list[Node]
    edges: list[Edge] = field(default_factory=list)
    hubs: list[str] = field(default_factory=list)  # cut: shown without links


def artefacts(texts: Iterable[str]) -> frozenset[str]:
    return frozenset(match for text in texts for match in ARTEFACT_RE.findall(text or ""))


def node_for(key: str, preconditions: Sequence[str], postconditions: Sequence[str]) -> Node:
    return Node(key, artefacts(preconditions), artefacts(postconditions))


def build_graph(nodes: Sequence[Node], *, hub_share: float = HUB_SHARE) -> Graph:
    nodes = sorted(nodes, key=lambda n: n.key)
    edges = [
        Edge(p.key, c.key, tuple(sorted(p.produces & c.consumes)))
        for p in nodes
        for c in nodes
        if p.key != c.key and p.produces & c.consumes
    ]
    hubs: list[str] = []
    if len(nodes) >= MIN_NODES_FOR_HUBS:
        neighbours: dict[str, set[str]] = {n.key: set() for n in nodes}
        for edge in edges:
            neighbours[edge.producer].add(edge.consumer)
            neighbours[edge.consumer].add(edge.producer)
        others = len(nodes) - 1
        hubs = [key for key, linked in neighbours.items() if len(linked) > hub_share * others]
        edges = [e for e in edges if e.producer not in hubs and e.consumer not in hubs]
    return Graph(nodes=nodes, edges=edges, hubs=hubs)


# ---------------------------------------------------------------------------------------------- exact terms

CODING_FIELDS = ("preconditions", "postconditions", "verifyCommand")
_TERM_RE = re.compile(r"\{\{[a-z_]+\}\}|[A-Za-z0-9_./\-]+")
# a bare test module of Django's runner ("forms_tests", "test_validators") names a test label
_TEST_MODULE_RE = re.compile(r"^(?:test_\w+|\w+_tests?)$")
_CWD = "testbed/"  # the working directory of SWE-bench containers


def is_coding(record: Mapping[str, Any]) -> bool:
    """A coding procedure: it carries a verify command or pre/postconditions."""
    return any(record.get(name) for name in CODING_FIELDS)


def _terms(text: str) -> set[str]:
    found: set[str] = set()
    for raw in _TERM_RE.findall(text or ""):
        if raw.startswith("{{"):
            found.add(raw)
            continue
        token = raw.strip(".-/")  # ./tests/runtests.py → tests/runtests.py
        if token.startswith(_CWD):
            token = token[len(_CWD) :]
        if len(token) < 3 or token.isdigit() or token.startswith("-"):
            continue
        lowered = token.lower()
        name = lowered.rsplit("/", 1)[-1]
        if "/" in token or "." in token:
            found.add(lowered)
            found.add(name)  # ./tests/runtests.py also as runtests.py
            if "/" in lowered and lowered.endswith(".py"):
                # django/db/models/query.py also as the module django.db.models.query
                found.add(lowered[: -len(".py")].replace("/", "."))
            placeholder, _role = generalise(token)
            if placeholder and ("." in name or is_label(token)):
                found.add(placeholder)
        elif _TEST_MODULE_RE.match(lowered):
            found.update((lowered, "{{test_label}}"))
    return found


def query_terms(text: str) -> set[str]:
    """The targets and commands a task or its tool calls name, lower-cased, each path or label also
    as its role placeholder: "cd /testbed && ./tests/runtests.py forms_tests" → tests/runtests.py,
    runtests.py, {{test_file}}, forms_tests, {{test_label}}."""
    return _terms(text)


def record_terms(record: Mapping[str, Any]) -> set[str]:
    """The same terms of a coding procedure: from its verify command, steps and pre/postconditions
    (placeholders as they are). Empty for a procedure that is not a coding one."""
    if not is_coding(record):
        return set()
    texts = [
        record.get("verifyCommand") or "",
        *(record.get("steps") or []),
        *(record.get("preconditions") or []),
        *(record.get("postconditions") or []),
    ]
    found: set[str] = set()
    for text in texts:
        found.update(_terms(text))
    return found


# ---------------------------------------------------------------------------------------------- area

AREA_PREFIX = 5  # letters of a stem compared: "matrix"/"matrices", "printer"/"printing", "permutation"/"permutations"
AREA_MIN_LETTERS = 2  # "py" of py:function and test_domain_py.py, "db" of django/db
# path parts that say where tests or packages live, not what a family is about
_AREA_GENERIC = frozenset({"test", "tests", "testing", "init", "src", "lib"})
_AREA_PATH_RE = re.compile(r"[\w.:-]*/[\w./:-]*")
_AREA_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL_PART_RE = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?=[A-Z][a-z]|$)")


def _area_key(piece: str) -> str | None:
    piece = piece.lower()
    if len(piece) < AREA_MIN_LETTERS or piece in _AREA_GENERIC or not piece.isascii() or piece.isdigit():
        return None
    return stem(piece)[:AREA_PREFIX]


def _pieces(name: str) -> set[str]:
    """An identifier's pieces: its ``_`` parts and camelCase parts; the whole name when it has no ``_``."""
    parts = {part for part in name.split("_") if part}
    for part in list(parts):
        parts.update(_CAMEL_PART_RE.findall(part))
    if "_" not in name.strip("_"):
        parts.add(name.strip("_"))
    return parts


def area_terms(record: Mapping[str, Any]) -> frozenset[str]:
    """The area words of a coding procedure: each directory and file name (without its extension) of
    the paths its appliesWhen, preconditions and postconditions name, with its ``_`` pieces, as keys
    (`task_area_terms`). Empty for a procedure that is not a coding one (customer-facing procedures
    are ranked as before)."""
    if not is_coding(record):
        return frozenset()
    texts = [
        str(record.get("appliesWhen") or ""),
        *(str(t) for t in record.get("preconditions") or []),
        *(str(t) for t in record.get("postconditions") or []),
    ]
    found: set[str] = set()
    for text in texts:
        for path in _AREA_PATH_RE.findall(text):
            for part in re.split(r"[/:]", path):
                name = part.split(".")[0]
                for piece in {name, *name.split("_")}:
                    key = _area_key(piece)
                    if key:
                        found.add(key)
    return frozenset(found)


def record_repository(record: Mapping[str, Any]) -> str:
    """The repository a coding procedure records (a mined family's ``evidence.repository``, the
    scalar API v2 keeps, else ``evidence.family.repository``; ``owner/name``), lower-cased; '' when it
    records none."""
    evidence = record.get("evidence")
    if not isinstance(evidence, Mapping):
        return ""
    repository = evidence.get("repository")
    if not isinstance(repository, str):
        family = evidence.get("family")
        repository = family.get("repository") if isinstance(family, Mapping) else None
    return repository.strip().lower() if isinstance(repository, str) else ""


def task_names(text: str) -> frozenset[str]:
    """The pieces of the identifiers a task writes, lower-cased and whole (``SymPy`` → sympy, sym, py):
    what a repository's name is looked up in."""
    return frozenset(
        piece.lower() for name in _AREA_IDENTIFIER_RE.findall(text or "") for piece in _pieces(name) if piece
    )


def task_area_terms(text: str) -> frozenset[str]:
    """The area words of a task: the pieces of each identifier it writes (``autodoc_typehints`` →
    autodoc, typehints; ``StrPrinter`` → str, printer; ``sympy/core/expr.py`` → sympy, core, expr), as
    keys: the light stemmer's stem, cut to AREA_PREFIX letters."""
    found: set[str] = set()
    for name in _AREA_IDENTIFIER_RE.findall(text or ""):
        for piece in _pieces(name):
            key = _area_key(piece)
            if key:
                found.add(key)
    return frozenset(found)


class AreaIndex:
    """The area words of a set's coding procedures with their IDF over those procedures,
    log(1 + n / df): `scores(task)` is, per procedure position, the summed IDF of the area words the
    task shares with it (positions without a shared word left out), among the procedures of the
    repositories the task names when it names any (`record_repository`; procedures that record no
    repository always count)."""

    def __init__(self, records: Sequence[Mapping[str, Any]]) -> None:
        terms = [area_terms(record) for record in records]
        repositories = [record_repository(record) if found else "" for record, found in zip(records, terms)]
        # the repository's name (owner/name → name) → its procedures' positions
        by_name: dict[str, set[int]] = defaultdict(set)
        for position, repository in enumerate(repositories):
            if repository:
                by_name[repository.rsplit("/", 1)[-1]].add(position)
        self.by_name = dict(by_name)
        self.recorded = frozenset(position for names in by_name.values() for position in names)
        coding_count = sum(1 for record in records if is_coding(record))
        df = Counter(term for found in terms for term in found)
        self.idf = {term: math.log(1 + coding_count / count) for term, count in df.items()}
        postings: dict[str, list[int]] = defaultdict(list)
        for position, found in enumerate(terms):
            for term in found:
                postings[term].append(position)
        self.postings = dict(postings)

    def named_repositories(self, task: str) -> frozenset[int]:
        """The positions of the procedures of the repositories the task names (empty when it names
        none of the set's)."""
        if not self.by_name:
            return frozenset()
        names = task_names(task)
        return frozenset(
            position for name, positions in self.by_name.items() if name in names for position in positions
        )

    def matched(self, task: str) -> dict[int, list[str]]:
        """Per procedure position, the task's area words it shares (sorted); when the task names a
        repository of the set, only its procedures' and those that record no repository."""
        named = self.named_repositories(task)
        excluded = self.recorded - named if named else frozenset()
        found: dict[int, list[str]] = defaultdict(list)
        for term in sorted(task_area_terms(task)):
            for position in self.postings.get(term, ()):
                if position not in excluded:
                    found[position].append(term)
        return dict(found)

    def scores(self, task: str) -> dict[int, float]:
        return {position: sum(self.idf[t] for t in terms) for position, terms in self.matched(task).items()}


# ---------------------------------------------------------------------------------------------- recall pointer

POINTER_MAX_TOKENS = 300
CHARS_PER_TOKEN = 4  # the renderer's estimate (rendering.estimate_tokens)
_WHEN_MAX_CHARS = 240
_VERIFY_MAX_CHARS = 400
_ID_MAX_CHARS = 120
_FILES_MAX = 8
_TESTS_MAX = 3
_FILE_MAX_CHARS = 60  # a long verify command and 8 long files can pass the bound: files are dropped from the end
_FILE_RE = re.compile(r"(?<![\w{./-])(?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,6}(?![\w/])")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s")


def _cut(text: str, limit: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _named_paths(record: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    verify = str(record.get("verifyCommand") or "")
    for text in [*(record.get("postconditions") or []), *(record.get("preconditions") or [])]:
        for path in _FILE_RE.findall(str(text or "")):
            path = path.rstrip(".")
            if path not in found and path not in verify:  # the verify command's script is shown with it
                found.append(path)
    return found


def pointer_files(record: Mapping[str, Any]) -> list[str]:
    """The files a coding procedure names in its postconditions (written, most edited first), then its
    preconditions (read first): concrete paths only, test files apart (`pointer_tests`; placeholders
    are not files; the verify command's own script is not a file of the work), at most _FILES_MAX."""
    return [path for path in _named_paths(record) if target_role(path) != "test"][:_FILES_MAX]


def pointer_tests(record: Mapping[str, Any]) -> list[str]:
    """The test files a coding procedure names (a family's test files, those that pair with its source
    files first): what fills its verify command's {{test_file}} for the next task; at most _TESTS_MAX."""
    return [path for path in _named_paths(record) if target_role(path) == "test"][:_TESTS_MAX]


def _pointer_text(ident: str, version: int, when: str, files: list[str], verify: str, tests: list[str]) -> str:
    text = f"Procedure {ident} v{version} — when: {when}"
    if files:
        text += f" — files: {', '.join(files)}"
    if verify:
        text += f" — verify: {verify}"
    if tests:
        text += f" — tests: {', '.join(tests)}"
    return text


def recall_pointer(record: Mapping[str, Any], *, task_files: Sequence[str] = ()) -> dict[str, Any]:
    """The short served form of a coding procedure: {id, version, whenToUse, verifyCommand, files,
    tests, text, tokens}. `whenToUse` is the first sentence of appliesWhen on one line (a family's
    names the family); `files` the source files its pre/postconditions name — after `task_files`, when
    given: source files the task's own words point to (library/coding/file_index.py), the same cap of
    _FILES_MAX in all — `tests` its test files
    (what fills the verify command's placeholder); `text` is what an agent keeps in view ("Procedure
    fix.django.db v2 — when: … — files: … — verify: … — tests: …"), at most POINTER_MAX_TOKENS tokens:
    each part is cut, then test files and files are dropped from the end until it fits (so the bound
    holds for any record)."""
    when = _SENTENCE_END_RE.split(" ".join(str(record.get("appliesWhen") or "").split()), maxsplit=1)[0]
    when = _cut(when, _WHEN_MAX_CHARS)
    verify = _cut(record.get("verifyCommand") or "", _VERIFY_MAX_CHARS)
    ident = _cut(record.get("id") or "", _ID_MAX_CHARS)
    version = int(record.get("version") or 0)
    named = [path for path in task_files if target_role(path) == "source"] + pointer_files(record)
    files = [_cut(path, _FILE_MAX_CHARS) for path in dict.fromkeys(named)][:_FILES_MAX]
    tests = [_cut(path, _FILE_MAX_CHARS) for path in pointer_tests(record)]
    text = _pointer_text(ident, version, when, files, verify, tests)
    while math.ceil(len(text) / CHARS_PER_TOKEN) > POINTER_MAX_TOKENS and (tests or files):
        if tests:
            tests.pop()
        else:
            files.pop()
        text = _pointer_text(ident, version, when, files, verify, tests)
    return {
        "id": record.get("id"),
        "version": record.get("version"),
        "whenToUse": when,
        "verifyCommand": verify,
        "files": files,
        "tests": tests,
        "text": text,
        "tokens": math.ceil(len(text) / CHARS_PER_TOKEN),
    }


# ---------------------------------------------------------------------------------------------- recall queries

_CALL_FIELDS = ("command", "cmd", "target", "path", "file_path", "file", "pattern", "tool", "name")


def tool_call_text(call: Any) -> str:
    """The targets and command of one tool call as text for a recall query: a shell line as it is;
    a mapping's command, target, path, file and tool name (also inside its `args`/`input`)."""
    if isinstance(call, str):
        return call
    if not isinstance(call, Mapping):
        return ""
    parts = [
        str(call[key])
        for key in _CALL_FIELDS
        if isinstance(call.get(key), (str, int)) and not isinstance(call.get(key), bool)
    ]
    for nested in ("args", "input", "arguments"):
        if isinstance(call.get(nested), Mapping):
            parts.append(tool_call_text(call[nested]))
    return " ".join(p for p in parts if p)


def recall_query(prompt: str, tool_calls: Sequence[Any] = ()) -> str:
    """The prompt, then one line per tool call with its targets and command."""
    lines = [prompt.strip()]
    lines.extend(text for text in (tool_call_text(call).strip() for call in tool_calls) if text)
    return "\n".join(line for line in lines if line)
