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

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from procmem_client.coding import target_role

from .procedures import PHASE_TEXT, coding_skeleton
from .runners import mistake_kind
from .testruns import TestRun, parse_test, parse_test_command, test_run_of  # noqa: F401  (the parser's home)

AREA_DEPTH = 2
NAMESPACE_DIRS = frozenset({"contrib", "ext", "extensions", "plugins", "packages"})
ROOT_DIRS = frozenset({"src", "lib"})
FILES_READ_SHOWN = 3
FILES_WRITTEN_SHOWN = 8
TEST_MODULES_SHOWN = 3
TRACES_IN_EVIDENCE = 40
FIRST_READS_PER_TRACE = 3
DEFAULT_MIN_TRACES = 2

_SWEBENCH_KEY_RE = re.compile(r"^(?P<owner>[\w.-]+?)__(?P<name>[\w.-]+)-\d+$")
_DIFF_FILE_RE = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.M)
_KEY_WORD_RE = re.compile(r"[^a-z0-9_]+")


class Reason:
    """Why a family yielded nothing (the run report's status)."""

    NO_AREA = "no edited source file"
    NO_RESOLVED = "no resolved session"
    NO_VERIFY = "no verify command"
    BELOW = "below threshold"


# ---------------------------------------------------------------------------------------------- traces


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
        # what mining reads of its calls, computed once (leave-one-out measuring mines each trace once per
        # other task): functions of the calls alone, never changed by their readers
        self._memo: dict[Any, Any] = {}

    @property
    def tests(self) -> list[TestRun]:
        """Its test invocations; those that ran only files the agent created in the session (and did
        not hand in) marked temporary: they verify one task, never a family."""
        if self._tests is None:
            created = created_files(self.calls) - set(self.edited)
            self._tests = [
                replace(run, temporary=True)
                if (run.files and created.issuperset(run.files)) or _runs_created_script(run, created)
                else run
                for run in (test_run_of(call) for call in self.calls)
                if run is not None
            ]
        return self._tests

    @property
    def verify(self) -> TestRun | None:
        """The last test invocation of the repository's tests that passed."""
        return next((run for run in reversed(self.tests) if run.ok is True and not run.temporary), None)

    def failed_before_first_pass(self) -> tuple[list[TestRun], TestRun | None]:
        failed: list[TestRun] = []
        for run in self.tests:
            if run.temporary:
                continue
            if run.ok is True:
                return failed, run
            if run.ok is False:
                failed.append(run)
        return failed, None


def _runs_created_script(run: TestRun, created: set[str]) -> bool:
    """The runner is a script the agent wrote in the session (``python3 run_tests.py`` after ``cat > run_tests.py``):
    it matched the table by its name only, and verifies one task, never a family."""
    return any(word.removeprefix("./") in created for word in run.invocation.split())


_WRITE_TARGET_RE = re.compile(r"(?<![>&])>\s*['\"]?(?:/testbed/)?([\w./-]+)")


def created_files(calls: Sequence[Mapping[str, Any]]) -> set[str]:
    """The files the agent created in the session: written with ``>`` (``cat <<EOF > tests/test_x.py``)
    before any call named them."""
    seen: set[str] = set()
    created: set[str] = set()
    for call in calls:
        args = _args(call)
        path = args.get("path")
        command = args.get("command")
        if args.get("activity") == "edit" and isinstance(command, str):
            for target in _WRITE_TARGET_RE.findall(command):
                target = target.removeprefix("./")
                if target not in seen:
                    created.add(target)
                seen.add(target)
        if isinstance(path, str):
            seen.add(path.removeprefix("/testbed/"))
    return created


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


# ---------------------------------------------------------------------------------------------- families


@dataclass(frozen=True)
class FamilyRule:
    prefix: str
    family: str


# the longest a rule's prefix and family may be; both are relative paths of these characters
FAMILY_RULE_MAX_CHARS = {"prefix": 200, "family": 100}
_RULE_PATH_RE = re.compile(r"[\w./-]+")


def family_rule_part(value: Any) -> str:
    """A rule's prefix or family as stored: surrounding spaces and slashes removed."""
    return str(value or "").strip().strip("/")


def family_rule_part_ok(part: str, value: str) -> bool:
    """Whether `value` (cleaned by family_rule_part) may be a rule's `part` ("prefix" or "family"):
    a relative path of letters, digits, _ . / - within FAMILY_RULE_MAX_CHARS."""
    return len(value) <= FAMILY_RULE_MAX_CHARS[part] and _RULE_PATH_RE.fullmatch(value) is not None


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
        prefix, family = family_rule_part(rule.get("prefix")), family_rule_part(rule.get("family"))
        if not prefix or not family:
            raise ValueError(f"[{index}] needs a non-empty prefix and family")
        if not family_rule_part_ok("prefix", prefix) or not family_rule_part_ok("family", family):
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
    key = ("family", tuple(rules))
    if key not in trace._memo:
        trace._memo[key] = _family_of(trace, rules)
    return trace._memo[key]


def _family_of(trace: Trace, rules: Sequence[FamilyRule]) -> str | None:
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


# the kinds of mistake (runners.mistake_kind) and where their notes are counted: the runner and how
# it is launched belong to the repository, the test modules to the family
REPOSITORY_NOTE_KINDS = ("runner", "invocation", "options")


def corrections(trace: Trace) -> list[tuple[str, str, str, str]]:
    """(kind, what failed, what passed, first error line) for each failed test invocation before the
    first passing one that the passing one corrected (runners.mistake_kind): another runner, the same
    runner launched another way, other test modules, other options."""
    if "corrections" not in trace._memo:
        trace._memo["corrections"] = tuple(_corrections(trace))
    return list(trace._memo["corrections"])


def _corrections(trace: Trace) -> list[tuple[str, str, str, str]]:
    failed, passed = trace.failed_before_first_pass()
    if passed is None:
        return []
    found = []
    for run in failed:
        kind = mistake_kind(run, passed)
        if kind == "runner":
            found.append(("runner", run.shown, passed.shown, run.failure))
        elif kind == "test path":
            for module in run.modules:
                found.append(("module", module, ", ".join(passed.modules), run.failure))
        elif kind == "invocation":
            found.append(("invocation", run.invocation, passed.shown, run.failure))
        elif kind == "options":
            options = " ".join(o for o in run.options if o not in passed.options)
            found.append(("options", f"{run.invocation} {options}".strip(), passed.shown, run.failure))
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
        if kind in ("runner", "invocation"):
            why = f" ({failure})" if failure else ""
            text = f"`{failed}` fails here{why}: run `{corrected[0]}` instead."
        elif kind == "options":
            why = f" ({failure})" if failure else ""
            text = f"`{failed}` selects no tests here{why}: run `{corrected[0]}` instead."
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
    test_files: list[str] = field(default_factory=list)


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


def _first_reads(trace: Trace) -> tuple[str, ...]:
    """The first source or test files a trace read before its first edit of a source file."""
    if "first reads" not in trace._memo:
        trace._memo["first reads"] = tuple(_find_first_reads(trace))
    return trace._memo["first reads"]


def _find_first_reads(trace: Trace) -> list[str]:
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


def _files_read(trace: Trace) -> frozenset[str]:
    """The files a trace read (any read call)."""
    if "files read" not in trace._memo:
        trace._memo["files read"] = frozenset(
            args["path"]
            for args in map(_args, trace.calls)
            if args.get("activity") == "read" and isinstance(args.get("path"), str)
        )
    return trace._memo["files read"]


def _skeleton(trace: Trace) -> tuple[str, ...]:
    """The trace's phases (procedures.coding_skeleton of its calls' steps)."""
    if "skeleton" not in trace._memo:
        trace._memo["skeleton"] = coding_skeleton([_args(c).get("step", "") for c in trace.calls])
    return trace._memo["skeleton"]


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


@lru_cache(maxsize=4096)
def _task_words(text: str) -> frozenset[str]:
    """The words of one task text (cached: leave-one-out measuring reads each text once per task)."""
    return frozenset({w.lower() for w in _TASK_WORD_RE.findall(text)} - _COMMON_WORDS)


def task_documents(texts: Sequence[str]) -> Counter:
    """In how many of the texts each task word occurs (document frequency)."""
    counter: Counter = Counter()
    for text in texts:
        counter.update(_task_words(text or ""))
    return counter


def family_words(
    family_tasks: Sequence[str],
    all_tasks: Sequence[str],
    *,
    shown: int = FAMILY_WORDS_SHOWN,
    everywhere: Mapping[str, int] | None = None,
) -> list[str]:
    """The words the family's task texts use more than the repository's tasks do (by document
    frequency: share in the family over share in all, in at least 2 of the family's tasks), so that
    a new task's text recalls the family by the words its issues use ("queryset", "migration").
    `everywhere`: task_documents(all_tasks) when the caller has it (mine_families counts each
    repository's tasks once, not once a family)."""
    inside = task_documents(family_tasks)
    everywhere = everywhere if everywhere is not None else task_documents(all_tasks)
    n_in, n_all = max(1, len(family_tasks)), max(1, len(all_tasks))
    scored = [
        ((count / n_in) / (everywhere[word] / n_all), count, word)
        for word, count in inside.items()
        if count >= 2 and everywhere.get(word)
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
    repository_forms: Mapping[str, int] | None = None,
) -> FamilyOutcome:
    """One family's candidate, or the reason it yields none (Reason). `repository_forms`: the verify
    forms of the repository's resolved sessions, to break a tie."""
    repository_forms = repository_forms or {}
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
    # a tie goes to the form the repository's resolved sessions passed with most (its runner)
    form, form_count = min(forms.items(), key=lambda kv: (-kv[1], -repository_forms.get(kv[0], 0), kv[0]))
    shown = Counter(t.verify.shown for t in verified if t.verify.form == form)
    verify = _top(shown, 1)[0][0]
    alternatives = [
        (f, n, _top(Counter(t.verify.shown for t in verified if t.verify.form == f), 1)[0][0])
        for f, n in sorted(forms.items(), key=lambda kv: (-kv[1], kv[0]))
        if f != form
    ]
    disagreement = (
        f"Resolved sessions disagree on the verify command: {form_count} ran `{verify}`, "
        + ", ".join(f"{n} `{command}`" for _f, n, command in alternatives[:3])
        + "."
        if alternatives
        else ""
    )
    modules = Counter(m for t in verified if t.verify.form == form for m in dict.fromkeys(t.verify.modules))
    test_modules = [m for m, _ in _top(modules, TEST_MODULES_SHOWN)]
    written = Counter(path for t in resolved for path in t.edited if target_role(path) == "source")
    read_first = Counter(path for t in resolved for path in _first_reads(t))
    # files edited as often are ranked by how many resolved sessions read them: in a wide family most
    # files are edited once, and the ones its sessions keep reading are the area's centre
    read = Counter(path for t in resolved for path in _files_read(t))
    files_written = [p for p, _ in sorted(written.items(), key=lambda kv: (-kv[1], -read[kv[0]], kv[0]))][
        :FILES_WRITTEN_SHOWN
    ]
    files_read = [p for p, _ in _top(read_first, FILES_READ_SHOWN)]
    test_counts = _test_files(resolved)
    test_files = area_test_files(files_written, test_counts, min_traces=min_traces)
    labels = "{{test_label}}" in form
    skeletons = Counter(_skeleton(t) for t in resolved)
    skeleton = list(_top(skeletons, 1)[0][0]) if skeletons else ["search", "read", "edit", "test", "submit"]
    if "test" not in skeleton:  # the verify command is a step of every family's procedure
        skeleton.insert(skeleton.index("submit") if "submit" in skeleton else len(skeleton), "test")
    notes = [*repository_notes, *recovery_notes(traces, kind="module", min_traces=min_traces)]
    tests_text = (
        ", ".join(f"tests/{m}/" for m in test_modules) if labels else ", ".join(test_files[:TEST_MODULES_SHOWN])
    )
    repository, _, area = family.partition(":")
    where = f"{repository} " if repository else ""
    applies_when = (
        f"A {where}task whose fix is in {area}/ (family {family}). "
        f"Resolved tasks of this family changed {', '.join(files_written[:3]) or area} and were verified with {verify}"
        + (f" on {tests_text}." if tests_text else ".")
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
            modules_text = f" (this family's tests: {tests_text})" if tests_text else ""
            # the recovery notes go with the step they correct (the step count stays the phases')
            steps.append(
                " ".join(
                    [
                        f"Run the tests of the changed module: {verify}{modules_text}.",
                        *([disagreement] if disagreement else []),
                        *(f"Note: {note.text}" for note in notes),
                    ]
                )
            )
        else:
            steps.append(PHASE_TEXT[phase].format(target=""))
    # the counts stay in the evidence: the texts change only when the files do (each text is embedded once)
    preconditions = [f"Read before the edit: {path}." for path in files_read]
    preconditions += [f"Test of this area: {path}." for path in test_files]
    postconditions = [f"Changed: {path}." for path in files_written]
    postconditions.append(f"The verify command passes: {verify}")
    unresolved_verified = [t for t in unresolved if t.verify is not None]
    shown_traces = sorted(traces, key=lambda t: (t.resolved is not True, t.session_id))[:TRACES_IN_EVIDENCE]
    evidence = {
        "agentKind": "coding",
        "family": {"key": family, "repository": repository, "area": area},
        # also as a scalar fact, which API v2's slim evidence keeps: the ranker reads it
        # (procmem_client.coding.record_repository) to tell several repositories' families apart
        "repository": repository,
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
        "verifyAlternatives": [{"form": f, "command": c, "traces": n} for f, n, c in alternatives[:5]],
        "verifyDisagreement": disagreement,
        "testFiles": [{"path": p, "traces": test_counts[p]} for p in test_files],
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
        test_files=test_files,
        test_modules=test_modules,
        notes=notes,
        evidence=evidence,
    )
    outcome.status, outcome.reason = "candidate", f"{len(verified)} resolved sessions with a verify command"
    return outcome


TEST_FILES_SHOWN = 3
_TEST_NAME_PATTERNS = ("test_{}.py", "{}_test.py", "unittest_{}.py", "tests_{}.py")


def _test_files(resolved: Sequence[Trace]) -> Counter:
    """In how many resolved traces each test file was edited (handed in) or run by a passing test
    run of the repository's tests (a failed run may name a file that does not exist)."""
    counts: Counter = Counter()
    for trace in resolved:
        found = {path for path in trace.edited if target_role(path) == "test"}
        for run in trace.tests:
            if run.ok is True and not run.temporary:
                found.update(f for f in run.files if f.endswith(".py") or "{{" not in f)
        counts.update(found)
    return counts


def pairs_with(source: str, test: str) -> bool:
    """A test file pairs with a source file by the usual conventions: pkg/mod.py ↔
    pkg/tests/test_mod.py, tests/test_mod.py, testing/test_mod.py (or mod_test.py, any test folder)."""
    stem = source.rsplit("/", 1)[-1].removesuffix(".py")
    name = test.rsplit("/", 1)[-1]
    if stem in ("__init__", "") or name not in {pattern.format(stem) for pattern in _TEST_NAME_PATTERNS}:
        return False
    folders = test.split("/")[:-1]
    return not folders or any(f in ("tests", "test", "testing") or f.endswith("_tests") for f in folders)


def area_test_files(sources: Sequence[str], counts: Mapping[str, int], *, min_traces: int) -> list[str]:
    """The test files of a family's area: those that pair with its source files by convention, then
    those its resolved sessions ran or edited in at least `min_traces` of them, ranked by that count
    (a test file one session touched is one task's, not the family's, unless the agent asks for one)."""
    need = max(1, min(min_traces, 2))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    paired = [p for p, n in ranked if n >= need and any(pairs_with(s, p) for s in sources)]
    frequent = [p for p, n in ranked if n >= need and p not in paired]
    return [*paired, *frequent][:TEST_FILES_SHOWN]


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
        repo: [
            note for kind in REPOSITORY_NOTE_KINDS for note in recovery_notes(members, kind=kind, min_traces=min_traces)
        ]
        for repo, members in by_repository.items()
    }
    repository_forms = {
        repo: Counter(t.verify.form for t in members if t.resolved is True and t.verify is not None)
        for repo, members in by_repository.items()
    }
    repository_tasks = {
        repo: [t.task for t in members if t.resolved is True] for repo, members in by_repository.items()
    }
    repository_documents = {repo: task_documents(tasks) for repo, tasks in repository_tasks.items()}
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
        words = family_words(
            [t.task for t in members if t.resolved is True],
            repository_tasks[repository],
            everywhere=repository_documents[repository],
        )
        outcomes.append(
            build_candidate(
                family,
                members,
                min_traces=min_traces,
                repository_notes=repository_notes[repository],
                words=words,
                repository_forms=repository_forms[repository],
            )
        )
    return outcomes
