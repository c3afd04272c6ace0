"""`manage.py measure_coding` on the shared SWE-bench sessions of the six repositories beside Django
(public_data/swebench/gemini-3-pro-other-repos-trajs.tar.gz): the command imports nothing itself, so
the sessions are imported first as a user would, then measured leave one task out with the bundled
ranker; the figures asserted here are those docs/mining.md reports. It also checks the rule that no
candidate's verify command names a file that only one session's task touched."""

from __future__ import annotations

import io
import json
import re
from collections import defaultdict

import pytest
from django.core.management import call_command

from library.coding.families import mine_families, repository_of
from library.coding.measure import traces_from_rows
from library.models import Agent, AgentSession
from procmem_client.task_files import TASK_FILES
from tests.conftest import SWEBENCH_DIR, SWEBENCH_RESULTS, SWEBENCH_TRAJS, require_swebench

OTHER_TRAJS = SWEBENCH_DIR / "gemini-3-pro-other-repos-trajs.tar.gz"
OTHER_RESULTS = SWEBENCH_DIR / "results-other-repos.json"
_PATH_RE = re.compile(r"(?<![{\w])[\w.-]+(?:/[\w.-]+)+|[\w-]+\.py\b")

# importing 140 sessions, then mining once per resolved session (leave one task out) with the ranker
pytestmark = [pytest.mark.django_db, pytest.mark.timeout(3000)]


def _import(archive, results, agent):
    require_swebench()
    call_command(
        "import_sessions",
        str(archive),
        "--format",
        "mini-swe-agent",
        "--outcomes",
        str(results),
        "--agent",
        agent,
        "--create-agent",
        "--no-progress",
        "--workers",
        "1",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    return Agent.objects.get(name=agent)


@pytest.fixture
def other_repos_agent():
    return _import(OTHER_TRAJS, OTHER_RESULTS, "swe-other")


def _named_paths(trace) -> set[str]:
    """Every path a session's commands or targets name."""
    named = set()
    for call in trace.calls:
        args = call.get("args") or {}
        for path in _PATH_RE.findall(" ".join(str(args.get(k) or "") for k in ("command", "path"))):
            named.add(path.removeprefix("./").removeprefix("/testbed/"))
    return named


def _touched_by_task(traces, named=None) -> dict[str, set[str]]:
    """Every path a session's commands or targets name, with the tasks that named it. `named`: each
    trace's `_named_paths` by id(trace), read once for the 271 libraries mined below, not once a library."""
    touched: dict[str, set[str]] = defaultdict(set)
    for trace in traces:
        for path in named[id(trace)] if named is not None else _named_paths(trace):
            touched[path].add(trace.task_key)
    return touched


def _assert_no_verify_command_names_one_tasks_file(candidates, touched) -> None:
    for candidate in candidates:
        for path in _PATH_RE.findall(candidate.verify_command):
            assert len(touched.get(path.removeprefix("./"), ())) >= 2, (candidate.key, candidate.verify_command)


def test_no_candidates_verify_command_names_a_file_that_only_one_sessions_task_touched():
    """On all 371 shared sessions (Django and the six other repositories), mined whole and mined as the
    measure mines them (each repository without each of its tasks in turn)."""
    # given
    _import(SWEBENCH_TRAJS, SWEBENCH_RESULTS, "swe-gemini")
    _import(OTHER_TRAJS, OTHER_RESULTS, "swe-other")
    traces = _traces(None)
    assert len(traces) == 371
    by_repository = defaultdict(list)
    for trace in traces:
        by_repository[repository_of(trace.task_key)].append(trace)
    # when: mined whole
    candidates = [o.candidate for o in mine_families(traces, min_traces=2) if o.candidate]
    # then
    assert {c.verify_command for c in candidates} >= {
        "./bin/test {{test_file}}",
        "pytest {{test_file}}",
        "./tests/runtests.py {{test_label}}",
    }
    _assert_no_verify_command_names_one_tasks_file(candidates, _touched_by_task(traces))
    # and each repository without each of its tasks, as measure_coding mines (only the others' sessions count)
    named = {id(trace): _named_paths(trace) for trace in traces}
    mined = 0
    for members in by_repository.values():
        for key in sorted({t.task_key for t in members if t.resolved is True}):
            others = [t for t in members if t.task_key != key]
            candidates = [o.candidate for o in mine_families(others, min_traces=2) if o.candidate]
            _assert_no_verify_command_names_one_tasks_file(candidates, _touched_by_task(others, named))
            mined += 1
    assert mined == 179 + 92


def _traces(agent):
    sessions = AgentSession.objects.filter(agent=agent) if agent is not None else AgentSession.objects.all()
    rows = sessions.order_by("pk").values_list("session_id", "task_key", "task", "resolved", "tool_calls")
    return traces_from_rows(rows)


def test_measure_coding_reports_its_figures_per_repository(
    other_repos_agent,
):
    out = io.StringIO()
    call_command("measure_coding", "swe-other", "--json", stdout=out)
    report = json.loads(out.getvalue())
    # the pointer as served: the select endpoint's taskFiles and the clients' recall, by the same task_pointer
    assert report["parameters"]["taskFiles"] == TASK_FILES == 6
    sympy, sphinx = report["repositories"]["sympy/sympy"], report["repositories"]["sphinx-doc/sphinx"]
    print(json.dumps(report["repositories"], indent=1))  # the figures docs/mining.md reports

    # every repository with a resolved session is reported; those with fewer than 10 resolved (requests,
    # pylint, flask; seaborn has none) have no family of 2 resolved sessions with a verify command to recall
    assert set(report["repositories"]) == {
        "sympy/sympy",
        "sphinx-doc/sphinx",
        "psf/requests",
        "pylint-dev/pylint",
        "pallets/flask",
    }
    assert all(
        report["repositories"][r]["recalled"] == 0 for r in ("psf/requests", "pylint-dev/pylint", "pallets/flask")
    )

    def rate(figure):
        return figure["count"] / figure["of"]

    # the verify command's form: sympy's bin/test, sphinx's pytest (0 of 71 before the runner table);
    # 40 of 43 and 23 of 23 since the coding area signal recalls a family for all but one sympy session
    assert rate(sympy["verifyMatch"]) >= 0.9 and rate(sphinx["verifyMatch"]) >= 0.9
    assert sympy["verifyMatch"]["of"] >= 40 and sphinx["verifyMatch"]["of"] >= 20
    assert sympy["recalled"] >= 50 and sphinx["recalled"] == 30
    # failed invocations whose command was wrong (pytest where sympy has none), avoided by the pointer: 46 of 48;
    # sphinx's 4 of 8 (two launches, and a nonexistent test file the first pointer's test file replaces)
    failed = sympy["failedTestInvocations"]
    assert failed["commandFailures"] >= 40 and failed["avoided"] / failed["commandFailures"] >= 0.9
    assert failed["avoidedStrict"] <= failed["avoided"]
    failed = sphinx["failedTestInvocations"]
    assert failed["commandFailures"] == 8 and failed["avoided"] >= 4
    # the first pointer names an edited source file (the 30 % target): as served, it names first the 6 files
    # the task's identifiers point to in what the repository's other tasks' sessions saw: sympy 20 of 54 (11
    # with the family's files alone, --task-files 0: docs/mining.md says why), sphinx 12 of 30 (as without)
    assert sympy["namesEditedFile"]["count"] >= 20 and sphinx["namesEditedFile"]["count"] >= 12
    assert sympy["namesEditedFileAnyRecalled"]["count"] >= 21


def test_measure_coding_across_repositories_reports_the_other_repositorys_first_pointers():
    """A team's library holds several repositories' families at once: each task is offered the
    families of Django and the six other repositories together (its own task left out). The figures
    are those docs/mining.md reports ("Across repositories")."""
    # given
    _import(SWEBENCH_TRAJS, SWEBENCH_RESULTS, "swe-gemini")
    _import(OTHER_TRAJS, OTHER_RESULTS, "swe-other")
    # when
    out = io.StringIO()
    call_command("measure_coding", "swe-gemini", "swe-other", "--across-repositories", "--json", stdout=out)
    report = json.loads(out.getvalue())
    print(json.dumps(report["repositories"], indent=1))  # the figures docs/mining.md reports
    # then
    assert report["parameters"]["agents"] == ["swe-gemini", "swe-other"] and report["parameters"]["acrossRepositories"]
    django, sympy, sphinx = (report["repositories"][r] for r in ("django/django", "sympy/sympy", "sphinx-doc/sphinx"))
    assert (django["resolvedTraces"], sympy["resolvedTraces"], sphinx["resolvedTraces"]) == (179, 54, 30)
    # another repository's family first: Django 4 and sympy 1 (7 and 7 before a task that names its
    # repository stopped matching the other repositories' area words), sphinx none
    assert django["firstFromAnotherRepository"]["count"] <= 4 and sympy["firstFromAnotherRepository"]["count"] <= 1
    assert sphinx["firstFromAnotherRepository"]["count"] == 0
    assert django["recalledNothing"] == 0 and sympy["recalledNothing"] <= 1 and sphinx["recalledNothing"] == 0
    # the three targets hold as with the own repository's families alone: verify 141/144, 39/43, 23/23;
    # the first pointer as served (the task's files first) names an edited file 94/179, 20/54, 13/30 (the
    # set's pointer alone, --task-files 0: 66, 11, 13); wrong commands avoided 7/12, 45/48, 4/8
    assert report["parameters"]["taskFiles"] == 6
    assert django["verifyMatch"]["count"] >= 141 and sympy["verifyMatch"]["count"] >= 39
    assert sphinx["verifyMatch"]["count"] == 23
    assert django["namesEditedFile"]["count"] >= 94 and sympy["namesEditedFile"]["count"] >= 20
    assert sphinx["namesEditedFile"]["count"] >= 13
    assert django["failedTestInvocations"]["avoided"] >= 7 and sympy["failedTestInvocations"]["avoided"] >= 45
    assert sphinx["failedTestInvocations"]["avoided"] >= 4
    # requests and pylint have no family of their own: whatever they recall is another repository's
    for name in ("psf/requests", "pylint-dev/pylint"):
        figures = report["repositories"][name]
        assert figures["firstFromAnotherRepository"]["count"] == figures["recalled"]
