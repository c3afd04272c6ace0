"""Coding agents' skeletons and the deterministic draft of a coding procedure (pure Python).

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

Draft (by rules, no model): one step per phase with the targets seen most (as placeholders); the
verify command is the test command that passed last in the group's resolved sessions, generalised
(the most common form); no verify command, no procedure. Preconditions and postconditions follow
from the phases: a reproduction before the edit is a precondition ("a script or test that
reproduces the issue fails"), the edited source file and the passing verify command are
postconditions. Contrast with unresolved sessions comes from the shared skeleton miner
(library/mining/skeletons.contrast), worded for coding ("Do not edit the source before you
reproduce the issue.").
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

PHASES = ("search", "read", "reproduce", "edit", "write-test", "test", "submit")
_PHASE_OF_STEP = {
    "search": "search",
    "read:source": "read", "read:test": "read", "read": "read",
    "run:script": "reproduce", "run": "reproduce", "test:script": "reproduce", "reproduce": "reproduce",
    "edit:source": "edit", "edit": "edit",
    "edit:test": "write-test", "write-test": "write-test",
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
# how a forbidden action names a phase: "Do not <after> before you <before>."
PHASE_VERB = {
    "search": "search the code", "read": "read the code", "reproduce": "reproduce the issue",
    "edit": "edit the source", "write-test": "write a test", "test": "run the tests", "submit": "submit",
}
_ROLE_OF_PHASE = {"search": ("source", "directory", "test"), "read": ("source", "test"), "reproduce": ("script",), "edit": ("source",), "write-test": ("test",), "test": ("test",)}


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


def phase_of(step: str) -> str | None:
    return _PHASE_OF_STEP.get(step)


# ---------------------------------------------------------------------------------------------- verify command


def generalise_command(command: str, path: str, target: str) -> str:
    """The command with its target replaced by the placeholder, `cd /testbed && ` and
    environment prefixes dropped: "cd /testbed && ./tests/runtests.py auth_tests.test_x -v 2" →
    "./tests/runtests.py {{test_label}} -v 2"."""
    text = " ".join(command.split())
    parts = [p.strip() for p in re.split(r"\s*&&\s*", text) if p.strip()]
    parts = [p for p in parts if not re.match(r"^(cd|export|source)\b", p)] or parts
    text = " && ".join(parts)
    if path and target:
        text = text.replace("/testbed/" + path, target).replace("./" + path, target)
        text = re.sub(r"(?<![\w./-])" + re.escape(path) + r"(?:::[\w:.\[\]-]+)?(?![\w/-])", target, text)
    return text


def verify_command_of(calls: Sequence[Mapping[str, Any]]) -> str | None:
    """The last test command of a session that passed (exit code 0), generalised; None if none passed."""
    for call in reversed(calls):
        args = call.get("args") if isinstance(call.get("args"), Mapping) else {}
        if args.get("activity") == "test" and call.get("ok") is True and isinstance(args.get("command"), str):
            return generalise_command(args["command"], args.get("path") or "", args.get("target") or "")
    return None


def common_targets(sessions_calls: Iterable[Sequence[Mapping[str, Any]]]) -> dict[str, str]:
    """The most common placeholder per phase across sessions (its first target in each session)."""
    counters: dict[str, Counter] = {}
    for calls in sessions_calls:
        seen: set[str] = set()
        for call in calls:
            args = call.get("args") if isinstance(call.get("args"), Mapping) else {}
            phase = phase_of(args.get("step", ""))
            if not phase or phase in seen or not args.get("target"):
                continue
            if args.get("role") not in _ROLE_OF_PHASE.get(phase, ()):
                continue
            seen.add(phase)
            counters.setdefault(phase, Counter())[args["target"]] += 1
    return {phase: counter.most_common(1)[0][0] for phase, counter in counters.items()}


# ---------------------------------------------------------------------------------------------- draft


@dataclass
class CodingContract:
    steps: list[str]
    preconditions: list[str]
    postconditions: list[str]
    verify_command: str
    verify_support: int  # resolved sessions whose last passing test command has this form
    verify_sessions: int  # resolved sessions read


def draft_contract(skeleton: Sequence[str], sessions_calls: Sequence[Sequence[Mapping[str, Any]]]) -> CodingContract | None:
    """Steps, pre/postconditions and the verify command of a coding procedure for `skeleton` from the
    tool calls of its resolved sessions; None when none of them ran a passing test (no verify
    command, no procedure)."""
    commands = Counter(c for c in (verify_command_of(calls) for calls in sessions_calls) if c)
    if not commands:
        return None
    verify, verify_support = sorted(commands.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    targets = common_targets(sessions_calls)
    steps: list[str] = []
    for phase in skeleton:
        target = targets.get(phase, "")
        if phase == "test":
            steps.append(f"Run the tests of the changed module: {verify}.")
        else:
            steps.append(PHASE_TEXT[phase].format(target=f" ({target})" if target else ""))
    preconditions: list[str] = []
    if "reproduce" in skeleton and ("edit" not in skeleton or skeleton.index("reproduce") < skeleton.index("edit")):
        preconditions.append(f"A script that reproduces the issue ({targets.get('reproduce', '{{script}}')}) runs and shows the bug before the edit.")
    if "write-test" in skeleton and "edit" in skeleton and skeleton.index("write-test") < skeleton.index("edit"):
        preconditions.append(f"A failing test that reproduces the issue ({targets.get('write-test', '{{test_file}}')}).")
    postconditions: list[str] = []
    if "edit" in skeleton:
        postconditions.append(f"The edited source file ({targets.get('edit', '{{source_file}}')}).")
    if "write-test" in skeleton:
        postconditions.append(f"A test for the fix ({targets.get('write-test', '{{test_file}}')}).")
    postconditions.append(f"The verify command passes: {verify}")
    return CodingContract(steps, preconditions, postconditions, verify, verify_support, len(sessions_calls))


def tools_named(steps: Sequence[str], agent_tools: Iterable[str]) -> list[str]:
    """The agent's tools (programs seen in its sessions) that the steps name as words, in the
    agent's order: what the procedure requires (python3, runtests.py for the verify command)."""
    words = set(re.findall(r"[\w.\-]+", " ".join(steps)))
    return [tool for tool in agent_tools if tool in words]


def forbidden_text(kind: str, phase: str, before: str | None) -> str:
    if kind == "tool":
        return f"Do not {PHASE_VERB.get(phase, phase)} in this kind of task."
    return f"Do not {PHASE_VERB.get(phase, phase)} before you {PHASE_VERB.get(before or '', before or '')}."


def applies_when_for(intent_name: str) -> str:
    phrase = intent_name.replace("_", " ").replace("-", " and ")
    return f"A coding task asks to {phrase}: a bug report or feature request against a code base (intent {intent_name})."


def procedure_key_for(skeleton: Sequence[str]) -> str:
    """fix.reproduce_edit_test: the coding procedure's id from the phases after search and read."""
    core = [p.replace("-", "_") for p in skeleton if p not in ("search", "read", "submit")] or ["edit"]
    return "fix." + "_".join(core)[:100]
