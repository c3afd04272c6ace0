"""What the family procedures would have saved, leave one task out (pure Python; recall is passed in).

For each resolved trace: the library is built from the *other* traces of its repository (every trace
of the same task left out, so a repeated trial does not teach its own answer) — or, across
repositories, from the other traces of every repository, as a team's library holds several
repositories' families at once — recalled with the trace's task text, and the first recalled pointer
(procmem_client.coding.recall_pointer) is compared with what the trace did:

- verify match: the pointer's verify command has the form (families.parse_test_command) of the test
  command that passed last in the trace (traces without a passing test command are not counted);
- edited files named: the share of the trace's edited source files that the pointer names, and
  whether it names at least one;
- failed test invocations avoided: of the trace's failed test invocations before its first passing
  one, those the pointer's command makes unnecessary — the failure was the command, not the code
  (runners.mistake_kind): it used a runner that does not work here and the pointer's command runs
  another one, or launched the right runner a way that fails and the pointer launches it another
  way (the pointer's command passed in resolved sessions of other tasks of the same repository, in
  the same environment), or named other test modules and the pointer names one of the passing
  invocation's modules, or options the runner refused and the pointer's command has none of them.
  `avoidedStrict` counts by the older, narrower rule: a runner or launch mistake only when the
  pointer's form or launch is exactly that of the trace's first passing invocation. A test run that
  fails because the change is not right yet is not avoidable by any command, and counts as not
  avoided.

Each pointer is the one served with the task's files (the select endpoint's `taskFiles`, the clients'
default recall; procmem_client.task_files.task_pointer): it names first the `task_files` N (default
TASK_FILES) source files the task's own words point to in what the other tasks' sessions of the
pointer's repository saw (library/coding/file_index.py; the trace's own task contributes nothing), as
the agent's file index built from its stored sessions would; N = 0 measures the set's pointer alone.

Also counted: how many traces recalled nothing, and how many recalled first a family of another
repository than their own (possible only across repositories). Reported per repository and overall
(`MeasureReport.to_dict`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from procmem_client.coding import record_repository, target_role
from procmem_client.task_files import TASK_FILES, TaskFileIndex, task_pointer

from .families import FamilyCandidate, FamilyRule, Trace, edited_files, mine_families, repository_of
from .file_index import FileIndex, Observations, observations
from .runners import mistake_kind
from .testruns import parse_test

Recall = Callable[[list[dict[str, Any]], str], "list[Mapping[str, Any]]"]


@dataclass
class TraceResult:
    session_id: str
    repository: str
    recalled: str | None  # the pointer's procedure id
    verify_counted: bool
    verify_match: bool
    edited: int
    edited_named: int
    edited_named_all: int  # by any recalled pointer (an agent sees up to its cap of them)
    failed_before_pass: int
    avoided: int
    command_failures: int  # failed invocations whose command (runner or modules) was corrected
    avoided_strict: int = 0  # by the older rule: the pointer's form or launch is the first passing one's
    recalled_repository: str | None = None  # the repository of the first recalled family, when known


@dataclass
class Totals:
    traces: int = 0
    recalled: int = 0
    verify_counted: int = 0
    verify_match: int = 0
    with_edits: int = 0
    names_edited: int = 0
    names_edited_all: int = 0
    edited_share_sum: float = 0.0
    failed_before_pass: int = 0
    avoided: int = 0
    command_failures: int = 0
    avoided_strict: int = 0
    from_another_repository: int = 0

    def add(self, result: TraceResult) -> None:
        self.traces += 1
        self.recalled += result.recalled is not None
        self.from_another_repository += (
            result.recalled_repository is not None and result.recalled_repository != result.repository
        )
        self.verify_counted += result.verify_counted
        self.verify_match += result.verify_match
        if result.edited:
            self.with_edits += 1
            self.names_edited += result.edited_named > 0
            self.names_edited_all += result.edited_named_all > 0
            self.edited_share_sum += result.edited_named / result.edited
        self.failed_before_pass += result.failed_before_pass
        self.avoided += result.avoided
        self.command_failures += result.command_failures
        self.avoided_strict += result.avoided_strict

    def to_dict(self) -> dict[str, Any]:
        def share(part: float, whole: int) -> float | None:
            return round(part / whole, 3) if whole else None

        return {
            "resolvedTraces": self.traces,
            "recalled": self.recalled,
            "recalledNothing": self.traces - self.recalled,
            "firstFromAnotherRepository": {
                "count": self.from_another_repository,
                "of": self.recalled,
                "rate": share(self.from_another_repository, self.recalled),
            },
            "verifyMatch": {
                "count": self.verify_match,
                "of": self.verify_counted,
                "rate": share(self.verify_match, self.verify_counted),
            },
            "namesEditedFile": {
                "count": self.names_edited,
                "of": self.with_edits,
                "rate": share(self.names_edited, self.with_edits),
            },
            "namesEditedFileAnyRecalled": {
                "count": self.names_edited_all,
                "of": self.with_edits,
                "rate": share(self.names_edited_all, self.with_edits),
            },
            "editedFilesNamedShare": share(self.edited_share_sum, self.with_edits),
            "failedTestInvocations": {
                "before": self.failed_before_pass,
                "perTrace": share(self.failed_before_pass, self.traces),
                "avoided": self.avoided,
                "after": self.failed_before_pass - self.avoided,
                "afterPerTrace": share(self.failed_before_pass - self.avoided, self.traces),
                "reduction": share(self.avoided, self.failed_before_pass),
                "commandFailures": self.command_failures,
                "commandFailuresAvoided": share(self.avoided, self.command_failures),
                "avoidedStrict": self.avoided_strict,
            },
        }


@dataclass
class MeasureReport:
    results: list[TraceResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        overall = Totals()
        per_repository: dict[str, Totals] = defaultdict(Totals)
        for result in self.results:
            overall.add(result)
            per_repository[result.repository].add(result)
        return {
            "overall": overall.to_dict(),
            "repositories": {
                repo or "(one repository)": totals.to_dict() for repo, totals in sorted(per_repository.items())
            },
        }


def served_record(candidate, *, version: int = 1, intent: str = "") -> dict[str, Any]:
    """A family candidate as the agent API serves a procedure (the fields recall reads: of the
    evidence, the family's repository, coding.record_repository)."""
    return {
        "id": candidate.key,
        "version": version,
        "intent": intent or None,
        "status": "active",
        "appliesWhen": candidate.applies_when,
        "steps": list(candidate.steps),
        "requiredTools": [],
        "forbiddenActions": [],
        "preconditions": list(candidate.preconditions),
        "postconditions": list(candidate.postconditions),
        "verifyCommand": candidate.verify_command,
        "evidence": {
            "repository": candidate.evidence.get("repository"),
            "family": dict(candidate.evidence.get("family") or {}),
        },
        "approvedBy": None,
        "approvedAt": None,
    }


def _pointer_modules(record: Mapping[str, Any]) -> set[str]:
    """The test modules a procedure names: tests/<module>/ in its steps."""
    found = set()
    for step in record.get("steps") or []:
        for word in str(step).replace(",", " ").split():
            word = word.strip("()`.;:")
            if word.startswith("tests/") and word.count("/") >= 1:
                module = word.split("/")[1]
                if module:
                    found.add(module)
    return found


def judge(
    trace: Trace,
    recalled: Sequence[Mapping[str, Any]],
    repository: str,
    record_repositories: Mapping[str, str] | None = None,
    indexes: Mapping[str, TaskFileIndex] | None = None,
    task_files: int = TASK_FILES,
) -> TraceResult:
    """One resolved trace against the pointers recalled for it, the first one first.
    `record_repositories`: the repository of each record id that may be recalled (the families').
    `indexes`: the file index of each repository (the other tasks' sessions'), from which each pointer
    names first the `task_files` files the trace's task points to — by `task_pointer`, the function
    the select endpoint's `taskFiles` and the clients call; none: the set's pointer."""

    def pointer_of(r: Mapping[str, Any]) -> dict[str, Any]:
        return task_pointer(r, trace.task, indexes or {}, limit=task_files)

    record = recalled[0] if recalled else None
    pointer = pointer_of(record) if record is not None else None
    named_all = {path for r in recalled for path in pointer_of(r)["files"]}
    verify = trace.verify
    parsed = parse_test(pointer["verifyCommand"]) if pointer and pointer["verifyCommand"] else None
    pointer_form = parsed.form if parsed else None
    edited = [p for p in trace.edited if target_role(p) == "source"]
    named = set(pointer["files"]) if pointer else set()
    failed, first_pass = trace.failed_before_first_pass()
    avoided = command_failures = avoided_strict = 0
    tests = set(pointer["tests"]) if pointer else set()
    tests |= {t.rsplit("/", 1)[-1].removesuffix(".py") for t in tests}
    tests |= _pointer_modules(record) if record is not None else set()
    if first_pass is not None:
        for run in failed:
            kind = mistake_kind(run, first_pass)
            if not kind:
                continue  # the code was not right yet: no command avoids that
            command_failures += 1
            if kind == "runner":
                avoided += parsed is not None and parsed.runner != run.runner
                avoided_strict += pointer_form is not None and pointer_form == first_pass.form
            elif kind == "test path":
                names_test = bool(tests & (set(first_pass.modules) | set(first_pass.files)))
                avoided += names_test
                avoided_strict += names_test
            elif kind == "invocation":
                avoided += (
                    parsed is not None and parsed.runner == first_pass.runner and parsed.invocation != run.invocation
                )
                avoided_strict += parsed is not None and (parsed.runner, parsed.invocation) == (
                    first_pass.runner,
                    first_pass.invocation,
                )
            else:  # options: the pointer's command runs the same runner without the refused options
                fits = (
                    parsed is not None
                    and parsed.runner == first_pass.runner
                    and not (set(parsed.options) - set(first_pass.options))
                )
                avoided += fits
                avoided_strict += fits
    return TraceResult(
        session_id=trace.session_id,
        repository=repository,
        recalled=pointer["id"] if pointer else None,
        verify_counted=verify is not None,
        verify_match=verify is not None and pointer_form == verify.form,
        edited=len(edited),
        edited_named=sum(1 for p in edited if p in named),
        edited_named_all=sum(1 for p in edited if p in named_all),
        failed_before_pass=len(failed),
        avoided=avoided,
        command_failures=command_failures,
        avoided_strict=avoided_strict,
        recalled_repository=(record_repositories or {}).get(pointer["id"]) if pointer else None,
    )


def measure(
    traces: Sequence[Trace],
    recall: Recall,
    *,
    min_traces: int = 2,
    rules: Sequence[FamilyRule] = (),
    intent: str = "",
    on_trace: Callable[[TraceResult], None] | None = None,
    across_repositories: bool = False,
    task_files: int = TASK_FILES,
) -> MeasureReport:
    """Leave one task out over `traces`: `recall(records, task)` returns the records recalled for a
    task text (best first; the client's recall injects up to the agent's cap) among the served
    records built from the other traces — of the trace's repository, or with `across_repositories`
    of every repository (families are mined per repository, so this is the union of each
    repository's families, the trace's own mined without its task). `task_files` N > 0 (default: as
    served, TASK_FILES): each pointer names first the N files the task's words point to in the other
    tasks' observations of its record's repository (FileIndex), by the served function (`task_pointer`);
    0: the set's pointer, without them."""
    seen: dict[str, Observations] = {}
    if task_files > 0:
        seen = {t.session_id: observations(t.calls) for t in traces}
    by_repository: dict[str, list[Trace]] = defaultdict(list)
    for trace in traces:
        by_repository[repository_of(trace.task_key)].append(trace)
    report = MeasureReport()

    def mined(sessions: Sequence[Trace]) -> list[FamilyCandidate]:
        return [o.candidate for o in mine_families(sessions, min_traces=min_traces, rules=rules) if o.candidate]

    # Across repositories, the other repositories' families and file indexes do not depend on the task left
    # out (families are mined per repository, mine_families: a family's candidate reads only its
    # repository's sessions; the left-out task's sessions are all of its own repository): each is mined
    # and indexed once, from all its sessions, and only the own repository's are mined again per task.
    # The candidates in the order mine_families gives them, by family ('repository:area', each one once).
    whole: dict[str, list[FamilyCandidate]] = {}
    whole_indexes: dict[str, TaskFileIndex] = {}
    for repository, members in sorted(by_repository.items()):
        pool = traces if across_repositories else members
        for trace in members:
            if trace.resolved is not True:
                continue
            others = [t for t in pool if _kept(t, trace)]
            if across_repositories:
                candidates = mined([t for t in members if _kept(t, trace)])
                for other, sessions in by_repository.items():
                    if other != repository:
                        if other not in whole:
                            whole[other] = mined(sessions)
                        candidates += whole[other]
                candidates.sort(key=lambda c: c.family)
            else:
                candidates = mined(others)
            records = [served_record(c, intent=intent) for c in candidates]
            recalled = list(recall(records, trace.task)) if records else []
            repositories = {c.key: c.family.partition(":")[0] for c in candidates}
            indexes = (
                _indexes(recalled, others, seen, whole_indexes if across_repositories else None, repository)
                if task_files > 0
                else {}
            )
            result = judge(trace, recalled, repository, repositories, indexes, task_files)
            report.results.append(result)
            if on_trace is not None:
                on_trace(result)
    return report


def _kept(t: Trace, left_out: Trace) -> bool:
    """Whether `t` stays in the library built for `left_out`: every session of its task is left out (a
    session without a task key: itself alone)."""
    return t.task_key != left_out.task_key or (not t.task_key and t.session_id != left_out.session_id)


def _indexes(
    recalled: Sequence[Mapping[str, Any]],
    others: Sequence[Trace],
    seen: Mapping[str, Observations],
    whole: dict[str, TaskFileIndex] | None = None,
    own: str = "",
) -> dict[str, TaskFileIndex]:
    """The file index of each recalled record's repository, from its other tasks' sessions (as the
    agent's stored sessions would give it, the trace's own task left out). `whole` (across
    repositories, where `others` are every repository's sessions but the task's): the index of a
    repository other than the task's `own`, built once from all its sessions and kept there."""
    indexes: dict[str, TaskFileIndex] = {}
    for record in recalled:
        repository = record_repository(record)
        if repository in indexes:
            continue
        if whole is not None and repository != own.lower() and repository in whole:
            indexes[repository] = whole[repository]
            continue
        members = [o for o in others if repository_of(o.task_key).lower() == repository]
        indexes[repository] = FileIndex(
            (seen[o.session_id] for o in members), edited=(p for o in members for p in o.edited)
        )
        if whole is not None and repository != own.lower():
            whole[repository] = indexes[repository]
    return indexes


def traces_from_rows(rows: Iterable[tuple[str, str, str, Any, Any]]) -> list[Trace]:
    """Traces from stored sessions' (session id, task key, task, resolved, tool calls)."""
    traces = []
    for session_id, task_key, task, resolved, calls in rows:
        calls = calls if isinstance(calls, list) else []
        traces.append(Trace(session_id, task_key or "", task or "", resolved, calls, edited_files(calls)))
    return traces
