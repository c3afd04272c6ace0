"""Coding procedures on the agent's side, without Django: the exact retriever on targets and commands,
a selected procedure's producer pulled in (hubs cut), the recall pointer's bound, and recall on the
prompt and again after the first three tool calls."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procmem_client import ProcmemClient
from procmem_client.coding import (
    POINTER_MAX_TOKENS,
    query_terms,
    recall_pointer,
    recall_query,
    record_terms,
    tool_call_text,
)
from procmem_client.ranking import EmbeddingCache, Ranker, SelectionConfig
from procmem_client.rendering import estimate_tokens


def coding(
    key: str, *, verify: str, steps: list[str], pre: list[str] = (), post: list[str] = (), version: int = 1
) -> dict:
    return {
        "id": key,
        "version": version,
        "status": "active",
        "intent": "fix_issue",
        "appliesWhen": f"A coding task asks to fix an issue ({key}). It names a bug.",
        "steps": steps,
        "requiredTools": ["python"],
        "forbiddenActions": [],
        "evidence": {},
        "approvedBy": "alice",
        "approvedAt": "2026-11-30T10:00:00Z",
        **({"preconditions": list(pre)} if pre else {}),
        **({"postconditions": list(post)} if post else {}),
        "verifyCommand": verify,
    }


FIX = coding(
    "fix.reproduce_edit_test",
    verify="./tests/runtests.py {{test_label}} -v 2",
    steps=[
        "Write a small script that reproduces the issue and run it ({{script}}).",
        "Edit the source file ({{source_file}}).",
        "Run the tests of the changed module: ./tests/runtests.py {{test_label}} -v 2.",
    ],
    pre=["A script that reproduces the issue ({{script}}) runs and shows the bug before the edit."],
    post=[
        "The edited source file ({{source_file}}).",
        "The verify command passes: ./tests/runtests.py {{test_label}} -v 2",
    ],
)
REPRO = coding(
    "reproduce.script",
    verify="python {{script}}",
    steps=["Write a script that shows the bug.", "Run it."],
    post=["A script that reproduces the issue ({{script}})."],
)
DOCS = coding(
    "docs.update",
    verify="make -C docs html",
    steps=["Edit the documentation ({{doc_file}}).", "Build the docs: make -C docs html."],
    post=["The edited documentation ({{doc_file}})."],
)
REFUND = {
    "id": "refund.over_limit",
    "version": 1,
    "status": "active",
    "intent": "refund",
    "appliesWhen": "A refund above the limit.",
    "steps": ["Create an approval."],
    "requiredTools": ["createApproval"],
    "forbiddenActions": [],
    "evidence": {},
    "approvedBy": None,
    "approvedAt": None,
}


def exact_only_ranker() -> Ranker:
    """No semantic signal (every text on its own axis, the tasks on a third): only the exact retriever
    can make a procedure eligible."""

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(
            [[0.0, 0.0, 1.0] if t.startswith("TASK") else [1.0, 0.0, 0.0] for t in texts], dtype=np.float32
        )

    return Ranker(cache=EmbeddingCache(embed), config=SelectionConfig(use_steps=False))


def ids(selection) -> list[str]:
    return [p["id"] for p in selection["injected"]]


def test_coding_terms_are_paths_labels_programs_and_their_role_placeholders():
    terms = query_terms(
        "cd /testbed && ./tests/runtests.py forms_tests -v 2; cat /testbed/django/forms/fields.py; python reproduce.py"
    )
    assert {
        "tests/runtests.py",
        "runtests.py",
        "forms_tests",
        "{{test_label}}",
        "django/forms/fields.py",
        "{{source_file}}",
        "reproduce.py",
        "{{script}}",
    } <= terms
    assert "testbed" not in terms and "-v" not in terms and "cd" not in terms
    assert {"runtests.py", "{{test_label}}", "{{script}}", "{{source_file}}"} <= record_terms(FIX)
    assert record_terms(REFUND) == set()  # not a coding procedure: the exact retriever reads it as before


def test_exact_retriever_matches_the_tool_calls_targets_and_commands():
    index = exact_only_ranker().index([FIX, DOCS, REFUND])
    assert ids(index.select(task="TASK The form rejects valid input.", cap=2)) == []  # nothing named: nothing recalled
    calls = [
        "grep -rn clean django/forms/",
        "cat django/forms/fields.py",
        "python reproduce.py",
        "./tests/runtests.py forms_tests",
    ]
    assert ids(index.select(task="TASK " + recall_query("The form rejects valid input.", calls), cap=1)) == [
        "fix.reproduce_edit_test"
    ]
    assert ids(
        index.select(task="TASK " + recall_query("Fix the typo", ["sed -n 1,40p docs/ref/forms.txt"]), cap=1)
    ) == ["docs.update"]
    ranking = index.rank(task="TASK python reproduce.py && ./tests/runtests.py forms_tests", cap=1)
    assert ranking[0]["id"] == "fix.reproduce_edit_test" and "runtests.py" in ranking[0]["matched_identifiers"]


def test_selection_pulls_in_the_producer_of_what_a_selected_procedure_consumes():
    index = exact_only_ranker().index([FIX, REPRO, DOCS, REFUND])
    task = "TASK ./tests/runtests.py forms_tests"  # names the fix procedure's verify command only
    selection = index.select(task=task, cap=2, k=4)
    assert ids(selection) == ["fix.reproduce_edit_test", "reproduce.script"]
    assert selection["pulledIn"] == [
        {"id": "reproduce.script", "version": 1, "forId": "fix.reproduce_edit_test", "artefacts": ["script"]}
    ]
    assert [c["id"] for c in selection["ranked"] if c["injected"]] == ["fix.reproduce_edit_test", "reproduce.script"]
    assert not next(c for c in selection["ranked"] if c["id"] == "reproduce.script")[
        "eligible"
    ]  # pulled in, not eligible
    explained = {c["id"]: c for c in index.rank(task=task, cap=2)}
    assert explained["reproduce.script"]["injected"] and explained["reproduce.script"]["reasons"][-1].startswith(
        "pulled in: produces script"
    )
    # the cap decides: with room for one, only the selected procedure
    one = index.select(task=task, cap=1)
    assert ids(one) == ["fix.reproduce_edit_test"] and "pulledIn" not in one
    # a procedure with no producer pulls in nothing
    assert "pulledIn" not in index.select(task="TASK docs/ref/forms.txt", cap=2)


def test_a_hub_pulls_in_nothing_and_is_never_pulled_in():
    # the script producer feeds three of eight other procedures (> 15 %): a hub, its links cut
    consumers = [
        coding(f"fix.c{i}", verify=f"./tests/runtests.py t{i}_tests", steps=["Run it."], pre=["A script ({{script}})."])
        for i in range(3)
    ]
    others = [
        coding(f"other.o{i}", verify=f"make o{i}", steps=["Build."], post=["A file ({{doc_file}})."]) for i in range(5)
    ]
    index = exact_only_ranker().index([REPRO, *consumers, *others])
    selection = index.select(task="TASK ./tests/runtests.py t1_tests", cap=5)  # room for the producer
    assert sorted(ids(selection)) == ["fix.c0", "fix.c1", "fix.c2"] and "pulledIn" not in selection


def test_tool_calls_become_query_lines():
    assert tool_call_text("ls django/forms") == "ls django/forms"
    assert (
        tool_call_text({"tool": "Read", "target": "django/forms/fields.py", "result": 0})
        == "django/forms/fields.py Read"
    )
    assert (
        tool_call_text({"name": "bash", "args": {"command": "pytest tests/test_x.py"}}) == "bash pytest tests/test_x.py"
    )
    assert tool_call_text({"tool": "Edit", "input": {"file_path": "a/b.py"}}) == "Edit a/b.py"
    assert tool_call_text(None) == "" and tool_call_text({"ok": True}) == ""
    assert recall_query(" Fix it. ", ["cat a.py", {}, {"command": "python r.py"}]) == "Fix it.\ncat a.py\npython r.py"


def test_the_recall_pointer_names_id_when_and_verify_in_a_few_tokens():
    pointer = recall_pointer(FIX)
    assert pointer["id"] == "fix.reproduce_edit_test" and pointer["version"] == 1
    assert pointer["whenToUse"] == "A coding task asks to fix an issue (fix.reproduce_edit_test)."  # the first sentence
    assert pointer["verifyCommand"] == "./tests/runtests.py {{test_label}} -v 2"
    assert pointer["text"] == (
        "Procedure fix.reproduce_edit_test v1 — when: A coding task asks to fix an issue (fix.reproduce_edit_test). "
        "— verify: ./tests/runtests.py {{test_label}} -v 2"
    )
    assert pointer["tokens"] == estimate_tokens(pointer["text"]) < 60
    assert pointer["files"] == []  # placeholders and the verify command's script are not files of the work


def test_a_family_pointer_names_the_files_it_changes_then_reads():
    pointer = recall_pointer(
        {
            "id": "fix.django.forms",
            "version": 3,
            "appliesWhen": "A django/django task whose fix is in django/forms/ (family django/django:django/forms). More.",
            "postconditions": [
                "Changed: django/forms/models.py.",
                "Changed: django/forms/fields.py.",
                "The verify command passes: ./tests/runtests.py {{test_label}}",
            ],
            "preconditions": [
                "Read before the edit: django/forms/forms.py.",
                "Read before the edit: django/forms/models.py.",
            ],
            "verifyCommand": "./tests/runtests.py {{test_label}}",
        }
    )
    assert pointer["files"] == ["django/forms/models.py", "django/forms/fields.py", "django/forms/forms.py"]
    assert pointer["text"] == (
        "Procedure fix.django.forms v3 — when: A django/django task whose fix is in django/forms/ (family django/django:django/forms). "
        "— files: django/forms/models.py, django/forms/fields.py, django/forms/forms.py — verify: ./tests/runtests.py {{test_label}}"
    )


def test_a_pointer_names_the_files_the_task_points_to_first_within_the_same_cap():
    record = {
        "id": "fix.sympy.core",
        "version": 1,
        "appliesWhen": "A sympy/sympy task whose fix is in sympy/core/ (family sympy/sympy:sympy/core).",
        "postconditions": [f"Changed: sympy/core/m{i}.py." for i in range(8)],
        "verifyCommand": "./bin/test {{test_file}}",
    }
    pointer = recall_pointer(
        record,
        task_files=["sympy/core/numbers.py", "sympy/core/m3.py", "sympy/core/tests/test_numbers.py"],
    )
    # the task's files first (a test file is not one: it fills the verify command), the family's after,
    # each once, at most 8 in all
    assert pointer["files"] == ["sympy/core/numbers.py", "sympy/core/m3.py"] + [
        f"sympy/core/m{i}.py" for i in (0, 1, 2, 4, 5, 6)
    ]
    assert pointer["text"].startswith(
        "Procedure fix.sympy.core v1 — when: A sympy/sympy task whose fix is in sympy/core/ "
        "(family sympy/sympy:sympy/core). — files: sympy/core/numbers.py, sympy/core/m3.py, sympy/core/m0.py"
    )
    assert recall_pointer(record, task_files=()) == recall_pointer(record)  # without: as served


_PATHS = st.lists(st.from_regex(r"[a-z_]{1,200}(/[a-z_.]{1,200}){1,4}\.py", fullmatch=True), max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    key=st.text(min_size=1, max_size=400),
    when=st.text(max_size=5000),
    verify=st.text(max_size=5000),
    version=st.integers(0, 10**6),
    written=_PATHS,
    read=_PATHS,
    for_task=_PATHS,
)
def test_the_recall_pointer_stays_under_the_bound_whatever_the_record(
    key, when, verify, version, written, read, for_task
):
    pointer = recall_pointer(
        {
            "id": key,
            "version": version,
            "appliesWhen": when,
            "verifyCommand": verify,
            "postconditions": [f"Changed: {p}." for p in written],
            "preconditions": [f"Read before the edit: {p}." for p in read],
        },
        task_files=for_task,
    )
    assert pointer["tokens"] == estimate_tokens(pointer["text"]) <= POINTER_MAX_TOKENS
    assert len(pointer["files"]) <= 8
    assert "\n" not in pointer["whenToUse"]


def test_recall_on_the_prompt_and_again_after_the_first_three_tool_calls(server, fake):
    fake.procedures = [FIX, DOCS]
    client = ProcmemClient(base_url=server.url, agent=fake.agent, token=fake.token, ranker=exact_only_ranker())
    recall = client.recall_session("TASK The form rejects valid input.")
    assert recall.pointers == [] and recall.recalls == 1  # the prompt names no target
    assert recall.observe("grep -rn clean django/forms/") is None
    assert recall.observe({"tool": "Read", "target": "django/forms/fields.py"}) is None
    updated = recall.observe(
        {"name": "bash", "args": {"command": "python reproduce.py && ./tests/runtests.py forms_tests"}}
    )
    assert [p["id"] for p in updated] == ["fix.reproduce_edit_test"] and recall.recalls == 2
    assert updated[0] == recall_pointer(FIX)  # the served form when the set has none: computed the same way
    assert recall.observe("git diff") is None and recall.recalls == 2  # only after the third call
    assert client.fetches == 1
    # a prompt that names the target recalls at once
    assert [p["id"] for p in client.recall(prompt="TASK Update docs/ref/forms.txt")] == ["docs.update"]
    with pytest.raises(ValueError):
        client.recall_session("  ")
