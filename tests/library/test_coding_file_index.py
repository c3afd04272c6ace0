"""The files a task's words point to, from what a repository's other sessions saw
(library/coding/file_index.py): definitions read from grep lines and printed files, paths from
commands and outputs, ranked by the task's identifiers (IDF over the known files) and the paths or
modules it names; and the measure's leave-one-task-out use of them."""

from __future__ import annotations

from library.coding.families import Trace
from library.coding.file_index import FileIndex, observations
from library.coding.measure import measure


def call(command: str, output: str = "", activity: str = "read") -> dict:
    return {"name": "shell", "args": {"activity": activity, "command": command, "output": output}, "ok": True}


GREP = call(
    'grep -rn "class Rational" sympy',
    "sympy/core/numbers.py:1483:class Rational(Number):\nsympy/polys/domains/rationalfield.py:12:class RationalField(Field):",
)
CAT = call("sed -n '1,40p' sympy/printing/str.py", "class StrPrinter(Printer):\n    def _print_Rational(self, expr):")
TRACEBACK = call("python reproduce.py", 'File "/testbed/sympy/sets/sets.py", line 3, in <module>')


def test_a_session_sees_definitions_in_grep_lines_and_printed_files_and_paths_anywhere():
    seen = observations([GREP, CAT, TRACEBACK, call("cat tests/test_x.py", "class TestX:")])
    assert seen.definitions == {
        "Rational": {"sympy/core/numbers.py"},
        "RationalField": {"sympy/polys/domains/rationalfield.py"},
        "StrPrinter": {"sympy/printing/str.py"},
        "_print_Rational": {"sympy/printing/str.py"},
    }  # a test file is not a source file: its definitions are not kept
    assert seen.files == {
        "sympy/core/numbers.py",
        "sympy/polys/domains/rationalfield.py",
        "sympy/printing/str.py",
        "sympy/sets/sets.py",
    }


def test_the_index_ranks_files_by_the_tasks_identifiers_and_the_paths_it_names():
    index = FileIndex([observations([GREP]), observations([CAT, TRACEBACK])], edited=["sympy/core/expr.py"])
    assert index.files == {
        "sympy/core/numbers.py",
        "sympy/polys/domains/rationalfield.py",
        "sympy/printing/str.py",
        "sympy/sets/sets.py",
        "sympy/core/expr.py",
    }
    task = "`Rational('0.5')` prints wrong with StrPrinter; see sympy.core.expr"
    assert index.files_for(task, 3) == ["sympy/core/expr.py", "sympy/core/numbers.py", "sympy/printing/str.py"]
    assert index.files_for(task, 1) == ["sympy/core/expr.py"]  # a module the task names (3) before one symbol
    assert index.files_for("S.false is wrong", 6) == []  # shorter than 4 letters, or defined nowhere seen
    assert index.files_for("Rational", 0) == []


def _trace(key: str, calls: list[dict], edited: tuple[str, ...]) -> Trace:
    verify = call("./bin/test sympy/core/tests/test_numbers.py", "ok", activity="test")
    return Trace(key, key, f"task {key}", True, [*calls, verify], edited)


def test_the_measure_names_the_tasks_files_from_the_other_tasks_observations_only():
    own = Trace(
        "sympy__sympy-3",
        "sympy__sympy-3",
        "Rational(1, 2) is wrong",
        True,
        [GREP, call("./bin/test sympy/core/tests/test_numbers.py", "ok", activity="test")],
        ("sympy/core/numbers.py",),
    )
    others = [
        _trace("sympy__sympy-1", [CAT], ("sympy/core/add.py",)),
        _trace("sympy__sympy-2", [CAT], ("sympy/core/add.py",)),
    ]

    def recall(records, task):
        return records[:1]

    def named(traces, task_files):
        results = measure(traces, recall, task_files=task_files).results
        return next(r.edited_named for r in results if r.session_id == own.session_id)

    # the own session's grep saw Rational in numbers.py: it does not count for its own task
    assert named([own, *others], 6) == 0
    # another task's session that saw it does
    seen_elsewhere = _trace("sympy__sympy-4", [GREP], ("sympy/core/mul.py",))
    assert named([own, *others, seen_elsewhere], 6) == 1
    assert named([own, *others, seen_elsewhere], 0) == 0  # the family's files alone: add.py, mul.py
