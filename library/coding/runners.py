"""The test runners of common Python repositories, as one table the test-command parser reads (pure Python).

Each `Runner` says how a command reaches it (a program name, ``python -m <module>``, a script of the
repository run directly or by an interpreter, a subcommand), which options take a value, which pick
one task's tests (left out of a family's command), the placeholder kind of each test argument, and how
a test argument maps to a test file. library/coding/families.py parses a command with it; nothing else
in the parser names a runner.

    pytest          pytest, py.test, python -m pytest   paths and node ids → {{test_file}};
                    (--pyargs: dotted modules → {{test_label}}); -k and --deselect pick one task's tests
    Django          tests/runtests.py (any runtests.py), labels → {{test_label}} (forms_tests.tests →
                    tests/forms_tests/tests), paths → {{test_file}}; manage.py test; python -m django test
    sympy           bin/test (paths → {{test_file}}, keywords → {{test_label}}), bin/doctest (module files
                    → {{source_file}})
    unittest        python -m unittest [discover]: dotted labels → {{test_label}} (a.b.test_c →
                    a/b/test_c.py), paths → {{test_file}}
    nose            nosetests, python -m nose
    tox, nox        a session by -e / -s → {{tox_env}} / {{nox_session}}; arguments after ``--`` are the
                    runner's own (paths → {{test_file}})
    make            make test, make check, make tests: no test argument
    a test file     python path/to/tests/test_x.py (a test file of the repository run as a script) →
                    ``python {{test_file}}``

A script the agent wrote for one task (``python reproduce_issue.py``, ``python test_fix.py``,
``bash run_tests.sh``) is no runner: only the table's programs, modules and scripts are, and a test file
run as a script only when it lies in the repository's tests (not the working directory's root).
``--version``/``--help`` and listing options make a command no test run.

Mistake kinds (what a failed invocation corrected by a later passing one got wrong), the same for
every runner: ``runner`` (another runner passed), ``invocation`` (the same runner launched another way:
``/usr/bin/python3 -m pytest`` → ``pytest``), ``test path`` (other test files or modules), ``options``
(the same tests, other options or selection: ``pytest x.py -k t`` → ``pytest x.py::T::t``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

INTERPRETER_RE = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)?)?$")
PLACEHOLDER_RE = re.compile(r"^\{\{([a-z_]+)\}\}")
# options of the interpreter itself that take a value (python -W error -X dev -m pytest)
INTERPRETER_VALUE_OPTIONS = frozenset({"-W", "-X", "-Q"})


@dataclass(frozen=True)
class Runner:
    """One runner. `name` starts every form it gives; a script runner's name is the script's path."""

    name: str
    programs: tuple[str, ...] = ()  # run by name: pytest
    modules: tuple[str, ...] = ()  # python -m <module>
    scripts: tuple[str, ...] = ()  # repository scripts, by path (bin/test) or basename (runtests.py)
    subcommands: tuple[str, ...] = ()  # the first argument that makes it a test run (manage.py test)
    path_kind: str = "test_file"  # the placeholder of a path argument
    label_kind: str = "test_label"  # the placeholder of a dotted label or keyword
    labels_are_paths: bool = False  # pytest: a bare word is a directory or file
    value_options: frozenset[str] = frozenset()
    selection_options: frozenset[str] = frozenset()  # pick one task's tests: not in a family's command
    session_option: tuple[str, ...] = ()  # tox -e, nox -s: its value is the test argument
    session_kind: str = ""
    maps: str = "path"  # how a test argument maps to a test file: path, django-label, dotted, none
    info_options: frozenset[str] = frozenset({"--version", "-V", "--help", "-h"})
    test_file_script: bool = False  # the "runner" is a test file run by an interpreter


_PYTEST_VALUES = frozenset(
    {
        "-k",
        "-m",
        "-p",
        "-c",
        "-o",
        "-n",
        "-W",
        "--rootdir",
        "--deselect",
        "--ignore",
        "--ignore-glob",
        "--tb",
        "--maxfail",
        "--durations",
        "--log-level",
        "--log-cli-level",
        "--junitxml",
        "--basetemp",
        "--confcutdir",
        "--cov",
        "--import-mode",
        "--capture",
        "--color",
        "--dist",
        "--timeout",
    }
)
_DJANGO_VALUES = frozenset(
    {"--settings", "--parallel", "--tag", "--exclude-tag", "-k", "--verbosity", "-v", "--start-at", "--start-after"}
)

RUNNERS: tuple[Runner, ...] = (
    Runner(
        "pytest",
        programs=("pytest", "py.test"),
        modules=("pytest", "py.test"),
        labels_are_paths=True,
        value_options=_PYTEST_VALUES,
        selection_options=frozenset({"-k", "--deselect", "--lf", "--last-failed"}),
        info_options=frozenset(
            {"--version", "-V", "--help", "-h", "--fixtures", "--markers", "--co", "--collect-only"}
        ),
    ),
    Runner(
        "tests/runtests.py",
        scripts=("runtests.py", "run_tests.py"),
        value_options=_DJANGO_VALUES,
        selection_options=frozenset({"-k", "--start-at", "--start-after"}),
        maps="django-label",
    ),
    Runner("manage.py test", scripts=("manage.py",), subcommands=("test",), value_options=_DJANGO_VALUES),
    # a module runner's name is also read as a program, so that its form parses to itself
    Runner(
        "django test", programs=("django",), modules=("django",), subcommands=("test",), value_options=_DJANGO_VALUES
    ),
    # the runner that is not one (python -m django.test has no __main__): known, so that its failure is a note
    Runner("django.test", programs=("django.test",), modules=("django.test",)),
    Runner(
        "bin/test",
        scripts=("bin/test",),
        value_options=frozenset({"-k", "--seed", "--timeout", "--split", "--verbose-level", "-C"}),
        selection_options=frozenset({"-k"}),
    ),
    Runner(
        "bin/doctest",
        scripts=("bin/doctest",),
        path_kind="source_file",
        value_options=frozenset({"--split"}),
    ),
    Runner(
        "unittest",
        programs=("unittest",),
        modules=("unittest",),
        value_options=frozenset({"-k", "-p", "-s", "-t"}),
        selection_options=frozenset({"-k"}),
        maps="dotted",
    ),
    Runner("nosetests", programs=("nosetests",), modules=("nose",), maps="dotted"),
    Runner(
        "tox",
        programs=("tox",),
        modules=("tox",),
        value_options=frozenset({"-e", "-c", "-p", "--parallel", "-x", "--override"}),
        session_option=("-e",),
        session_kind="tox_env",
        info_options=frozenset(
            {"--version", "-h", "--help", "-l", "--listenvs", "-a", "--listenvs-all", "--showconfig"}
        ),
        maps="none",
    ),
    Runner(
        "nox",
        programs=("nox",),
        modules=("nox",),
        value_options=frozenset({"-s", "--session", "--sessions", "-p", "--python", "-k", "-t", "-f"}),
        session_option=("-s", "--session", "--sessions"),
        session_kind="nox_session",
        info_options=frozenset({"--version", "-h", "--help", "-l", "--list", "--list-sessions"}),
        maps="none",
    ),
    Runner("make test", programs=("make",), subcommands=("test", "tests"), maps="none"),
    Runner("make check", programs=("make",), subcommands=("check",), maps="none"),
    Runner("python", test_file_script=True, value_options=frozenset(), maps="path"),
)
BY_NAME = {runner.name: runner for runner in RUNNERS}
TEST_FILE_SCRIPT = BY_NAME["python"]
# the words any runner needs to appear in a command: a fast check before parsing it
RUNNER_WORD_RE = re.compile(
    r"pytest|py\.test|runtests|run_tests|manage\.py|django|bin/test|bin/doctest|unittest|nose|tox|nox|make|"
    r"test|\{\{test_file\}\}"
)


def runner_for_program(program_path: str, normal: str, first_argument: str) -> Runner | None:
    """The runner a program run by name or path is: pytest, ./bin/test, tests/runtests.py, make test."""
    name = program_path.rsplit("/", 1)[-1]
    for runner in RUNNERS:
        if name in runner.programs and (not runner.subcommands or first_argument in runner.subcommands):
            return runner
    return runner_for_script(normal, first_argument)


def runner_for_script(normal: str, first_argument: str) -> Runner | None:
    """The runner a repository script is (by its path from the repository's root)."""
    name = normal.rsplit("/", 1)[-1]
    for runner in RUNNERS:
        for script in runner.scripts:
            matched = normal == script or normal.endswith("/" + script) if "/" in script else name == script
            if matched and (not runner.subcommands or first_argument in runner.subcommands):
                return runner
    return None


def runner_for_module(module: str, first_argument: str) -> Runner | None:
    for runner in RUNNERS:
        if module in runner.modules and (not runner.subcommands or first_argument in runner.subcommands):
            return runner
    return None


def placeholder_kind(word: str) -> str:
    """The kind of a placeholder argument ({{test_file}}::T → test_file), '' for a concrete one."""
    match = PLACEHOLDER_RE.match(word)
    return match.group(1) if match else ""


def argument_kind(runner: Runner, word: str, *, pyargs: bool = False) -> str:
    """The placeholder kind of one test argument of `runner`."""
    kind = placeholder_kind(word)
    if kind:
        return kind
    path = word.split("::", 1)[0]
    if "/" in path or path.endswith(".py") or "::" in word:
        return runner.path_kind
    if runner.labels_are_paths and not pyargs:
        return runner.path_kind
    return runner.label_kind


def test_file_of(runner: Runner, word: str, *, pyargs: bool = False) -> str:
    """The test file (or directory) a concrete test argument names, by the runner's mapping:
    pytest tests/x.py::T → tests/x.py; runtests.py forms_tests.tests → tests/forms_tests/tests;
    unittest a.b.test_c → a/b/test_c.py (a dotted name's trailing Class.method parts are dropped)."""
    if placeholder_kind(word):
        return ""
    path = word.split("::", 1)[0].removeprefix("./")
    if "/" in path or path.endswith(".py"):
        return path.rstrip("/")
    if runner.maps not in ("django-label", "dotted") and not (pyargs and runner.name == "pytest"):
        return ""
    parts = path.split(".")
    cut = next((i for i, part in enumerate(parts) if part[:1].isupper()), len(parts))  # a Class.method
    parts = parts[:cut] or parts[:1]
    module = "/".join(parts) + (".py" if parts[-1].startswith("test") else "")
    return "tests/" + module if runner.maps == "django-label" else module


def mistake_kind(failed, passed) -> str:
    """Which kind of mistake the passing invocation corrected in the failed one ('' when none: the
    same command failed because the code was not right yet). Both are families.TestRun."""
    if failed.runner != passed.runner:
        return "runner"
    failed_tests = set(failed.files) | set(failed.modules)
    passed_tests = set(passed.files) | set(passed.modules)
    if failed_tests and passed_tests and not failed_tests & passed_tests:
        return "test path"  # before the invocation: ./tests/runtests.py and python3 tests/runtests.py both work
    if failed.invocation != passed.invocation:
        return "invocation"
    if failed.options != passed.options and failed.usage_error:
        return "options"
    return ""
