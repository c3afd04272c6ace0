"""The runner table (library/coding/runners.py) and the test-command parser that reads it
(library/coding/testruns.py): every runner's commands, the agent's own scripts refused, the mistake
kinds, and the round trip a verify command with placeholders needs (Hypothesis)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from library.coding.families import Trace, area_test_files, edited_files, mine_families, pairs_with
from library.coding.runners import RUNNERS, mistake_kind
from library.coding.testruns import TestRun, parse_test, parse_test_command


@pytest.mark.parametrize(
    "command, form, shown, files",
    [
        ("pytest tests/test_x.py::T::t -q", "pytest {{test_file}}", "pytest {{test_file}} -q", ("tests/test_x.py",)),
        (
            "cd /testbed && /usr/bin/python3 -m pytest -p no:cacheprovider tests/a.py -k 'not slow' 2>&1",
            "pytest {{test_file}}",
            "/usr/bin/python3 -m pytest -p no:cacheprovider {{test_file}}",
            ("tests/a.py",),
        ),
        (
            "pytest --pyargs sympy.core.tests.test_arit",
            "pytest {{test_label}}",
            "pytest --pyargs {{test_label}}",
            ("sympy/core/tests/test_arit.py",),
        ),
        (
            "cd tests && python runtests.py forms_tests.tests.test_forms.FormsTestCase.test_x",
            "tests/runtests.py {{test_label}}",
            "python tests/runtests.py {{test_label}}",
            ("tests/forms_tests/tests/test_forms.py",),
        ),
        (
            "python manage.py test app.tests",
            "manage.py test {{test_label}}",
            "python manage.py test {{test_label}}",
            (),
        ),
        (
            "bin/test sympy/core/tests/test_arit.py -k test_mod",
            "bin/test {{test_file}}",
            "./bin/test {{test_file}}",
            ("sympy/core/tests/test_arit.py",),
        ),
        (
            "python bin/doctest sympy/core/mod.py",
            "bin/doctest {{source_file}}",
            "python bin/doctest {{source_file}}",
            (),
        ),
        (
            "python3 -m unittest tests.test_util.TestX.test_y -v",
            "unittest {{test_label}}",
            "python3 -m unittest {{test_label}} -v",
            ("tests/test_util.py",),
        ),
        (
            "tox -e py39 -- tests/test_x.py",
            "tox {{tox_env}} {{test_file}}",
            "tox -e {{tox_env}} -- {{test_file}}",
            ("tests/test_x.py",),
        ),
        ("nox -s tests-3.11", "nox {{nox_session}}", "nox -s {{nox_session}}", ()),
        ("make test", "make test", "make test", ()),
        ("make check PYTHON=python3", "make check", "make check", ()),
        (
            "python sympy/core/tests/test_arit.py",
            "python {{test_file}}",
            "python {{test_file}}",
            ("sympy/core/tests/test_arit.py",),
        ),
    ],
)
def test_each_runner_of_the_table_has_its_form_shown_command_and_test_files(command, form, shown, files):
    parsed = parse_test(command)
    assert (parsed.form, parsed.shown) == (form, shown)
    if files:
        assert parsed.files == files


@pytest.mark.parametrize(
    "command",
    [
        "python reproduce_issue.py",
        "python test_fix.py",
        "python3 /tmp/test_issue.py",
        "bash run_tests.sh",
        "pytest --version",
        "tox --version",
        "python -m pytest --collect-only tests/",
        "python -c 'import pytest'",
        "make html",
        "grep -rn pytest setup.cfg",
    ],
)
def test_the_agents_own_scripts_and_information_commands_are_no_test_run(command):
    assert parse_test(command) is None


def test_every_runner_of_the_table_is_reached_and_its_form_parses_to_itself():
    seen = set()
    for command in [
        "pytest tests/a.py",
        "./tests/runtests.py x",
        "./manage.py test x",
        "python -m django test x",
        "python -m django.test x",
        "bin/test a/tests/test_b.py",
        "bin/doctest a/b.py",
        "python -m unittest a.test_b",
        "nosetests a/tests/test_b.py",
        "tox -e py",
        "nox -s t",
        "make test",
        "make check",
        "python a/tests/test_b.py",
    ]:
        parsed = parse_test(command)
        seen.add(parsed.runner.split("/", 1)[-1] if parsed.runner.endswith("manage.py test") else parsed.runner)
        assert parse_test(parsed.form).form == parsed.form, command
    assert {r.name for r in RUNNERS} - seen == set()


def run(shown, ok, *, invocation="pytest", files=(), modules=(), options=(), usage=False, runner="pytest"):
    return TestRun(shown.split(" {{")[0], runner, shown, modules, ok, "", invocation, files, options, usage)


def test_mistake_kinds_are_the_same_for_every_runner():
    passed = run("pytest {{test_file}}", True, files=("tests/test_a.py",))
    assert mistake_kind(run("bin/test", False, runner="bin/test"), passed) == "runner"
    assert mistake_kind(run("x", False, invocation="/usr/bin/python3 -m pytest", files=passed.files), passed) == (
        "invocation"
    )
    assert mistake_kind(run("x", False, files=("tests/test_b.py",)), passed) == "test path"
    refused = run("x", False, files=passed.files, options=("-k t",), usage=True)
    assert mistake_kind(refused, passed) == "options"
    # the same command failing: the code was not right yet
    assert mistake_kind(run("x", False, files=passed.files), passed) == ""


def test_test_files_pair_with_source_files_by_convention():
    assert pairs_with("pkg/mod.py", "pkg/tests/test_mod.py")
    assert pairs_with("src/pkg/mod.py", "tests/test_mod.py") and pairs_with("pkg/mod.py", "testing/test_mod.py")
    assert not pairs_with("pkg/mod.py", "pkg/tests/test_other.py") and not pairs_with(
        "pkg/__init__.py", "test___init__.py"
    )
    counts = {"pkg/tests/test_mod.py": 2, "tests/test_other.py": 5, "tests/test_once.py": 1}
    # paired first, then the most run; a test file one session touched is not the family's
    assert area_test_files(["pkg/mod.py"], counts, min_traces=2) == ["pkg/tests/test_mod.py", "tests/test_other.py"]


def _call(command, ok=True, output="", activity="test"):
    return {"name": "shell", "args": {"activity": activity, "command": command, "output": output}, "ok": ok}


def _trace(sid, files, calls, resolved=True):
    submit = {"name": "submit", "args": {"activity": "submit", "files": files}, "ok": None}
    return Trace(sid, f"sympy__sympy-{sid}", "", resolved, [*calls, submit], edited_files([*calls, submit]))


def test_a_sympy_family_verifies_with_its_runner_and_says_where_sessions_disagree():
    failed_runner = _call("pytest sympy/core/tests/test_arit.py", ok=False, output="bash: pytest: command not found")
    traces = [
        _trace(
            "1",
            ["sympy/core/mod.py"],
            [failed_runner, _call("bin/test sympy/core/tests/test_arit.py", activity="other")],
        ),
        _trace("2", ["sympy/core/mod.py"], [failed_runner, _call("./bin/test sympy/core/tests/test_arit.py -k mod")]),
        _trace("3", ["sympy/core/numbers.py"], [_call("python sympy/core/tests/test_numbers.py")]),
        # a test file the agent wrote for its task and did not hand in verifies nothing for the family
        _trace(
            "4",
            ["sympy/core/numbers.py"],
            [
                {
                    "name": "cat",
                    "args": {
                        "activity": "edit",
                        "path": "sympy/core/tests/test_tmp.py",
                        "command": "cat <<'EOF' > sympy/core/tests/test_tmp.py\nEOF",
                    },
                    "ok": True,
                },
                _call("bin/test sympy/core/tests/test_tmp.py"),
            ],
        ),
    ]
    [outcome] = mine_families(traces, min_traces=2)
    candidate = outcome.candidate
    assert candidate.verify_form == "bin/test {{test_file}}" and candidate.verify_command == "./bin/test {{test_file}}"
    assert traces[3].verify is None
    assert candidate.test_files == ["sympy/core/tests/test_arit.py"]
    assert "Test of this area: sympy/core/tests/test_arit.py." in candidate.preconditions
    assert candidate.evidence["verifyDisagreement"] == (
        "Resolved sessions disagree on the verify command: 2 ran `./bin/test {{test_file}}`, 1 `python {{test_file}}`."
    )
    assert candidate.evidence["verifyAlternatives"] == [
        {"form": "python {{test_file}}", "command": "python {{test_file}}", "traces": 1}
    ]
    assert any(candidate.evidence["verifyDisagreement"] in step for step in candidate.steps)
    assert [n.text for n in candidate.notes] == [
        "`pytest {{test_file}}` fails here (bash: pytest: command not found): run `./bin/test {{test_file}}` instead."
    ]


# ---------------------------------------------------------------------------------------------- round trip

PATHS = st.sampled_from(
    ["tests/test_a.py", "pkg/tests/test_b.py", "testing/test_c.py", "{{test_file}}", "tests/test_a.py::T::test_x"]
)
LABELS = st.sampled_from(["forms_tests", "auth_tests.test_views", "app.tests.T.test_y", "{{test_label}}"])
K_EXPRESSIONS = st.sampled_from(["test_x", "'not slow and fast'", '"a or b"'])
PREFIXES = st.sampled_from(["", "cd /testbed && ", "timeout 300 ", "PYTHONPATH=. ", "env A=1 ", "nice -n 5 "])
PYTHONS = st.sampled_from(["python", "python3", "python3.11", "/usr/bin/python3", "/opt/env/bin/python"])


@st.composite
def shell_test_commands(draw):
    prefix = draw(PREFIXES)
    python = draw(PYTHONS)
    kind = draw(
        st.sampled_from(
            ["pytest", "runtests", "bintest", "doctest", "unittest", "tox", "nox", "make", "manage", "django", "file"]
        )
    )
    options: list[str] = []
    if kind == "pytest":
        launcher = draw(st.sampled_from(["pytest", "py.test", f"{python} -m pytest"]))
        options = draw(st.lists(st.sampled_from(["-q", "-x", "-vv", "-p no:cacheprovider", "--tb=short", "-rA"])))
        if draw(st.booleans()):
            options.append(f"-k {draw(K_EXPRESSIONS)}")
        arguments = draw(st.lists(PATHS, max_size=3))
    elif kind == "runtests":
        launcher = draw(
            st.sampled_from(["./tests/runtests.py", f"{python} tests/runtests.py", "cd tests && ./runtests.py"])
        )
        options = draw(st.lists(st.sampled_from(["--settings=test_sqlite", "-v 2", "--parallel 1"])))
        arguments = draw(st.lists(LABELS, max_size=3))
    elif kind == "bintest":
        launcher = draw(st.sampled_from(["bin/test", "./bin/test", f"{python} bin/test"]))
        if draw(st.booleans()):
            options.append(f"-k {draw(K_EXPRESSIONS)}")
        arguments = draw(st.lists(PATHS, max_size=3))
    elif kind == "doctest":
        launcher = draw(st.sampled_from(["bin/doctest", f"{python} bin/doctest"]))
        arguments = draw(st.lists(st.sampled_from(["sympy/core/mod.py", "{{source_file}}"]), max_size=2))
    elif kind == "unittest":
        launcher = f"{python} -m unittest"
        options = draw(st.lists(st.sampled_from(["-v", "-f"])))
        arguments = draw(st.lists(st.one_of(LABELS, PATHS), max_size=2))
    elif kind == "tox":
        launcher = draw(st.sampled_from(["tox", f"{python} -m tox"]))
        arguments = [f"-e {draw(st.sampled_from(['py39', '{{tox_env}}']))}"]
        if draw(st.booleans()):
            arguments += ["--", *draw(st.lists(PATHS, min_size=1, max_size=2))]
    elif kind == "nox":
        launcher, arguments = "nox", [f"-s {draw(st.sampled_from(['tests', '{{nox_session}}']))}"]
    elif kind == "make":
        launcher, arguments = draw(st.sampled_from(["make test", "make check", "make tests"])), []
    elif kind == "manage":
        launcher = draw(st.sampled_from(["./manage.py test", f"{python} manage.py test"]))
        arguments = draw(st.lists(LABELS, max_size=2))
    elif kind == "django":
        launcher = f"{python} -m django test"
        options = draw(st.lists(st.sampled_from(["--settings=s", "-v 2"])))
        arguments = draw(st.lists(LABELS, max_size=2))
    else:
        launcher = python
        arguments = [draw(st.sampled_from(["sympy/core/tests/test_arit.py", "{{test_file}}"]))]
    words = [*arguments]
    for option in options:  # options anywhere among the test arguments
        words.insert(draw(st.integers(0, len(words))), option)
    if kind in ("tox", "nox", "file"):
        words = [*options, *arguments]
    return " ".join([prefix + launcher, *words])


@settings(max_examples=600, deadline=None)
@given(shell_test_commands())
def test_a_form_and_a_shown_command_parse_to_themselves(command):
    parsed = parse_test(command)
    assert parsed is not None, command
    again = parse_test(parsed.shown)
    assert again is not None and (again.form, again.shown) == (parsed.form, parsed.shown), command
    assert parse_test(parsed.form).form == parsed.form, command
    # the placeholder kinds of the form are the shown command's
    assert sorted(set(w for w in parsed.form.split() if w.startswith("{{"))) == sorted(
        set(w.split("::")[0] for w in parsed.shown.split() if w.startswith("{{"))
    )
    assert parse_test_command(command)[0] == parsed.form


def test_the_placeholder_of_a_candidate_survives_its_own_parser():
    assert parse_test_command("pytest {{test_file}}")[0] == "pytest {{test_file}}"
    assert parse_test_command("pytest tests/test_x.py")[0] == "pytest {{test_file}}"
    assert parse_test_command("./tests/runtests.py {{test_label}}")[0] == "tests/runtests.py {{test_label}}"
