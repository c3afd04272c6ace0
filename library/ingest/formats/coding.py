"""The formats of coding agents: mini-swe-agent trajectories and the minimal trace-hook format.
Each call carries its activity class and generalised target (library/coding/activities.py), and the
session's skeleton is the sequence of activity steps."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...coding.activities import Action, classify_command, classify_tool
from ...tool_names import TOOL_NAME_RE
from ..session_fields import (
    FieldError,
    ImportOptions,
    ItemInvalid,
    SessionIn,
    bool_or_none,
    call_entries,
    clean_session_id,
    clean_task_key,
    clean_text,
    clean_tool_calls,
    intent_from_options,
    json_object,
    reported,
    valid_session,
    with_prefix,
)

DEFAULT_CODING_INTENT = "resolve_issue"
MAX_COMMAND_CHARS = 2000
MAX_OUTPUT_CHARS = 500  # a head of the output, enough to see the error; tool results of other formats are never stored


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def coding_call(action: Action, *, command: str, returncode: int | None, output: str = "") -> dict[str, Any]:
    """One coding action as a tool call: the program (or tool) as its name; the command, the
    activity, the step, the target (as named and generalised with its role), the return code and a
    truncated output as its args. ok is the return code 0 (None when unknown)."""
    program = action.program
    name = program if program and TOOL_NAME_RE.match(program) else "shell"
    args: dict[str, Any] = {"activity": action.activity, "step": action.step()}
    if command:
        args["command"] = _short(command, MAX_COMMAND_CHARS)
    if action.path:
        args["path"], args["target"], args["role"] = action.path, action.target, action.role
    if returncode is not None:
        args["returncode"] = returncode
    if output:
        args["output"] = _short(output, MAX_OUTPUT_CHARS)
    return {"name": name, "args": args, "ok": None if returncode is None else returncode == 0}


def _coding_outcome(
    item: Mapping[str, Any], session_key: str, options: ImportOptions, errors: list[FieldError]
) -> bool | None:
    """resolved from the outcome file (SWE-bench results.json) or the item's own outcome."""
    if options.outcomes is not None and session_key in options.outcomes:
        return options.outcomes[session_key]
    outcome = item.get("outcome")
    if isinstance(outcome, Mapping):
        return bool_or_none(outcome.get("resolved"), "outcome.resolved", errors)
    if outcome is not None:
        errors.append(FieldError("outcome", "must be an object {resolved}"))
    return bool_or_none(item.get("resolved"), "resolved", errors)


def outcomes_from_results(data: Any) -> dict[str, bool]:
    """instance id → resolved from a SWE-bench results file: ``{"instances": [{instance_id,
    resolved}]}``, ``{"resolved": [ids], "unresolved": [ids]}`` (the harness report) or ``{id: bool}``."""
    if isinstance(data, Mapping) and isinstance(data.get("instances"), list):
        result = {}
        for index, entry in enumerate(data["instances"]):
            if (
                not isinstance(entry, Mapping)
                or not isinstance(entry.get("instance_id"), str)
                or not isinstance(entry.get("resolved"), bool)
            ):
                raise ValueError(f"instances[{index}] must be {{instance_id: string, resolved: true|false}}")
            result[entry["instance_id"]] = entry["resolved"]
        return result
    if isinstance(data, Mapping) and isinstance(data.get("resolved"), list):
        result = {str(i): False for i in data.get("unresolved", []) or []}
        result.update({str(i): True for i in data["resolved"]})
        return result
    if isinstance(data, Mapping) and all(isinstance(v, bool) for v in data.values()):
        return {str(k): v for k, v in data.items()}
    raise ValueError(
        'not an outcome file: expected {"instances": [{"instance_id", "resolved"}]}, {"resolved": [ids]} or {id: true|false}'
    )


# As mini-swe-agent reads its actions (```bash\s*\n(.*?)\n```) and the outputs in its replies
# (<output>\n?(.*?)</output>), the lazy (.*?) unrolled: the engine runs through a line, or to the
# next "<", instead of trying the end marker after every character (outputs are up to megabytes).
_BASH_BLOCK_RE = re.compile(r"```bash\s*\n([^\n]*(?:\n(?!```)[^\n]*)*)\n```")
_RETURNCODE_RE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_OUTPUT_RE = re.compile(
    r"<output(?:_head|_tail)?>\n?([^<]*(?:<(?!/output(?:_head|_tail)?>)[^<]*)*)</output(?:_head|_tail)?>"
)
_PR_RE = re.compile(r"<pr_description>(.*?)</pr_description>", re.S)


# a line that starts "diff --git": the newline before it is part of the pattern (the patch is read
# with one put in front), so the engine looks for the literal instead of trying "^" at every
# character (1.2 MB of patches in the other repositories: 6 ms -> 1 ms of CPU)
_DIFF_FILE_RE = re.compile(r"\ndiff --git a/\S+ b/(\S+)")
MAX_SUBMITTED_FILES = 50


def submitted_files(patch: str) -> list[str]:
    """The files a unified git diff changes (``diff --git a/x b/x``), in order, at most MAX_SUBMITTED_FILES."""
    return list(dict.fromkeys(_DIFF_FILE_RE.findall("\n" + patch if patch else "")))[:MAX_SUBMITTED_FILES]


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}]
        return "\n".join(
            part.get("text", "") for part in content if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    return ""


def parse_mini_swe_agent(item: Any, options: ImportOptions | None = None) -> SessionIn:
    """A mini-swe-agent trajectory (``.traj.json``, format mini-swe-agent-1): ``{instance_id, info:
    {exit_status, submission}, messages: [{role, content}]}``. Each assistant message holds one
    fenced bash command; the next user message its ``<returncode>`` and ``<output>``. A message
    with no or several commands was refused by the agent's loop (a format error) and ran nothing;
    the submit command's reply is the final patch, kept as the session's reply."""
    options = options or ImportOptions()
    item = json_object(item)
    messages = item.get("messages")
    if not isinstance(messages, list):
        raise ItemInvalid([FieldError("messages", "must be a list of chat messages {role, content}")])
    errors: list[FieldError] = []
    raw_id = clean_session_id(item.get("instance_id", item.get("session_id")), errors, "instance_id")
    session_id = with_prefix(raw_id, options)
    info = item.get("info") if isinstance(item.get("info"), Mapping) else {}
    task = ""
    calls: list[dict[str, Any]] = []
    pending: tuple[str, Action] | None = None
    for index, message in enumerate(messages):
        # a dict is a Mapping: asked first, as the ABC's check costs ten times more
        if not (type(message) is dict or isinstance(message, Mapping)) or not isinstance(message.get("role"), str):
            errors.append(FieldError(f"messages[{index}]", "must be a chat message with a role"))
            continue
        role, text = message["role"], _message_text(message.get("content"))
        if role == "user" and pending is None and not task:
            match = _PR_RE.search(text)
            task = (match.group(1) if match else text).strip()
            if match and "Consider the following PR description:" in task:
                task = task.split("Consider the following PR description:", 1)[1].strip()
            continue
        if role == "assistant":
            blocks = _BASH_BLOCK_RE.findall(text)
            pending = (blocks[0].strip(), classify_command(blocks[0])) if len(blocks) == 1 else None
            continue
        if role in ("user", "tool") and pending is not None:
            command, action = pending
            pending = None
            code = _RETURNCODE_RE.search(text)
            if code is None and action.activity != "submit":
                continue  # the loop's format or timeout message: the command did not run
            output = "\n".join(_OUTPUT_RE.findall(text)) if code else ""
            if action.activity == "submit":
                output = ""  # the final patch: kept once, as the reply
            calls.append(
                coding_call(action, command=command, returncode=int(code.group(1)) if code else None, output=output)
            )
    if pending is not None:
        command, action = pending
        calls.append(coding_call(action, command=command, returncode=None))
    submission = info.get("submission") if isinstance(info.get("submission"), str) else ""
    changed = submitted_files(submission)
    if changed and calls and calls[-1]["args"].get("activity") == "submit":
        # the files the final patch changes: the task family's area (library/coding/families.py),
        # kept on the submit call because the patch itself is kept only as a redacted excerpt
        calls[-1]["args"]["files"] = changed
    tool_calls = clean_tool_calls(calls, errors, "messages.command")
    intent = intent_from_options(item, session_id, options, errors, item.get("intent") or DEFAULT_CODING_INTENT)
    model_stats = info.get("model_stats") if isinstance(info.get("model_stats"), Mapping) else {}
    session = SessionIn(
        session_id=session_id,
        intent=intent,
        task=task[:20000],
        resolved=_coding_outcome(item, raw_id, options, errors),
        escalated=False,
        rating=None,
        tool_calls=tool_calls,
        **reported(
            errors,
            injected=item.get("injected"),
            instruction_chars=item.get("instruction_chars"),
            model=item.get("model") or model_stats.get("model") or options.model,
            ended_at=item.get("ended_at"),
        ),
        source_format="mini-swe-agent",
        reply=submission[:20000],
        # one SWE-bench instance is one task: several runs (models, attempts) of it count once
        task_key=clean_task_key(item.get("task_key", raw_id), errors),
        # the outputs are in the calls' args already (cut to MAX_OUTPUT_CHARS): read once for redaction
    )
    return valid_session(session, errors)


def _clean_trace_actions(value: Any, errors: list[FieldError], field_name: str = "actions") -> list[dict[str, Any]]:
    """The trace hook's actions: ``{"tool": name, "target": path|module|test, "result": exit code}``
    (or ``"command"``: a shell line instead of a tool name). Nothing else is read."""
    calls: list[dict[str, Any]] = []
    for where, entry in call_entries(
        value, errors, field_name, shape="{tool or command, target, result}", noun="actions"
    ):
        unknown = sorted(set(entry) - {"tool", "command", "target", "result"})
        if unknown:
            errors.append(
                FieldError(
                    where,
                    f"has fields the trace format does not carry: {', '.join(unknown)} (only tool or command, target, result)",
                )
            )
            continue
        tool, command, target, result = (
            entry.get("tool"),
            entry.get("command"),
            entry.get("target"),
            entry.get("result"),
        )
        if tool is not None and (not isinstance(tool, str) or not TOOL_NAME_RE.match(tool)):
            errors.append(
                FieldError(f"{where}.tool", f"must be a tool or command name (letters, digits, _ . -), got {tool!r}")
            )
            continue
        if command is not None and (not isinstance(command, str) or not command.strip()):
            errors.append(FieldError(f"{where}.command", "must be a non-empty shell command line"))
            continue
        if tool is None and command is None:
            errors.append(FieldError(where, "needs a tool name or a command"))
            continue
        if target is not None and (not isinstance(target, str) or len(target) > 1000):
            errors.append(
                FieldError(
                    f"{where}.target", "must be a path, module or test name (a string of at most 1000 characters)"
                )
            )
            continue
        if result is not None and (isinstance(result, bool) or not isinstance(result, int)):
            if isinstance(result, bool):
                result = 0 if result else 1
            else:
                errors.append(
                    FieldError(
                        f"{where}.result",
                        f"must be the exit code (an integer; 0 = success), true/false or null, got {result!r}",
                    )
                )
                continue
        action = classify_tool(tool or "", target or "", command or "")
        call = coding_call(action, command=command or "", returncode=result)
        if tool:
            call["name"] = tool
        calls.append(call)
    return calls


def parse_trace(item: Any, options: ImportOptions | None = None) -> SessionIn:
    """The minimal trace-hook format for any coding agent (docs/api.md "Trace format"):
    ``{"session_id", "task", "intent", "outcome": {"resolved"}, "model", "ended_at", "injected",
    "actions": [{"tool" | "command", "target", "result"}]}``: per action the tool or command, what
    it acted on and its exit code — no arguments, no outputs."""
    options = options or ImportOptions()
    item = json_object(item)
    errors: list[FieldError] = []
    raw_id = clean_session_id(item.get("session_id"), errors)
    session_id = with_prefix(raw_id, options)
    calls = _clean_trace_actions(item.get("actions"), errors)
    session = SessionIn(
        session_id=session_id,
        intent=intent_from_options(item, session_id, options, errors, item.get("intent") or DEFAULT_CODING_INTENT),
        task=clean_text(item.get("task"), "task", errors),
        resolved=_coding_outcome(item, raw_id, options, errors),
        escalated=False,
        rating=None,
        tool_calls=clean_tool_calls(calls, errors, "actions") if not errors else calls,
        **reported(
            errors,
            injected=item.get("injected"),
            instruction_chars=item.get("instruction_chars"),
            model=item.get("model") or options.model,
            ended_at=item.get("ended_at"),
        ),
        source_format="trace",
        task_key=clean_task_key(item.get("task_key"), errors),
    )
    return valid_session(session, errors)
