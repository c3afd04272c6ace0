"""Coding agents' skeletons and the wording of a coding procedure's steps (pure Python).

Skeleton (the mining skeleton of a coding agent): a session's activity steps (library/coding/
activities.py) mapped to phases, each phase kept at its first occurrence:

    search (search)  read (read:source, read:test, read)  reproduce (run:script, run, test:script;
    writing the script is part of it)  edit (edit:source, edit)  write-test (edit:test)
    test (test)  submit (submit)

environment, vcs, build and other steps carry no order of the work and are left out. A resolved
session "grep, cat, cat > reproduce.py, python reproduce.py, sed -i, python reproduce.py, runtests.py,
submit" has the skeleton search → read → reproduce → edit → test → submit; first occurrences make
sessions of different lengths comparable (an agent that loops edit/run five times did the same work).
The function is idempotent: a phase skeleton reduces to itself.

The candidate itself is drawn per task family from resolved sessions (library/coding/families.py):
its steps follow the phases of the family's commonest skeleton.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

PHASES = ("search", "read", "reproduce", "edit", "write-test", "test", "submit")
_PHASE_OF_STEP = {
    "search": "search",
    "read:source": "read",
    "read:test": "read",
    "read": "read",
    "run:script": "reproduce",
    "run": "reproduce",
    "test:script": "reproduce",
    "reproduce": "reproduce",
    "edit:source": "edit",
    "edit": "edit",
    "edit:test": "write-test",
    "write-test": "write-test",
    "test": "test",
    "submit": "submit",
}
PHASE_TEXT = {
    "search": "Search the code for the symbol, message or behaviour named in the issue{target}.",
    "read": "Read the code around the match{target} before changing anything.",
    "reproduce": "Write a small script that reproduces the issue and run it{target}: it must show the bug.",
    "edit": "Edit the source file that causes the issue{target}.",
    "write-test": "Add or extend a test for the fix{target}.",
    "test": "Run the tests of the changed module{target}.",
    "submit": "Review the diff and hand in the change.",
}


def coding_skeleton(steps: Iterable[str], ignored: Iterable[str] = (), terminal: Iterable[str] = ()) -> tuple[str, ...]:
    """The phases of a coding session, each at its first occurrence (idempotent). `terminal` (the tool
    agents' terminal tools, see reduce_skeleton) is taken for the common signature and ignored."""
    ignored_set = set(ignored)
    phases: list[str] = []
    for step in steps:
        phase = _PHASE_OF_STEP.get(step)
        if phase and phase not in phases and phase not in ignored_set:
            phases.append(phase)
    return tuple(phases)


def tools_named(steps: Sequence[str], agent_tools: Iterable[str]) -> list[str]:
    """The agent's tools (programs seen in its sessions) that the steps name as words, in the
    agent's order: what the procedure requires (python3, runtests.py for the verify command)."""
    words = set(re.findall(r"[\w.\-]+", " ".join(steps)))
    return [tool for tool in agent_tools if tool in words]


def applies_when_for(intent_name: str) -> str:
    phrase = intent_name.replace("_", " ").replace("-", " and ")
    return (
        f"A coding task asks to {phrase}: a bug report or feature request against a code base (intent {intent_name})."
    )


def procedure_key_for(skeleton: Sequence[str]) -> str:
    """fix.reproduce_edit_test: the coding procedure's id from the phases after search and read."""
    core = [p.replace("-", "_") for p in skeleton if p not in ("search", "read", "submit")] or ["edit"]
    return "fix." + "_".join(core)[:100]
