"""Coding procedures by task family (library/coding/families.py) and what they would have saved
(library/coding/measure.py): the rules on small traces, and input fuzzed."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from library.coding.families import (
    Reason,
    Trace,
    area_of,
    build_candidate,
    clean_family_rules,
    edited_files,
    family_of,
    family_words,
    mine_families,
    parse_test_command,
    procedure_key_for,
    recovery_notes,
    repository_of,
)
from library.coding.measure import judge, measure, served_record
from library.serving.active_set import slim_procedure
from procmem_client.coding import POINTER_MAX_TOKENS, recall_pointer, record_repository


def test(command, ok=True, output=""):
    from library.coding.activities import classify_command

    action = classify_command(command)
    args = {"activity": action.activity, "step": action.step(), "command": command, "output": output}
    if action.path:
        args.update(path=action.path, target=action.target, role=action.role)
    return {"name": action.program or "shell", "args": args, "ok": ok}


test.__test__ = False  # a helper, not a test


def read(path):
    return {
        "name": "cat",
        "args": {"activity": "read", "step": "read:source", "path": path, "role": "source", "command": f"cat {path}"},
        "ok": True,
    }


def submit(*files):
    return {"name": "submit", "args": {"activity": "submit", "step": "submit", "files": list(files)}, "ok": None}


def trace(sid, files, calls, resolved=True, task="", key=None):
    return Trace(
        sid,
        key or f"django__django-{sid}",
        task,
        resolved,
        [*calls, submit(*files)],
        edited_files([*calls, submit(*files)]),
    )


@pytest.mark.parametrize(
    "command, form, shown, modules",
    [
        (
            "cd /testbed && python3 tests/runtests.py forms_tests.tests.test_forms -v 2",
            "tests/runtests.py {{test_label}}",
            "python3 tests/runtests.py {{test_label}} -v 2",
            ("forms_tests",),
        ),
        (
            "./tests/runtests.py auth_tests queries",
            "tests/runtests.py {{test_label}}",
            "./tests/runtests.py {{test_label}}",
            ("auth_tests", "queries"),
        ),
        (
            "cd tests && ./runtests.py migrations.test_operations",
            "tests/runtests.py {{test_label}}",
            "./tests/runtests.py {{test_label}}",
            ("migrations",),
        ),
        (
            "/testbed/tests/runtests.py validators",
            "tests/runtests.py {{test_label}}",
            "./tests/runtests.py {{test_label}}",
            ("validators",),
        ),
        (
            "python -m pytest tests/utils/test_x.py::T::t -q",
            "pytest {{test_file}}",
            "python -m pytest {{test_file}} -q",
            ("utils",),
        ),
        (
            "PYTHONPATH=. python3 -m django test --settings=s auth_tests",
            "django test {{test_label}}",
            "PYTHONPATH=. python3 -m django test --settings=s {{test_label}}",
            ("auth_tests",),
        ),
        ("timeout 60 pytest", "pytest", "pytest", ()),
    ],
)
def test_a_test_command_has_one_form_whatever_the_interpreter_and_directory(command, form, shown, modules):
    assert parse_test_command(command) == (form, form.split(" {{")[0], shown, modules)


def test_a_command_that_runs_no_tests_has_no_form():
    assert parse_test_command("grep -rn foo django/") is None
    assert parse_test_command("") is None


def test_the_area_is_the_edited_files_directory_cut_at_two_one_more_under_contrib_and_rules_override():
    assert area_of("django/db/models/sql/query.py") == "django/db"
    assert area_of("django/contrib/admin/options.py") == "django/contrib/admin"
    assert area_of("src/requests/sessions.py") == "src/requests"
    assert area_of("setup.py") == "(root)"
    rules = clean_family_rules(
        [{"prefix": "django/db/migrations", "family": "migrations"}, {"prefix": "django/db", "family": "db"}]
    )
    assert area_of("django/db/migrations/autodetector.py", rules) == "migrations"  # the longest prefix wins
    assert area_of("django/db/models/query.py", rules) == "db"
    # a trace belongs to the area with most of its edited source files; tests and docs do not count
    t = trace(
        "1",
        ["django/forms/models.py", "django/db/models/query.py", "django/forms/fields.py", "tests/forms_tests/tests.py"],
        [],
    )
    assert family_of(t) == "django/django:django/forms"
    assert family_of(trace("2", ["docs/releases/4.2.txt"], [])) is None


def test_family_rules_are_checked():
    with pytest.raises(ValueError, match=r"\[0\] needs a non-empty prefix"):
        clean_family_rules([{"prefix": "", "family": "x"}])
    with pytest.raises(ValueError, match="must be a list"):
        clean_family_rules({"prefix": "a"})
    with pytest.raises(ValueError, match=r"\[1\] prefix and family are paths"):
        clean_family_rules([{"prefix": "a", "family": "b"}, {"prefix": "a b", "family": "c"}])
    assert clean_family_rules(None) == []


def test_keys_and_repositories():
    assert repository_of("django__django-11099") == "django/django"
    assert repository_of("scikit-learn__scikit-learn-25747") == "scikit-learn/scikit-learn"
    assert repository_of("task:7") == ""
    assert procedure_key_for("django/django:django/contrib/admin") == "fix.django.contrib.admin"
    assert procedure_key_for("psf/requests:src/requests") == "fix.requests.src.requests"
    assert procedure_key_for(":2020/x-y") == "fix.x2020.x_y"


def test_edited_files_come_from_the_patch_then_the_submit_call_then_the_edit_calls():
    patch = "diff --git a/django/a.py b/django/a.py\n--- a/django/a.py\n+++ b/django/a.py\n"
    assert edited_files([], patch) == ("django/a.py",)
    assert edited_files([submit("django/b.py")]) == ("django/b.py",)
    edit = {"name": "sed", "args": {"activity": "edit", "path": "django/c.py", "role": "source"}, "ok": True}
    script = {"name": "cat", "args": {"activity": "edit", "path": "reproduce.py", "role": "script"}, "ok": True}
    assert edited_files([edit, script]) == ("django/c.py",)


FAILED_RUNNER = "No module named django.test.__main__"


def test_a_family_yields_a_candidate_with_its_verify_command_files_and_notes():
    traces = [
        trace(
            "1",
            ["django/forms/models.py"],
            [
                read("django/forms/models.py"),
                test(
                    "python3 -m django.test tests/forms_tests/x.py",
                    ok=False,
                    output=f"/usr/bin/python3: {FAILED_RUNNER}",
                ),
                test("./tests/runtests.py forms_tests"),
            ],
        ),
        trace(
            "2",
            ["django/forms/models.py", "django/forms/fields.py"],
            [
                read("django/forms/fields.py"),
                test("./tests/runtests.py forms", ok=False),
                test("./tests/runtests.py forms_tests.tests"),
            ],
        ),
        trace(
            "3",
            ["django/forms/fields.py"],
            [
                test("./tests/runtests.py forms", ok=False),
                test("python3 -m django.test tests/forms_tests/y.py", ok=False, output=FAILED_RUNNER),
                test("python3 tests/runtests.py model_forms"),
            ],
        ),
        trace("4", ["django/forms/widgets.py"], [test("./tests/runtests.py forms_tests", ok=False)], resolved=False),
    ]
    [outcome] = mine_families(traces, min_traces=2)
    candidate = outcome.candidate
    assert outcome.family == "django/django:django/forms" and candidate.key == "fix.django.forms"
    assert (
        candidate.verify_form == "tests/runtests.py {{test_label}}"
        and candidate.verify_command == "./tests/runtests.py {{test_label}}"
    )
    assert candidate.files_written == ["django/forms/fields.py", "django/forms/models.py"]
    assert candidate.files_read == ["django/forms/fields.py", "django/forms/models.py"]
    assert [n.text for n in candidate.notes] == [
        f"`python3 -m django.test {{{{test_file}}}}` fails here ({FAILED_RUNNER}): run `./tests/runtests.py {{{{test_label}}}}` instead.",
        "`forms` is not a test module here: the tests are in `forms_tests`, `model_forms`.",
    ]
    assert [n.traces for n in candidate.notes] == [2, 2]
    test_step = next(step for step in candidate.steps if step.startswith("Run the tests"))
    assert test_step.endswith(" ".join(f"Note: {n.text}" for n in candidate.notes)) and len(candidate.steps) == len(
        candidate.skeleton
    )
    assert candidate.postconditions[-1] == "The verify command passes: ./tests/runtests.py {{test_label}}"
    evidence = candidate.evidence
    assert evidence["verifyPassRate"] == {"count": 3, "of": 3, "rate": 1.0}
    # the unresolved session is shown beside the resolved ones, not tested
    assert evidence["contrast"]["gate"] is False and evidence["contrast"]["failedWithVerify"] == {
        "count": 0,
        "of": 1,
        "rate": 0.0,
    }
    assert [t["session"] for t in evidence["traces"]] == ["1", "2", "3", "4"] and evidence["traces"][3][
        "outcome"
    ] == "failed"
    # the pointer names the family, the files and the verify command in under 300 tokens
    pointer = recall_pointer(served_record(candidate))
    assert "django/django:django/forms" in pointer["text"] and "django/forms/fields.py" in pointer["files"]
    assert pointer["verifyCommand"] == candidate.verify_command and pointer["tokens"] <= POINTER_MAX_TOKENS


def test_families_that_yield_nothing_say_why():
    outcomes = mine_families(
        [
            trace("1", ["django/urls/base.py"], [test("./tests/runtests.py urlpatterns")]),
            trace("2", ["django/http/request.py"], [test("./tests/runtests.py requests", ok=False)]),
            trace("3", ["django/views/debug.py"], [test("./tests/runtests.py view_tests")], resolved=False),
            trace("4", ["docs/index.txt"], []),
        ],
        min_traces=2,
    )
    assert {(o.family, o.status) for o in outcomes} == {
        ("django/django:django/urls", Reason.BELOW),
        ("django/django:django/http", Reason.NO_VERIFY),
        ("django/django:django/views", Reason.NO_RESOLVED),
        ("(no source file edited)", Reason.NO_AREA),
    }
    assert all(o.reason for o in outcomes)
    assert build_candidate("r:a", [trace("5", ["a/b/c.py"], [test("pytest")])], min_traces=1).candidate is not None


def test_recovery_notes_need_min_traces():
    traces = [
        trace(
            "1",
            ["django/a/b.py"],
            [test("./tests/runtests.py forms", ok=False), test("./tests/runtests.py forms_tests")],
        )
    ]
    assert recovery_notes(traces, kind="module", min_traces=2) == []
    assert recovery_notes(traces, kind="module", min_traces=1)[0].traces == 1
    # a run that failed because the change was not right yet is no correction
    same = [
        trace(
            "2",
            ["django/a/b.py"],
            [test("./tests/runtests.py forms_tests", ok=False), test("./tests/runtests.py forms_tests")],
        )
    ]
    assert recovery_notes(same, kind="module", min_traces=1) == recovery_notes(same, kind="runner", min_traces=1) == []


def test_family_words_are_those_its_tasks_use_more_than_the_others():
    words = family_words(
        ["QuerySet crash on union", "QuerySet.filter crash"],
        ["QuerySet crash on union", "QuerySet.filter crash", "Form crash", "Admin crash"],
    )
    assert words == ["queryset"]


def test_leave_one_task_out_counts_matches_files_and_avoided_failures():
    traces = [
        trace(
            str(i),
            ["django/forms/models.py"],
            [test("./tests/runtests.py forms", ok=False), test("./tests/runtests.py forms_tests")],
            task=f"form bug {i}",
        )
        for i in range(3)
    ] + [
        trace(
            "9",
            ["django/forms/models.py"],
            [test("./tests/runtests.py forms_tests", ok=False), test("./tests/runtests.py forms_tests")],
        )
    ]
    seen = []

    def recall(records, task):
        seen.append(task)
        return records[:1]

    report = measure(traces, recall, min_traces=2).to_dict()
    overall = report["overall"]
    assert overall["resolvedTraces"] == 4 and overall["verifyMatch"] == {"count": 4, "of": 4, "rate": 1.0}
    assert overall["namesEditedFile"]["rate"] == 1.0
    # 3 failures named the wrong test module (avoided: the pointer names forms_tests), 1 was the code
    assert overall["failedTestInvocations"] | {} == {
        "before": 4,
        "perTrace": 1.0,
        "avoided": 3,
        "after": 1,
        "afterPerTrace": 0.25,
        "reduction": 0.75,
        "commandFailures": 3,
        "commandFailuresAvoided": 1.0,
        "avoidedStrict": 3,
    }
    assert list(report["repositories"]) == ["django/django"] and seen[0] == "form bug 0"
    # nothing recalled: nothing matched, nothing avoided
    nothing = judge(traces[0], [], "django/django")
    assert (nothing.recalled, nothing.verify_match, nothing.edited_named, nothing.avoided) == (None, False, 0, 0)


def test_a_candidate_names_its_repository_in_both_api_versions():
    traces = [trace(str(i), ["django/forms/models.py"], [test("./tests/runtests.py forms_tests")]) for i in range(2)]
    candidate = next(o.candidate for o in mine_families(traces, min_traces=2) if o.candidate)
    record = served_record(candidate)
    # v1 serves the whole evidence; v2 its scalar facts only (slim_procedure): the ranker reads either
    assert record_repository(record) == record_repository(slim_procedure(record)) == "django/django"
    assert slim_procedure(record)["evidence"] == {"repository": "django/django"}


def test_across_repositories_each_task_is_offered_every_repositorys_families_and_foreign_firsts_are_counted():
    django = [
        trace(str(i), ["django/forms/models.py"], [test("./tests/runtests.py forms_tests")], task=f"form {i}")
        for i in range(3)
    ]
    sympy = [
        trace(
            str(i), ["sympy/sets/sets.py"], [test("./bin/test sympy/sets/tests/test_sets.py")], key=f"sympy__sympy-{i}"
        )
        for i in range(3)
    ]
    offered = []

    def recall(records, task):  # the other repository's family first
        offered.append(sorted(r["id"] for r in records))
        # the records name their repository, as the API serves mined families (coding.record_repository)
        assert {record_repository(r) for r in records} <= {"django/django", "sympy/sympy"}
        return sorted(records, key=lambda r: r["id"].startswith("fix.django") == task.startswith("form"))

    # when: each repository alone, then across repositories
    alone = measure(django + sympy, recall, min_traces=2).to_dict()
    assert offered[0] == ["fix.django.forms"] and alone["overall"]["firstFromAnotherRepository"]["count"] == 0
    offered.clear()
    across = measure(django + sympy, recall, min_traces=2, across_repositories=True).to_dict()
    # then: the task left out, its own family from the two others, and the other repository's whole
    assert offered[0] == ["fix.django.forms", "fix.sympy.sets"] and len(offered) == 6
    figures = across["repositories"]
    assert figures["django/django"]["firstFromAnotherRepository"] == {"count": 3, "of": 3, "rate": 1.0}
    assert figures["django/django"]["verifyMatch"]["count"] == 0 and figures["django/django"]["recalledNothing"] == 0
    # nothing recalled is counted as such
    assert measure(django, lambda records, task: [], min_traces=2).to_dict()["overall"]["recalledNothing"] == 3


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_command_text_parses_or_is_not_a_test(command):
    found = parse_test_command(command)
    assert found is None or (found[0] and found[2])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=40), st.booleans(), st.text(max_size=60)), max_size=6))
def test_any_calls_give_a_family_outcome(items):
    calls = [test(command, ok=ok) for command, ok, _ in items]
    files = [path for _, _, path in items if path]
    outcomes = mine_families([trace("1", files, calls), trace("2", files, calls)], min_traces=1)
    assert outcomes and all(o.candidate is not None or o.reason for o in outcomes)


def _pointer(verify):
    return {
        "id": "fix.sympy.core",
        "version": 1,
        "appliesWhen": "A task.",
        "steps": [],
        "preconditions": [],
        "postconditions": [f"The verify command passes: {verify}"],
        "verifyCommand": verify,
    }


def test_a_wrong_runner_or_launch_is_avoided_by_a_pointer_to_another_that_passed_here():
    # given: pytest is not installed (sympy); the session got there by a test file run as a script
    wrong_runner = trace(
        "1",
        ["sympy/core/add.py"],
        [test("pytest sympy/core/tests/test_add.py", ok=False), test("python sympy/core/tests/test_add.py")],
        key="sympy__sympy-1",
    )
    # and the system interpreter, outside the environment, before the environment's own
    wrong_launch = trace(
        "2",
        ["sphinx/util/a.py"],
        [test("/usr/bin/python3 -m pytest tests/test_util.py", ok=False), test("python3 -m pytest tests/test_util.py")],
        key="sphinx-doc__sphinx-2",
    )
    # when: the pointer runs another runner (bin/test passed in other tasks' sessions) or launches pytest
    # as other tasks' sessions did
    runner = judge(wrong_runner, [_pointer("./bin/test {{test_file}}")], "sympy/sympy")
    launch = judge(wrong_launch, [_pointer("pytest {{test_file}}")], "sphinx-doc/sphinx")
    same = judge(wrong_launch, [_pointer("/usr/bin/python3 -m pytest {{test_file}}")], "sphinx-doc/sphinx")
    # then: both avoided; by the older rule (the first passing form or launch exactly) neither is
    assert (runner.command_failures, runner.avoided, runner.avoided_strict) == (1, 1, 0)
    assert (launch.command_failures, launch.avoided, launch.avoided_strict) == (1, 1, 0)
    assert same.avoided == 0  # the pointer repeats the failed launch


def test_a_runner_script_the_agent_wrote_is_no_verify_command():
    # the agent's own run_tests.py matches the runner table by its name only (Django's tests/runtests.py)
    write = {
        "name": "cat",
        "args": {"activity": "edit", "command": "cat <<'EOF' > run_tests.py\nimport sympy\nEOF", "step": "edit"},
        "ok": True,
    }
    own = trace("1", ["sympy/geometry/point.py"], [write, test("python3 run_tests.py")], key="sympy__sympy-1")
    assert own.tests and own.tests[0].temporary and own.verify is None
    repository = trace("2", ["django/a/b.py"], [test("python3 tests/runtests.py a")])
    assert repository.verify is not None and repository.verify.form == "tests/runtests.py {{test_label}}"


def test_files_edited_as_often_are_ranked_by_how_many_sessions_read_them():
    traces = [
        trace(
            str(i),
            [f"sympy/core/f{i}.py"],
            [read("sympy/core/z.py"), read(f"sympy/core/f{i}.py")]
            + ([read("sympy/core/f3.py")] if i < 3 else [])
            + [test("./bin/test sympy/core/tests/test_x.py")],
            key=f"sympy__sympy-{i}",
        )
        for i in range(4)
    ]
    [outcome] = mine_families(traces, min_traces=2)
    # each file edited once: f3.py, read by all four sessions, comes first; then by name
    assert outcome.candidate.files_written == [
        "sympy/core/f3.py",
        "sympy/core/f0.py",
        "sympy/core/f1.py",
        "sympy/core/f2.py",
    ]
