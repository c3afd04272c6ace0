"""The import's faster reading of mini-swe-agent trajectories changes no session (issue 38,
bench/RESULTS.md): each faster step against the plain form it replaces, on generated texts and on
the real trajectories. Pure Python, no database."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from library.ingest.formats import coding
from tests.library.test_redaction_speed import _tokens_before

_PATCH = st.lists(
    st.sampled_from(["diff --git a/x.py b/x.py", "diff --git a/", " b/", "a/y", "\n", " ", "\t", "diff", "é", "+x"]),
    max_size=12,
).map("".join)


@settings(max_examples=1000, deadline=None)
@given(patch=st.one_of(_PATCH, st.text(max_size=30)))
def test_the_submitted_files_are_the_lines_that_start_a_file_of_the_diff(patch):
    before = re.compile(r"^diff --git a/\S+ b/(\S+)", re.M)
    assert coding.submitted_files(patch) == list(dict.fromkeys(before.findall(patch)))[: coding.MAX_SUBMITTED_FILES]


def _paths_before(tokens: list[str]) -> list[str]:
    """library/coding/activities._paths as it was (every argument looked at again, no cache)."""
    from library.coding.activities import _EXT_RE, _LABEL_RE, _PATHLIKE_RE, _strip_cwd

    found = []
    for token in tokens:
        if token.startswith("-") or not _PATHLIKE_RE.match(token) or token in (".", "..", "/"):
            continue
        if "/" in token or _EXT_RE.search(token) or _LABEL_RE.match(token):
            found.append(_strip_cwd(token))
    return found


def _program_before(tokens: list[str]) -> tuple[str, list[str]]:
    """library/coding/activities._program as it was (the assignment pattern tried on every word)."""
    from library.coding.activities import _ASSIGN_RE, _WRAPPERS

    index = 0
    while index < len(tokens):
        token = tokens[index]
        if _ASSIGN_RE.match(token):
            index += 1
            continue
        name = token.rsplit("/", 1)[-1]
        if name in _WRAPPERS or (name == "env" and index + 1 < len(tokens)):
            index += 1
            while index < len(tokens) and (tokens[index].startswith("-") or tokens[index].rstrip("smhd").isdigit()):
                index += 1
            continue
        return token, tokens[index + 1 :]
    return "", []


_WORDS = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "-n",
                "-",
                ".",
                "..",
                "/",
                "./",
                "/testbed/",
                "/testbed/x.py",
                "./a/b",
                "x.py",
                "a.b",
                "auth_tests.test_x",
                "a=1",
                "=",
                "A_B=x",
                "1a=2",
                "env",
                "timeout",
                "60s",
                "/usr/bin/python3",
                "sympy/core/numbers.py",
                "x.tar.gz",
                "é.py",
                "a b",
                "",
            ]
        ),
        st.text(alphabet="ab./-_=1é ", max_size=8),
    ),
    max_size=6,
)


@settings(max_examples=1000, deadline=None)
@given(tokens=_WORDS)
def test_the_arguments_paths_and_the_program_are_read_as_before(tokens):
    from library.coding import activities

    activities.clear_caches()
    assert activities._paths(tokens) == _paths_before(tokens)
    assert activities._paths(tokens) == _paths_before(tokens)  # and from the cache
    assert activities._program(tokens) == _program_before(tokens)


_PART_PIECES = st.sampled_from(
    [
        "sed -n ",
        "'81,93p'",
        "grep -n ",
        '"class Number"',
        '"a\\"b"',
        "'it\"s'",
        '"it\'s"',
        "''",
        '""',
        "'",
        '"',
        "\\",
        "\\'",
        "#",
        " #x",
        "a#b",
        " ",
        "\t",
        "x.py",
        "<<'EOF'",
        "é",
    ]
)


@settings(max_examples=2000, deadline=None)
@given(part=st.one_of(st.lists(_PART_PIECES, max_size=8).map("".join), st.text(max_size=20)))
def test_the_words_of_a_part_are_read_as_before(part):
    from library.coding import activities

    assert activities._tokens(part) == _tokens_before(part)


def _clean_tool_calls_before(value, errors, field_name="tool_calls"):
    """session_fields.clean_tool_calls as it was: each call's name normalised again."""
    from collections.abc import Mapping

    from library import safe_json
    from library.ingest.session_fields import FieldError, call_entries
    from library.tool_names import normalise_tool_name

    if value is None:
        return []
    calls = []
    for where, call in call_entries(value, errors, field_name, shape="{name, args, ok}", noun="calls"):
        name = normalise_tool_name(call.get("name"))
        if name is None:
            errors.append(
                FieldError(
                    f"{where}.name",
                    f"must be a tool name of at most 128 letters, digits, _ . - (after normalisation), got {call.get('name')!r:.80}",
                )
            )
            continue
        args = call.get("args", {})
        if isinstance(args, str):
            try:
                args = safe_json.parse(args) if args.strip() else {}
            except safe_json.JsonRefused as exc:
                errors.append(FieldError(f"{where}.args", f"is a string that {exc.message}"))
                continue
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            errors.append(FieldError(f"{where}.args", f"must be an object, got {type(args).__name__}"))
            continue
        ok = call.get("ok", True)
        if ok is not None and not isinstance(ok, bool):
            errors.append(FieldError(f"{where}.ok", f"must be true, false or null, got {ok!r}"))
            continue
        cleaned = {"name": name, "args": dict(args), "ok": ok}
        if call.get("result") is not None:
            cleaned["result"] = call["result"]
        calls.append(cleaned)
    return calls


_NAMES = st.sampled_from(["grep", "grep", "_", "__", " a b ", "a\n", "1x", "GET /x", "", None, 3, ["x"], "é"])
_CALL = st.one_of(
    st.fixed_dictionaries(
        {"name": _NAMES},
        optional={
            "args": st.sampled_from([{}, {"a": 1}, None, "", '{"a": 1}', "[1]", "{", 3]),
            "ok": st.sampled_from([True, False, None, 1]),
            "result": st.sampled_from([None, "r"]),
        },
    ),
    st.sampled_from([None, "x", 3]),
)


@settings(max_examples=1000, deadline=None)
@given(calls=st.one_of(st.lists(_CALL, max_size=8), st.sampled_from([None, "x", {}])))
def test_the_tool_calls_are_cleaned_as_before(calls):
    from library.ingest.session_fields import clean_tool_calls

    errors, errors_before = [], []
    assert clean_tool_calls(calls, errors) == _clean_tool_calls_before(calls, errors_before)
    assert errors == errors_before


_SHELL_PIECES = st.sampled_from(
    ["a", " b", "&&", "&", "||", "|", ";", "\n", "'", '"', "\\", "\\\n", "'x;y'", '"p|q"', " ", "<<EOF", "é"]
)


@settings(max_examples=2000, deadline=None)
@given(command=st.one_of(st.lists(_SHELL_PIECES, max_size=12).map("".join), st.text(max_size=20)))
def test_a_command_is_split_as_before(command):
    from library.coding.activities import _SIMPLE_COMMAND_RE, split_command

    if not ("&" in command or "|" in command or ";" in command or "\n" in command):
        before = [command.strip()] if command.strip() else []
    else:
        parts = (match.group(1).strip() for match in _SIMPLE_COMMAND_RE.finditer(command))
        before = [part for part in parts if part]
    assert split_command(command) == before
