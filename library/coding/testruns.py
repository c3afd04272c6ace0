"""Test invocations of a coding agent: a shell command parsed by the runner table (runners.py).

The *form* of a test command is what stays the same across tasks: the runner with the working
directory and the interpreter resolved (``python3 tests/runtests.py``, ``./tests/runtests.py``, ``cd
tests && ./runtests.py`` are all ``tests/runtests.py``; ``python -m pytest`` is ``pytest``), then one
placeholder per kind of test argument (``{{test_label}}``, ``{{test_file}}``, ``{{tox_env}}``);
options are not part of the form. The command *shown* is one to copy: the interpreter and the
environment prefix kept, the runner from the repository's root, each test argument as its
placeholder, the options but those that pick one task's tests (``-k``). A form and a shown command
parse to themselves (the round trip a candidate's verify command needs: it is written with
placeholders and compared by its form).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from procmem_client.coding import target_role

from .activities import split_command, strip_heredocs
from .runners import (
    INTERPRETER_RE,
    INTERPRETER_VALUE_OPTIONS,
    RUNNER_WORD_RE,
    TEST_FILE_SCRIPT,
    Runner,
    argument_kind,
    placeholder_kind,
    runner_for_module,
    runner_for_program,
    runner_for_script,
    test_file_of,
)

_ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = frozenset({"timeout", "time", "nice", "nohup", "env", "sudo", "command", "exec", "stdbuf"})
_CWD_PREFIXES = ("/testbed/", "/testbed")
_REDIRECT_RE = re.compile(r"^(?:\d*>>?&?|&>>?|<)")
_SAFE_WORD_RE = re.compile(r"^[\w@%+=:,./{}\-]+$")
_FAILURE_RE = re.compile(r"Error|No module|not found|cannot|No such")
_USAGE_RE = re.compile(
    r"no tests ran|unrecognized arguments|^usage:|ERROR: not found|found no collectors|error: argument|"
    r"file or directory not found|no match in any of",
    re.I | re.M,
)
_LEADING_PATH_RE = re.compile(r"^/\S+: ")


@dataclass(frozen=True)
class ParsedTest:
    """One test command: its form, runner, the command shown, the test modules and files it names, how
    the runner was launched (`invocation`: the shown program with the interpreter's path) and its options."""

    form: str
    runner: str
    shown: str
    modules: tuple[str, ...]
    files: tuple[str, ...]
    invocation: str
    options: tuple[str, ...]


@dataclass(frozen=True)
class TestRun:
    """One test invocation of a trace."""

    __test__ = False  # not a test class (pytest collects Test* names)

    form: str
    runner: str
    shown: str
    modules: tuple[str, ...]
    ok: bool | None
    failure: str = ""  # the first error line of a failed run's output ('' when not kept)
    invocation: str = ""
    files: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    usage_error: bool = False  # the runner refused the arguments (nothing collected, an unknown option)
    temporary: bool = False  # it ran only files the agent created in the session and did not hand in


def _words(part: str) -> list[str]:
    try:
        return shlex.split(part, comments=True)
    except ValueError:  # an unclosed quote: words as written
        return part.split()


def normal_path(path: str, cwd: str = "") -> str:
    """A path from the repository's root: /testbed/ and ./ dropped, joined to the working directory."""
    for prefix in _CWD_PREFIXES:
        if path.startswith(prefix):
            path = path[len(prefix) :]
            break
    joined = (
        posixpath.normpath(posixpath.join(cwd, path)) if cwd and not path.startswith("/") else posixpath.normpath(path)
    )
    return joined.lstrip("./") if joined.startswith("./") else ("" if joined == "." else joined)


def test_module(argument: str) -> str:
    """The test module a runner argument names: forms_tests.tests.Test → forms_tests,
    tests/forms_tests/test_x.py::T → forms_tests, sympy/core/tests/test_arit.py → test_arit."""
    path = argument.split("::", 1)[0]
    if placeholder_kind(path):
        return ""
    if "/" in path or path.endswith(".py"):
        parts = [p for p in path.split("/") if p and p not in (".", "..")]
        if parts and parts[0] in ("tests", "test") and len(parts) > 1:
            return parts[1].removesuffix(".py")
        return parts[-1].removesuffix(".py") if parts else ""
    return path.split(".", 1)[0]


def _quote(word: str) -> str:
    return word if _SAFE_WORD_RE.match(word) else shlex.quote(word)


def parse_test_command(command: str) -> tuple[str, str, str, tuple[str, ...]] | None:
    """(form, runner, command shown, test modules) of a test command; None when no part runs tests."""
    parsed = parse_test(command)
    return (parsed.form, parsed.runner, parsed.shown, parsed.modules) if parsed else None


@lru_cache(maxsize=16384)
def parse_test(command: str) -> ParsedTest | None:
    """The first part of a shell command that runs a runner of the table (runners.py), parsed; None
    when no part does. Cached: agents repeat their test commands."""
    if not command or not RUNNER_WORD_RE.search(command):
        return None
    text, _bodies = strip_heredocs(command.replace("\\\n", " "))
    cwd = ""
    for part in split_command(text):
        words = [w for w in _words(part)]
        if not words:
            continue
        if words[0] == "cd" and len(words) > 1:
            cwd = normal_path(words[1], cwd)
            continue
        parsed = _parse_part(words, cwd)
        if parsed is not None:
            return parsed
    return None


def _drop_redirections(words: list[str]) -> list[str]:
    """The words without redirections: 2>&1, >out.log, > out.log (its target too)."""
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        match = _REDIRECT_RE.match(word)
        if match:
            skip = match.group(0) == word and not word.endswith("&")
            continue
        kept.append(word)
    return kept


def _parse_part(words: list[str], cwd: str) -> ParsedTest | None:
    words = _drop_redirections(words)
    index = 0
    env: list[str] = []
    while index < len(words) and (_ASSIGN_RE.match(words[index]) or words[index].rsplit("/", 1)[-1] in _WRAPPERS):
        if _ASSIGN_RE.match(words[index]):
            env.append(words[index])
        index += 1
        while index < len(words) and (words[index].startswith("-") or words[index].rstrip("smhd").isdigit()):
            index += 1
    if index >= len(words):
        return None
    program = words[index]
    rest = words[index + 1 :]
    runner: Runner | None
    name = program.rsplit("/", 1)[-1]
    if INTERPRETER_RE.match(name):
        at = 0
        while at < len(rest) and rest[at].startswith("-") and rest[at] != "-m":
            if rest[at] == "-c":
                return None  # python -c: code, not a runner
            at += 2 if rest[at] in INTERPRETER_VALUE_OPTIONS else 1
        if at < len(rest) and rest[at] == "-m":
            module = rest[at + 1] if at + 1 < len(rest) else ""
            rest = rest[at + 2 :]
            runner = runner_for_module(module, rest[0] if rest else "")
            if runner is None:
                return None
            launcher = f"{program} -m {module}"
            runner_name = runner.name
        else:
            script = rest[at] if at < len(rest) else ""
            if not script:
                return None
            rest = rest[at + 1 :]
            normal = normal_path(script, cwd)
            runner = runner_for_script(normal, rest[0] if rest else "")
            if runner is not None:
                launcher = f"{program} {normal}"
                runner_name = _script_runner_name(runner, normal)
            elif _is_repository_test_file(script, normal):
                runner, runner_name = TEST_FILE_SCRIPT, TEST_FILE_SCRIPT.name
                launcher = program
                rest = [script]  # the script's own arguments are not test arguments
            else:
                return None
    else:
        normal = normal_path(program, cwd) if "/" in program else program
        runner = runner_for_program(program, normal, rest[0] if rest else "")
        if runner is None:
            return None
        if name in runner.programs:  # run by name: pytest, tox, make
            runner_name, launcher = runner.name, program
        else:  # a script of the repository: ./bin/test, ./tests/runtests.py
            runner_name, launcher = _script_runner_name(runner, normal), "./" + normal
    if runner.subcommands:
        subcommand, rest = rest[0], rest[1:]
        launcher = f"{launcher} {subcommand}"
        runner_name = runner.name if (runner.programs or runner.modules) else f"{runner_name} {subcommand}"
    if any(word.split("=", 1)[0] in runner.info_options for word in rest if word.startswith("-")):
        return None  # pytest --version, tox -l: no test run
    return _arguments(runner, runner_name, launcher, env, rest, cwd)


def _script_runner_name(runner: Runner, normal: str) -> str:
    if runner.subcommands:
        return normal
    return normal if "/" in normal or runner.name == normal else runner.name


def _is_repository_test_file(script: str, normal: str) -> bool:
    """A test file of the repository run as a script (sympy/core/tests/test_arit.py), or the
    {{test_file}} placeholder; not a script in the working directory's root (the agent's own)."""
    if placeholder_kind(script) == "test_file":
        return True

    parts = normal.split("/")
    return len(parts) > 1 and normal.endswith(".py") and target_role(normal) == "test" and parts[0] not in ("tmp",)


def _arguments(
    runner: Runner, runner_name: str, launcher: str, env: list[str], rest: list[str], cwd: str
) -> ParsedTest:
    placeholders: list[str] = []
    shown_args: list[str] = []
    modules: list[str] = []
    files: list[str] = []
    options: list[str] = []
    pyargs = "--pyargs" in rest
    skip_value: str | None = None
    after_dashes = False
    for position, word in enumerate(rest):
        if skip_value is not None:
            option, skip_value = skip_value, None
            if option in runner.session_option:
                kind = placeholder_kind(word) or runner.session_kind
                _add(placeholders, "{{" + kind + "}}")
                shown_args.append("{{" + kind + "}}")
                continue
            options.append(f"{option} {word}")
            if option not in runner.selection_options:
                shown_args.append(_quote(word))
            continue
        if word == "--" and not after_dashes:
            after_dashes = True
            shown_args.append(word)
            continue
        if word.startswith("-") and not after_dashes and not placeholder_kind(word):
            option = word.split("=", 1)[0]
            following = rest[position + 1] if position + 1 < len(rest) else ""
            takes_value = (
                "=" not in word
                and option in runner.value_options
                and (option not in ("-v", "--verbosity") or following.isdigit())
                and position + 1 < len(rest)
            )
            if takes_value:
                skip_value = option
                if option not in runner.selection_options:
                    shown_args.append(word)
                continue
            options.append(word)
            if option not in runner.selection_options and not _attached_selection(word, runner):
                shown_args.append(word)
            continue
        if runner.maps == "none" and not after_dashes and not placeholder_kind(word):
            continue  # make test VAR=x: no test argument
        if "=" in word and not placeholder_kind(word):
            continue
        kind = argument_kind(runner, word, pyargs=pyargs)
        placeholder = "{{" + kind + "}}"
        _add(placeholders, placeholder)
        if not shown_args or shown_args[-1] != placeholder:
            shown_args.append(placeholder)
        test_file = test_file_of(runner, word, pyargs=pyargs)
        path_like = "/" in word.split("::", 1)[0] or word.split("::", 1)[0].endswith(".py")
        if test_file:
            test_file = normal_path(test_file, cwd if path_like else "")
            if test_file and test_file not in files:
                files.append(test_file)
        dotted = not path_like and (runner.maps == "dotted" or pyargs)
        module = test_file.rsplit("/", 1)[-1].removesuffix(".py") if dotted and test_file else test_module(word)
        if module and module not in modules:
            modules.append(module)
    if shown_args and shown_args[-1] == "--":
        shown_args.pop()
    form = " ".join([runner_name, *placeholders])
    kept_env = [_quote(w) for w in env if not w.startswith("PYTHONPATH=$")]
    shown = " ".join([*kept_env, launcher, *shown_args])
    invocation = " ".join([*(w.split("=", 1)[0] + "=" for w in env), launcher])
    return ParsedTest(form, runner_name, shown, tuple(modules), tuple(files), invocation, tuple(sorted(options)))


def _attached_selection(word: str, runner: Runner) -> bool:
    """-kexpr: a selection option with its value attached."""
    return any(len(option) == 2 and word.startswith(option) and len(word) > 2 for option in runner.selection_options)


def _add(placeholders: list[str], placeholder: str) -> None:
    if placeholder not in placeholders:
        placeholders.append(placeholder)


def _args(call: Mapping[str, Any]) -> Mapping[str, Any]:
    args = call.get("args")
    return args if isinstance(args, Mapping) else {}


def test_run_of(call: Mapping[str, Any]) -> TestRun | None:
    """The test invocation of one stored call: any command a runner of the table runs (whatever
    activity the import gave it: sympy's bin/test was "other" before the table knew it)."""
    args = _args(call)
    command = args.get("command")
    if not isinstance(command, str) or args.get("activity") in ("edit", "submit", "search", "read"):
        return None
    parsed = parse_test(command)
    if parsed is None:
        return None
    ok = call.get("ok")
    failure = ""
    output = args.get("output") if isinstance(args.get("output"), str) else ""
    if ok is False and output:
        failure = next((line.strip() for line in output.splitlines() if _FAILURE_RE.search(line)), "")
        # "/opt/…/bin/python3: No module named …": the message, not the interpreter's path
        failure = _LEADING_PATH_RE.sub("", failure)
        failure = failure if len(failure) <= 100 else failure[:99] + "…"
    return TestRun(
        parsed.form,
        parsed.runner,
        parsed.shown,
        parsed.modules,
        ok if isinstance(ok, bool) else None,
        failure,
        parsed.invocation,
        parsed.files,
        parsed.options,
        bool(ok is False and output and _USAGE_RE.search(output)),
    )
