"""Coding procedures by task family, from resolved traces by rules (pure Python, no model, no Django).

A coding agent's procedure is not a tool order that resolved sessions follow more often than failed
ones (on real SWE-bench sessions the agent works the same way whatever the outcome). It is what a
rerun of the same kind of task can skip: reading the repository to find the files and the test
command. So a candidate is drawn per *task family* from resolved traces, and its value is measured
by what it would have saved (`measure`), not by an outcome contrast.

Family. A repository plus the area its edits touch: the directory of the trace's edited source
files (`target_role` == "source", the client's path rules), cut at AREA_DEPTH (2) components, one
more under a namespace directory (NAMESPACE_DIRS: ``django/contrib/admin``, not ``django/contrib``),
a leading ``src/`` or ``lib/`` not counted. A trace that edits several areas belongs to the one with
most of its edited source files (ties: the first in sorted order). An agent's admins override the
grouping with rules ``{"prefix": "django/db/migrations", "family": "django/db/migrations"}``: a file
under a rule's prefix (the longest wins) belongs to the rule's family. The repository is read from
the task key: SWE-bench's ``owner__name-123`` is ``owner/name``; other keys give the agent's one
repository ("").

Verify command. The last test-class command of a trace that exited 0 (library/coding/activities.py).
Its *form* is what stays the same across tasks: the runner with the working directory and the
interpreter resolved (``python3 tests/runtests.py``, ``./tests/runtests.py``, ``cd tests &&
./runtests.py`` are all ``tests/runtests.py``; ``python -m pytest`` is ``pytest``), then one
placeholder per kind of argument (``{{test_label}}``, ``{{test_file}}``); options are not part of
the form. The candidate's verify command is the form that passed last in most of its traces, shown
as the command most of those traces ran (labels as placeholders).

Candidate. A family with at least `min_traces` resolved traces that carry a verify command yields
one: the phases of the family's commonest skeleton as steps with their concrete targets, the files
read first (preconditions) and written (postconditions), the verify command, and recovery notes (in
the test step, after the verify command).

Recovery notes. A failed test invocation before the first passing one is corrected when the passing
one uses another runner (form) or other test modules: `python3 -m django.test tests/x.py` failed, then
`./tests/runtests.py x` passed. Runner corrections are counted over the repository's traces (the
runner belongs to the repository), test-module corrections over the family's; a correction seen in
at least `min_traces` traces becomes a note, with the number of traces it rests on.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from procmem_client.coding import target_role

from .activities import classify_command, split_command, strip_heredocs
from .procedures import PHASE_TEXT, coding_skeleton

AREA_DEPTH = 2
NAMESPACE_DIRS = frozenset({"contrib", "ext", "extensions", "plugins", "packages"})
ROOT_DIRS = frozenset({"src", "lib"})
FILES_READ_SHOWN = 3
FILES_WRITTEN_SHOWN = 4
TEST_MODULES_SHOWN = 3
TRACES_IN_EVIDENCE = 40
FIRST_READS_PER_TRACE = 3
DEFAULT_MIN_TRACES = 2

_SWEBENCH_KEY_RE = re.compile(r"^(?P<owner>[\w.-]+?)__(?P<name>[\w.-]+)-\d+$")
_DIFF_FILE_RE = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.M)
_INTERPRETER_RE = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)?)?$")
_ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = frozenset({"timeout", "time", "nice", "nohup", "env", "sudo", "command", "exec", "stdbuf"})
_OPTIONS_WITH_VALUE = frozenset(
    {
        "-k",
        "-m",
        "-p",
        "-n",
        "-c",
        "-o",
        "--settings",
        "--parallel",
        "--tag",
        "--exclude-tag",
        "--rootdir",
        "--verbosity",
        "-v",
    }
)
_CWD_PREFIXES = ("/testbed/", "/testbed")
_KEY_WORD_RE = re.compile(r"[^a-z0-9_]+")
_FAILURE_RE = re.compile(r"Error|No module|not found|cannot|No such")
_LEADING_PATH_RE = re.compile(r"^/\S+: ")


class Reason:
    """Why a family yielded nothing (the run report's status)."""

    NO_AREA = "no edited source file"
    NO_RESOLVED = "no resolved session"
    NO_VERIFY = "no verify command"
    BELOW = "below threshold"


# ---------------------------------------------------------------------------------------------- traces


@dataclass(frozen=True)
class TestRun:
    """One test invocation: its form, the command shown (labels as placeholders), the test modules it names."""

    form: str
    runner: str
    shown: str
    modules: tuple[str, ...]
    ok: bool | None
    failure: str = ""  # the first error line of a failed run's output ('' when not kept)


@dataclass
class Trace:
    """What the family miner reads of one session."""

    session_id: str
    task_key: str
    task: str
    resolved: bool | None
    calls: Sequence[Mapping[str, Any]]
    edited: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._tests: list[TestRun] | None = None

    @property
    def tests(self) -> list[TestRun]:
        if self._tests is None:
            self._tests = [run for run in (test_run_of(call) for call in self.calls) if run is not None]
        return self._tests

    @property
    def verify(self) -> TestRun | None:
        """The last test invocation that passed."""
        return next((run for run in reversed(self.tests) if run.ok is True), None)

    def failed_before_first_pass(self) -> tuple[list[TestRun], TestRun | None]:
        failed: list[TestRun] = []
        for run in self.tests:
            if run.ok is True:
                return failed, run
            if run.ok is False:
                failed.append(run)
        return failed, None


def edited_files(calls: Sequence[Mapping[str, Any]], patch: str = "") -> tuple[str, ...]:
    """The files a trace changed: from its final patch (``diff --git a/x b/x``, also kept as the submit
    call's ``files``), else from its edit calls' targets (the agent's own scripts left out)."""
    found: list[str] = []
    for match in _DIFF_FILE_RE.finditer(patch or ""):
        found.append(match.group(2))
    if not found:
        for call in calls:
            args = _args(call)
            if args.get("activity") == "submit" and isinstance(args.get("files"), list):
                found.extend(str(f) for f in args["files"] if isinstance(f, str))
    if not found:
        for call in calls:
            args = _args(call)
            if (
                args.get("activity") == "edit"
                and args.get("role") in ("source", "test", "config", "docs")
                and isinstance(args.get("path"), str)
            ):
                found.append(args["path"])
    return tuple(dict.fromkeys(found))


def _args(call: Mapping[str, Any]) -> Mapping[str, Any]:
    args = call.get("args")
    return args if isinstance(args, Mapping) else {}


def repository_of(task_key: str) -> str:
    """owner/name from a SWE-bench task key (django__django-11099 → django/django); '' otherwise."""
    match = _SWEBENCH_KEY_RE.match(task_key or "")
    return f"{match.group('owner')}/{match.group('name')}" if match else ""


# ---------------------------------------------------------------------------------------------- test runs


def _words(part: str) -> list[str]:
    try:
        return shlex.split(part, comments=True)
    except ValueError:  # an unclosed quote: words as written
        return part.split()


def _normal_path(path: str, cwd: str) -> str:
    for prefix in _CWD_PREFIXES:
        if path.startswith(prefix):
            path = path[len(prefix) :]
            break
    joined = (
        posixpath.normpath(posixpath.join(cwd, path)) if cwd and not path.startswith("/") else posixpath.normpath(path)
    )
    return joined.lstrip("./") if joined.startswith("./") else ("" if joined == "." else joined)


def _test_module(argument: str) -> str:
    """The test module a runner argument names: forms_tests.tests.Test → forms_tests,
    tests/forms_tests/test_x.py::T → forms_tests."""
    path = argument.split("::", 1)[0]
    if "/" in path or path.endswith(".py"):
        parts = [p for p in path.split("/") if p and p not in (".", "..")]
        if parts and parts[0] in ("tests", "test") and len(parts) > 1:
            return parts[1].removesuffix(".py")
        return parts[-1].removesuffix(".py") if parts else ""
    return path.split(".", 1)[0]


def test_run_of(call: Mapping[str, Any]) -> TestRun | None:
    """The test invocation of one stored call (activity "test" with a command), None otherwise."""
    args = _args(call)
    if args.get("activity") != "test" or not isinstance(args.get("command"), str):
        return None
    found = parse_test_command(args["command"])
    if found is None:
        return None
    form, runner, shown, modules = found
    ok = call.get("ok")
    failure = ""
    if ok is False and isinstance(args.get("output"), str):
        failure = next((line.strip() for line in args["output"].splitlines() if _FAILURE_RE.search(line)), "")
        # "/opt/…/bin/python3: No module named …": the message, not the interpreter's path
        failure = _LEADING_PATH_RE.sub("", failure)
        failure = failure if len(failure) <= 100 else failure[:99] + "…"
    return TestRun(form, runner, shown, modules, ok if isinstance(ok, bool) else None, failure)


def parse_test_command(command: str) -> tuple[str, str, str, tuple[str, ...]] | None:
    """(form, runner, command shown, test modules) of a test command; None when no part runs tests."""
    text, _bodies = strip_heredocs((command or "").replace("\\\n", " "))
    cwd = ""
    for part in split_command(text):
        words = _words(part)
        if not words:
            continue
        if words[0] == "cd" and len(words) > 1:
            cwd = _normal_path(words[1], cwd)
            continue
        if classify_command(part).activity != "test":
            continue
        index = 0
        while index < len(words) and (_ASSIGN_RE.match(words[index]) or words[index].rsplit("/", 1)[-1] in _WRAPPERS):
            index += 1
            while index < len(words) and (words[index].startswith("-") or words[index].rstrip("smhd").isdigit()):
                index += 1
        if index >= len(words):
            continue
        program = words[index]
        rest = words[index + 1 :]
        as_module = False
        if _INTERPRETER_RE.match(program.rsplit("/", 1)[-1]):
            if "-m" in rest:
                as_module = True
                at = rest.index("-m")
                module = rest[at + 1] if at + 1 < len(rest) else ""
                runner = "django test" if module == "django" else module
                rest = rest[at + 2 :]
                if rest[:1] == ["test"] and module == "django":
                    rest = rest[1:]
            else:
                script = next((w for w in rest if not w.startswith("-")), "")
                runner = _normal_path(script, cwd) if script else program
                rest = rest[rest.index(script) + 1 :] if script else []
        else:
            runner = _normal_path(program, cwd) if "/" in program else program
        if runner.endswith("manage.py") and rest[:1] == ["test"]:
            runner, rest = runner + " test", rest[1:]
        placeholders: list[str] = []
        shown_args: list[str] = []
        modules: list[str] = []
        skip = False
        for position, word in enumerate(rest):
            if skip:
                skip = False
                shown_args.append(word)
                continue
            if word.startswith("-"):
                following = rest[position + 1] if position + 1 < len(rest) else ""
                skip = (
                    "=" not in word
                    and word in _OPTIONS_WITH_VALUE
                    and (word not in ("-v", "--verbosity") or following.isdigit())
                )
                shown_args.append(word)
                continue
            placeholder = (
                "{{test_file}}" if ("/" in word or word.split("::", 1)[0].endswith(".py")) else "{{test_label}}"
            )
            if not placeholders or placeholders[-1] != placeholder:
                placeholders.append(placeholder)
            if not shown_args or shown_args[-1] != placeholder:
                shown_args.append(placeholder)
            module = _test_module(word)
            if module and module not in modules:
                modules.append(module)
        form = " ".join([runner, *dict.fromkeys(placeholders)])
        shown = " ".join([_shown_program(words[:index], program, runner, as_module), *shown_args])
        return form, runner, shown, tuple(modules)
    return None


def _shown_program(prefix: list[str], program: str, runner: str, as_module: bool) -> str:
    """The program as a command to copy: the interpreter kept, the runner from the repository's root
    (cd and /testbed dropped): python3 tests/runtests.py, ./tests/runtests.py, python -m pytest."""
    env = [w for w in prefix if _ASSIGN_RE.match(w) and not w.startswith("PYTHONPATH=$")]
    name = program.rsplit("/", 1)[-1]
    if _INTERPRETER_RE.match(name):
        return " ".join([*env, f"{name} -m" if as_module else name, runner])
    return " ".join([*env, runner if "/" not in runner else "./" + runner])


# ---------------------------------------------------------------------------------------------- families


@dataclass(frozen=True)
class FamilyRule:
    prefix: str
    family: str


def clean_family_rules(rules: Any) -> list[FamilyRule]:
    """The agent's override rules, checked: a list of {prefix, family} with non-empty relative paths."""
    if rules in (None, ""):
        return []
    if not isinstance(rules, list):
        raise ValueError(f'must be a list of {{"prefix": …, "family": …}}, got {type(rules).__name__}')
    cleaned = []
    for index, rule in enumerate(rules):
        if not isinstance(rule, Mapping):
            raise ValueError(f'[{index}] must be an object {{"prefix": …, "family": …}}')
        prefix = str(rule.get("prefix") or "").strip().strip("/")
        family = str(rule.get("family") or "").strip().strip("/")
        if not prefix or not family:
            raise ValueError(f"[{index}] needs a non-empty prefix and family")
        if (
            len(prefix) > 200
            or len(family) > 100
            or not re.fullmatch(r"[\w./-]+", prefix)
            or not re.fullmatch(r"[\w./-]+", family)
        ):
            raise ValueError(
                f"[{index}] prefix and family are paths of letters, digits, _ . / - (at most 200 and 100 characters)"
            )
        cleaned.append(FamilyRule(prefix, family))
    return cleaned


def area_of(path: str, rules: Sequence[FamilyRule] = ()) -> str:
    """The family area of one edited file: an override rule's family, else its directory cut at
    AREA_DEPTH (one more under a namespace directory)."""
    best = max(
        (r for r in rules if path == r.prefix or path.startswith(r.prefix + "/")),
        key=lambda r: len(r.prefix),
        default=None,
    )
    if best is not None:
        return best.family
    parts = path.strip("/").split("/")[:-1]  # the directories
    start = 1 if parts and parts[0] in ROOT_DIRS and len(parts) > 1 else 0
    depth = AREA_DEPTH + (1 if len(parts) > start + 1 and parts[start + 1] in NAMESPACE_DIRS else 0)
    return "/".join(parts[: start + depth]) or "(root)"


def family_of(trace: Trace, rules: Sequence[FamilyRule] = ()) -> str | None:
    """'repository:area' of a trace, None when it edited no source file."""
    areas = Counter(area_of(path, rules) for path in trace.edited if target_role(path) == "source")
    if not areas:
        return None
    area = sorted(areas.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    return f"{repository_of(trace.task_key)}:{area}"


def procedure_key_for(family: str) -> str:
    """fix.django.db for django/django:django/db; fix.<repo>.<area> when the area does not start with
    the repository's name."""
    repository, _, area = family.partition(":")
    name = repository.rsplit("/", 1)[-1]
    words = [w for w in (_KEY_WORD_RE.sub("_", p.lower()).strip("_") for p in area.split("/")) if w]
    if name and (not words or words[0] != _KEY_WORD_RE.sub("_", name.lower()).strip("_")):
        words.insert(0, _KEY_WORD_RE.sub("_", name.lower()).strip("_"))
    words = [w if w[0].isalpha() else "x" + w for w in words if w] or ["code"]
    return ("fix." + ".".join(words))[:120]


# ---------------------------------------------------------------------------------------------- recovery notes


@dataclass
class RecoveryNote:
    text: str
    kind: str  # "runner" or "module"
    failed: str  # the failed form or test module
    corrected: list[str]  # what passed instead
    traces: int
    sessions: list[str] = field(default_factory=list)
    failure: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "kind": self.kind,
            "failed": self.failed,
            "corrected": self.corrected,
            "traces": self.traces,
            "sessions": self.sessions[:10],
            "failure": self.failure,
        }


def corrections(trace: Trace) -> list[tuple[str, str, str, str]]:
    """(kind, what failed, what passed, first error line) for each failed test invocation before the
    first passing one that the passing one corrected: another runner, or other test modules."""
    failed, passed = trace.failed_before_first_pass()
    if passed is None:
        return []
    found = []
    for run in failed:
        if run.runner != passed.runner:
            found.append(("runner", run.shown, passed.shown, run.failure))
        elif run.modules and passed.modules and not set(run.modules) & set(passed.modules):
            for module in run.modules:
                found.append(("module", module, ", ".join(passed.modules), run.failure))
    return found


def recovery_notes(traces: Iterable[Trace], *, kind: str, min_traces: int) -> list[RecoveryNote]:
    """The corrections of `kind` seen in at least `min_traces` traces, most traces first."""
    by_failed: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"sessions": [], "corrected": Counter(), "failure": Counter()}
    )
    for trace in traces:
        seen: set[str] = set()
        for found_kind, failed, corrected, failure in corrections(trace):
            if found_kind != kind or failed in seen:
                continue
            seen.add(failed)
            entry = by_failed[failed]
            entry["sessions"].append(trace.session_id)
            entry["corrected"][corrected] += 1
            if failure:
                entry["failure"][failure] += 1
    notes = []
    for failed, entry in by_failed.items():
        count = len(entry["sessions"])
        if count < max(1, min_traces):
            continue
        corrected = [c for c, _ in sorted(entry["corrected"].items(), key=lambda kv: (-kv[1], kv[0]))]
        failure = entry["failure"].most_common(1)[0][0] if entry["failure"] else ""
        if kind == "runner":
            why = f" ({failure})" if failure else ""
            text = f"`{failed}` fails here{why}: run `{corrected[0]}` instead."
        else:
            text = (
                f"`{failed}` is not a test module here: the tests are in {', '.join(f'`{c}`' for c in corrected[:3])}."
            )
        notes.append(RecoveryNote(text, kind, failed, corrected, count, sorted(entry["sessions"]), failure))
    notes.sort(key=lambda n: (-n.traces, n.failed))
    return notes


# ---------------------------------------------------------------------------------------------- candidates


@dataclass
class FamilyCandidate:
    family: str
    key: str
    applies_when: str
    steps: list[str]
    preconditions: list[str]
    postconditions: list[str]
    verify_command: str
    verify_form: str
    skeleton: list[str]
    files_read: list[str]
    files_written: list[str]
    test_modules: list[str]
    notes: list[RecoveryNote]
    evidence: dict[str, Any]


@dataclass
class FamilyOutcome:
    """What one family gave: a candidate, or the reason it gave none."""

    family: str
    traces: list[Trace]
    candidate: FamilyCandidate | None = None
    status: str = ""
    reason: str = ""

    def figures(self) -> dict[str, Any]:
        resolved = [t for t in self.traces if t.resolved is True]
        return {
            "sessions": len(self.traces),
            "resolved": len(resolved),
            "failed": sum(1 for t in self.traces if t.resolved is False),
            "resolvedWithVerify": sum(1 for t in resolved if t.verify is not None),
        }


def _top(counter: Counter, n: int) -> list[tuple[str, int]]:
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def _first_reads(trace: Trace) -> list[str]:
    """The first source or test files a trace read before its first edit of a source file."""
    found: list[str] = []
    for call in trace.calls:
        args = _args(call)
        if args.get("activity") == "edit" and args.get("role") == "source":
            break
        if (
            args.get("activity") == "read"
            and args.get("role") in ("source", "test")
            and isinstance(args.get("path"), str)
        ):
            if args["path"] not in found:
                found.append(args["path"])
                if len(found) >= FIRST_READS_PER_TRACE:
                    break
    return found


def _rate(count: int, of: int) -> dict[str, Any]:
    return {"count": count, "of": of, "rate": round(count / of, 3) if of else None}


_TASK_WORD_RE = re.compile(r"[A-Za-z][A-Za-z_]{3,30}")
_COMMON_WORDS = frozenset(
    """
    about after also because been before being below between both could does doing down during each
    else even every from further have having here into itself just like make more most much must need
    only other same should since some still such than that their them then there these they this those
    through under until very want were what when where which while will with within without would your
    when issue problem following example expected actual behavior behaviour instead currently code
    using used case cases django https http github com would like added adding change changes
""".split()
)
FAMILY_WORDS_SHOWN = 8


def family_words(
    family_tasks: Sequence[str], all_tasks: Sequence[str], *, shown: int = FAMILY_WORDS_SHOWN
) -> list[str]:
    """The words the family's task texts use more than the repository's tasks do (by document
    frequency: share in the family over share in all, in at least 2 of the family's tasks), so that
    a new task's text recalls the family by the words its issues use ("queryset", "migration")."""

    def documents(texts: Sequence[str]) -> Counter:
        counter: Counter = Counter()
        for text in texts:
            counter.update({w.lower() for w in _TASK_WORD_RE.findall(text or "")} - _COMMON_WORDS)
        return counter

    inside, everywhere = documents(family_tasks), documents(all_tasks)
    n_in, n_all = max(1, len(family_tasks)), max(1, len(all_tasks))
    scored = [
        ((count / n_in) / (everywhere[word] / n_all), count, word)
        for word, count in inside.items()
        if count >= 2 and everywhere[word]
    ]
    scored.sort(key=lambda s: (-s[0], -s[1], s[2]))
    return [word for ratio, _count, word in scored if ratio > 1][:shown]


def build_candidate(
    family: str,
    traces: Sequence[Trace],
    *,
    min_traces: int,
    repository_notes: Sequence[RecoveryNote] = (),
    words: Sequence[str] = (),
) -> FamilyOutcome:
    """One family's candidate, or the reason it yields none (Reason)."""
    outcome = FamilyOutcome(family, list(traces))
    resolved = [t for t in traces if t.resolved is True]
    unresolved = [t for t in traces if t.resolved is False]
    if not resolved:
        outcome.status, outcome.reason = Reason.NO_RESOLVED, f"none of its {len(traces)} sessions is resolved"
        return outcome
    verified = [t for t in resolved if t.verify is not None]
    if not verified:
        outcome.status, outcome.reason = (
            Reason.NO_VERIFY,
            f"none of its {len(resolved)} resolved sessions ran a test command that passed",
        )
        return outcome
    if len(verified) < min_traces:
        outcome.status, outcome.reason = (
            Reason.BELOW,
            (
                f"{len(verified)} resolved session{'s' if len(verified) != 1 else ''} with a verify command, fewer than the agent's {min_traces}"
            ),
        )
        return outcome
    forms = Counter(t.verify.form for t in verified)
    form, form_count = _top(forms, 1)[0]
    shown = Counter(t.verify.shown for t in verified if t.verify.form == form)
    verify = _top(shown, 1)[0][0]
    modules = Counter(m for t in verified if t.verify.form == form for m in dict.fromkeys(t.verify.modules))
    test_modules = [m for m, _ in _top(modules, TEST_MODULES_SHOWN)]
    written = Counter(path for t in resolved for path in t.edited if target_role(path) == "source")
    read_first = Counter(path for t in resolved for path in _first_reads(t))
    files_written = [p for p, _ in _top(written, FILES_WRITTEN_SHOWN)]
    files_read = [p for p, _ in _top(read_first, FILES_READ_SHOWN)]
    skeletons = Counter(coding_skeleton([_args(c).get("step", "") for c in t.calls]) for t in resolved)
    skeleton = list(_top(skeletons, 1)[0][0]) if skeletons else ["search", "read", "edit", "test", "submit"]
    if "test" not in skeleton:  # the verify command is a step of every family's procedure
        skeleton.insert(skeleton.index("submit") if "submit" in skeleton else len(skeleton), "test")
    notes = [*repository_notes, *recovery_notes(traces, kind="module", min_traces=min_traces)]
    repository, _, area = family.partition(":")
    where = f"{repository} " if repository else ""
    applies_when = (
        f"A {where}task whose fix is in {area}/ (family {family}). "
        f"Resolved tasks of this family changed {', '.join(files_written[:3]) or area} and were verified with {verify}"
        + (f" on {', '.join(f'tests/{m}/' for m in test_modules)}." if test_modules else ".")
    ) + (f" Its issues mention {', '.join(words)}." if words else "")
    steps = []
    for phase in skeleton:
        if phase == "search":
            steps.append(f"Search {area}/ for the symbol, message or behaviour named in the issue.")
        elif phase == "read":
            steps.append(f"Read the code around the match before changing anything{_often(files_read)}.")
        elif phase == "edit":
            steps.append(f"Edit the source file that causes the issue{_often(files_written)}.")
        elif phase == "test":
            modules_text = (
                f" (this family's tests: {', '.join(f'tests/{m}/' for m in test_modules)})" if test_modules else ""
            )
            # the recovery notes go with the step they correct (the step count stays the phases')
            steps.append(
                " ".join(
                    [
                        f"Run the tests of the changed module: {verify}{modules_text}.",
                        *(f"Note: {note.text}" for note in notes),
                    ]
                )
            )
        else:
            steps.append(PHASE_TEXT[phase].format(target=""))
    # the counts stay in the evidence: the texts change only when the files do (each text is embedded once)
    preconditions = [f"Read before the edit: {path}." for path in files_read]
    postconditions = [f"Changed: {path}." for path in files_written]
    postconditions.append(f"The verify command passes: {verify}")
    unresolved_verified = [t for t in unresolved if t.verify is not None]
    shown_traces = sorted(traces, key=lambda t: (t.resolved is not True, t.session_id))[:TRACES_IN_EVIDENCE]
    evidence = {
        "agentKind": "coding",
        "family": {"key": family, "repository": repository, "area": area},
        "summary": (
            f"{len(verified)} resolved session{'s' if len(verified) != 1 else ''} of the family {family} ran a test command that passed; "
            f"in {form_count} of them the last one had the form {form}."
        ),
        "traces": [
            {
                "session": t.session_id,
                "outcome": "resolved" if t.resolved else ("failed" if t.resolved is False else "unknown"),
                "verifyForm": t.verify.form if t.verify else None,
                "edited": list(t.edited[:5]),
            }
            for t in shown_traces
        ],
        "tracesTotal": len(traces),
        "verifyCommand": verify,
        "verifyForm": form,
        "verifyForms": [{"form": f, "traces": n} for f, n in _top(forms, 5)],
        "verifyPassRate": _rate(form_count, len(resolved)),
        "contrast": {
            "gate": False,
            "resolved": len(resolved),
            "failed": len(unresolved),
            "resolvedWithVerify": _rate(len(verified), len(resolved)),
            "failedWithVerify": _rate(len(unresolved_verified), len(unresolved)),
            "failedWithVerifyForm": _rate(
                sum(1 for t in unresolved_verified if t.verify.form == form), len(unresolved)
            ),
        },
        "filesRead": [{"path": p, "traces": read_first[p]} for p in files_read],
        "filesWritten": [{"path": p, "traces": written[p]} for p in files_written],
        "testModules": [{"module": m, "traces": modules[m]} for m in test_modules],
        "recoveryNotes": [note.to_dict() for note in notes],
        "minTraces": min_traces,
        "skeleton": skeleton,
        "words": list(words),
    }
    outcome.candidate = FamilyCandidate(
        family=family,
        key=procedure_key_for(family),
        applies_when=applies_when,
        steps=steps,
        preconditions=preconditions,
        postconditions=postconditions,
        verify_command=verify,
        verify_form=form,
        skeleton=skeleton,
        files_read=files_read,
        files_written=files_written,
        test_modules=test_modules,
        notes=notes,
        evidence=evidence,
    )
    outcome.status, outcome.reason = "candidate", f"{len(verified)} resolved sessions with a verify command"
    return outcome


def _often(paths: Sequence[str]) -> str:
    return f" (in this family often {', '.join(paths[:3])})" if paths else ""


def mine_families(
    traces: Iterable[Trace], *, min_traces: int = DEFAULT_MIN_TRACES, rules: Sequence[FamilyRule] = ()
) -> list[FamilyOutcome]:
    """Every family of the traces with its candidate or the reason it has none; traces that edited no
    source file are one outcome of their own (family None → '(no source file edited)')."""
    by_family: dict[str | None, list[Trace]] = defaultdict(list)
    for trace in traces:
        by_family[family_of(trace, rules)].append(trace)
    by_repository: dict[str, list[Trace]] = defaultdict(list)
    for family, members in by_family.items():
        if family is not None:
            by_repository[family.partition(":")[0]].extend(members)
    repository_notes = {
        repo: recovery_notes(members, kind="runner", min_traces=min_traces) for repo, members in by_repository.items()
    }
    repository_tasks = {
        repo: [t.task for t in members if t.resolved is True] for repo, members in by_repository.items()
    }
    outcomes = []
    for family in sorted(by_family, key=lambda f: (f is None, f or "")):
        members = by_family[family]
        if family is None:
            outcomes.append(
                FamilyOutcome(
                    "(no source file edited)",
                    members,
                    status=Reason.NO_AREA,
                    reason=f"{len(members)} session{'s' if len(members) != 1 else ''} changed no source file (or kept no patch): no area to group by",
                )
            )
            continue
        repository = family.partition(":")[0]
        words = family_words([t.task for t in members if t.resolved is True], repository_tasks[repository])
        outcomes.append(
            build_candidate(
                family, members, min_traces=min_traces, repository_notes=repository_notes[repository], words=words
            )
        )
    return outcomes
