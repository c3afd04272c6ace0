"""procmem-capture: a coding agent's finished session, sent to procmem in the trace format.

Called by a harness when a session ends — Claude Code's `SessionEnd` hook, or a wrapper script around
Codex or any shell harness — it reads the harness's transcript file and sends, per step, only the
tool, its one identifying argument (the file it read or edited, the directory it searched, the shell
command it ran) and the result code. Nothing else leaves the machine: no file contents, no tool
outputs, no reasoning, no assistant text (docs/api.md "Trace format", "A capture hook for coding agents").

Claude Code (`~/.claude/settings.json` or the project's `.claude/settings.json`), one line:

    "hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "procmem-capture claude-code"}]}]}

The hook gets `{"session_id", "transcript_path", "cwd", "hook_event_name", "reason"}` on standard input
(read without waiting for the pipe to close). Codex, or any harness, from a wrapper:
`procmem-capture codex --transcript <rollout-….jsonl>`. The transcript shapes read — Claude Code's
session JSONL, Codex's rollout (codex-rs RolloutLine) of the shell-tool and the unified-exec eras —
and where they are defined: docs/api.md "A capture hook for coding agents".
Where to send: PROCMEM_URL and PROCMEM_INGEST_TOKEN (an ingest token of the agent). `--dry-run`
prints the trace instead of sending it. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

MAX_TARGET = 1000
MAX_COMMAND = 2000
MAX_TASK = 20000
HOOK_STDIN_SECONDS = 5.0
# Claude Code's tools → the argument that names what the step acted on (nothing else is read). Task
# was renamed Agent; MultiEdit, LS and NotebookRead are gone from newer versions but still in old
# transcripts.
CLAUDE_TARGETS = {
    "Read": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "NotebookEdit": "notebook_path",
    "NotebookRead": "notebook_path",
    "Grep": "path",
    "Glob": "path",
    "LS": "path",
    "WebFetch": "url",
    "WebSearch": "query",
    "Task": "subagent_type",
    "Agent": "subagent_type",
}
CLAUDE_VERBATIM = {"url", "query", "subagent_type"}  # targets that are not paths
# the agents' own to-do lists: bookkeeping, not steps that act on the project
NOT_STEPS = {"TodoWrite", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "update_plan"}
# user lines that are not the user's request: slash commands and their output, hook and system text
CLAUDE_NOT_A_PROMPT = (
    "<command-",
    "<local-command",
    "<system-reminder>",
    "<user-prompt-submit-hook>",
    "Caveat:",
    "[Request interrupted",
)
# user messages Codex writes itself before the request (environment, AGENTS.md, permissions)
CODEX_CONTEXT = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<skill>",
)
SHELLS = {"bash", "sh", "zsh", "dash", "fish", "powershell", "powershell.exe", "pwsh", "pwsh.exe", "cmd", "cmd.exe"}
PATCH_FILE_RE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$", re.M)
# the result code in a tool's output header (never the output itself): Codex's freeform shell output
# ("Exit code: 1"), its unified exec ("Process exited with code 1"), Claude Code's failed Bash ("Exit code 1")
EXIT_CODE_RE = re.compile(r"^(?:Exit code:? |Process exited with code )(-?\d+)\s*$", re.M)
RUNNING_RE = re.compile(r"^Process running with session ID (\d+)\s*$", re.M)
TOOL_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


class CaptureError(Exception):
    pass


def _lines(path: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON Lines transcript; a line that is not an object is skipped (a
    harness may be writing the last line still)."""
    try:
        with open(path, encoding="utf-8") as stream:
            for line in stream:
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except ValueError:
                    continue
                if isinstance(item, dict):
                    yield item
    except OSError as exc:
        raise CaptureError(f"cannot read the transcript {path}: {exc.strerror or exc}") from None


def _relative(value: Any, cwd: str) -> str | None:
    """A path as the project sees it: relative to the working directory when inside it (so the
    user's home directory does not travel), else as it is."""
    if not isinstance(value, str) or not value.strip():
        return None
    path = value.strip()
    if cwd and os.path.isabs(path):
        try:
            relative = os.path.relpath(path, cwd)
        except ValueError:
            relative = path
        if not relative.startswith(".."):
            path = relative
    return path[:MAX_TARGET]


def _tool_name(name: Any) -> str | None:
    if not isinstance(name, str) or not name or not set(name) <= TOOL_CHARS or len(name) > 128:
        # MCP tools are mcp__server__tool: kept; anything else unusual is sent as "tool"
        return "tool" if isinstance(name, str) and name else None
    return name


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "")
            for b in content
            if isinstance(b, Mapping) and b.get("type") in ("text", "input_text") and isinstance(b.get("text"), str)
        )
    return ""


def _exit_code(text: str) -> int | None:
    """The exit code a tool's output states in its header (the lines before "Output:"), or None."""
    found = EXIT_CODE_RE.search(text.partition("\nOutput:")[0][:2000])
    return int(found.group(1)) if found else None


# ---------------------------------------------------------------------------------------------- Claude Code


def claude_code_trace(transcript: str, *, session_id: str = "", cwd: str = "") -> dict[str, Any]:
    """A Claude Code session transcript (~/.claude/projects/<project>/<session id>.jsonl) as a trace
    session. Its lines: `{"type": "user"|"assistant", "message": {"role", "content", "model"},
    "sessionId", "cwd", "timestamp", "isSidechain", "isMeta", "isCompactSummary", "toolUseResult"}`
    (other types — summary, system, file-history-snapshot, attachment — are skipped). Assistant
    content blocks `tool_use {id, name, input}` are the steps; user content blocks `tool_result
    {tool_use_id, content, is_error}` their results. Subagent (sidechain) lines are the subagent's
    own session, not steps of this one."""
    actions: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    task = model = ended = ""
    for line in _lines(transcript):
        if line.get("isSidechain") is True:
            continue
        session_id = session_id or str(line.get("sessionId") or "")
        cwd = cwd or str(line.get("cwd") or "")
        ended = str(line.get("timestamp") or ended)
        message = line.get("message") if isinstance(line.get("message"), Mapping) else {}
        content = message.get("content")
        if line.get("type") == "assistant":
            if not model and message.get("model") not in (None, "", "<synthetic>"):
                model = str(message["model"])
            for block in content if isinstance(content, list) else []:
                if isinstance(block, Mapping) and block.get("type") == "tool_use" and str(block.get("id")) not in by_id:
                    action = _claude_action(block, cwd)
                    if action is not None:
                        actions.append(action)
                        by_id[str(block.get("id"))] = action
        elif line.get("type") == "user":
            results = (
                [b for b in content if isinstance(b, Mapping) and b.get("type") == "tool_result"]
                if isinstance(content, list)
                else []
            )
            for block in results:
                action = by_id.get(str(block.get("tool_use_id")))
                if action is not None:
                    # a failed Bash's result starts "Exit code N"; any other error is 1
                    failed = _exit_code(_text(block.get("content")).split("\n", 1)[0]) or 1
                    action["result"] = failed if block.get("is_error") is True else 0
            if not results and not task and not line.get("isMeta") and not line.get("isCompactSummary"):
                text = _text(content).strip()
                if text and not text.startswith(CLAUDE_NOT_A_PROMPT):
                    task = text[:MAX_TASK]
    return _session(session_id, task, actions, model, ended)


def _claude_action(block: Mapping[str, Any], cwd: str) -> dict[str, Any] | None:
    name = _tool_name(block.get("name"))
    if name is None or name in NOT_STEPS:
        return None
    arguments = block.get("input") if isinstance(block.get("input"), Mapping) else {}
    if name in ("Bash", "bash"):
        command = arguments.get("command")
        return {"command": command[:MAX_COMMAND]} if isinstance(command, str) and command.strip() else {"tool": "Bash"}
    action: dict[str, Any] = {"tool": name}
    key = CLAUDE_TARGETS.get(name)
    target = arguments.get(key) if key else None
    if key in CLAUDE_VERBATIM:
        target = target.strip()[:MAX_TARGET] if isinstance(target, str) and target.strip() else None
    else:
        target = _relative(target, cwd)
    if target:
        action["target"] = target
    return action


# ---------------------------------------------------------------------------------------------- Codex


def codex_trace(transcript: str, *, session_id: str = "", cwd: str = "") -> dict[str, Any]:
    """A Codex rollout file (~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl: one
    `{"timestamp", "type", "payload"}` a line, codex-rs's RolloutLine) as a trace session.

    - `session_meta {id, cwd}`: the session; `turn_context {model}`: the model;
    - the task: the first `event_msg` `user_message` (what the user typed), else the first
      `response_item` user `message` that is not context Codex adds itself;
    - steps, `response_item`s: `function_call {name, arguments (JSON text), call_id}` — the shell
      tools `shell`/`container.exec` (`command`: argv), `shell_command` (`command`: a string),
      `exec_command` (`cmd`), and `apply_patch` (`input`); `custom_tool_call {name, input, call_id}`
      (the freeform apply_patch); `local_shell_call {call_id, action.command}`; `web_search_call`;
    - results: `function_call_output` / `custom_tool_call_output {call_id, output}`, whose output
      states the exit code (JSON `metadata.exit_code`, or a header line "Exit code: N" / "Process
      exited with code N"); a command still running is finished by a later `write_stdin` to its
      session; `event_msg`s `exec_command_end {exit_code}`, `patch_apply_end {success}` and
      `mcp_tool_call_end {result}` give the result where the output does not.
    An apply_patch step's target is the patch's first file; the patch never leaves."""
    actions: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    running: dict[str, dict[str, Any]] = {}  # exec_command session (process) id → its step
    stdin_of: dict[str, str] = {}  # write_stdin call id → the session it wrote to
    reported: dict[str, int] = {}  # call id → result from an event_msg
    prompt = first_message = model = ended = ""
    for line in _lines(transcript):
        ended = str(line.get("timestamp") or ended)
        payload = line.get("payload") if isinstance(line.get("payload"), Mapping) else {}
        kind, item = line.get("type"), payload.get("type")
        if kind == "session_meta":
            session_id = session_id or str(payload.get("id") or "")
            cwd = cwd or str(payload.get("cwd") or "")
        elif kind == "turn_context":
            model = model or str(payload.get("model") or "")
            cwd = cwd or str(payload.get("cwd") or "")
        elif kind == "event_msg":
            if item == "user_message" and not prompt and payload.get("kind") in (None, "plain"):
                prompt = str(payload.get("message") or "").strip()
            elif item in ("exec_command_end", "patch_apply_end", "mcp_tool_call_end"):
                code = _event_result(payload)
                if code is not None:
                    reported[str(payload.get("call_id"))] = code
        elif kind != "response_item":
            continue  # compacted (a summary of earlier turns), anything newer
        elif item == "message" and payload.get("role") == "user" and not first_message:
            text = _text(payload.get("content")).strip()
            if text and not text.startswith(CODEX_CONTEXT):
                first_message = text
        elif item in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
            call_id = str(payload.get("call_id") or payload.get("id") or "")
            if item == "function_call" and payload.get("name") == "write_stdin":
                # input to a command still running: not a step; its output may finish that command
                process = _arguments(payload.get("arguments")).get("session_id")
                if process is not None:
                    stdin_of[call_id] = str(process)
                continue
            action = _codex_action(item, payload, cwd)
            if action is not None:
                actions.append(action)
                if call_id:
                    by_id[call_id] = action
        elif item in ("function_call_output", "custom_tool_call_output"):
            call_id = str(payload.get("call_id"))
            text = _output_text(payload.get("output"))
            action = by_id.get(call_id) or running.get(stdin_of.get(call_id, ""))
            if action is None:
                continue
            code = _structured_exit_code(text)
            if code is None:
                code = _exit_code(text)
            if code is not None:
                action["result"] = code
            elif (still := RUNNING_RE.search(text.partition("\nOutput:")[0])) is not None:
                running[still.group(1)] = action
    for call_id, code in reported.items():
        if call_id in by_id and by_id[call_id].get("result") is None:
            by_id[call_id]["result"] = code
    return _session(session_id, (prompt or first_message)[:MAX_TASK], actions, model, ended)


def _arguments(raw: Any) -> Mapping[str, Any]:
    """A function call's arguments (JSON text in the rollout), {} when they are not an object."""
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return arguments if isinstance(arguments, Mapping) else {}


def _command_line(command: Any) -> str | None:
    """A shell tool's command as one line: a string as it is; an argv whose program is a shell
    with -c/-lc (bash -lc "…") as its script; any other argv quoted."""
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        if (
            len(command) == 3
            and os.path.basename(command[0]).lower() in SHELLS
            and command[1] in ("-c", "-lc", "-Command", "/c")
        ):
            command = command[2]
        else:
            command = shlex.join(command)
    return command if isinstance(command, str) and command.strip() else None


def _patch_action(patch: Any, cwd: str) -> dict[str, Any]:
    """apply_patch: the first file the patch names (added, updated or deleted) is the target."""
    found = PATCH_FILE_RE.search(patch) if isinstance(patch, str) else None
    target = _relative(found.group(1), cwd) if found else None
    return {"tool": "apply_patch", "target": target} if target else {"tool": "apply_patch"}


def _codex_action(item: str, payload: Mapping[str, Any], cwd: str) -> dict[str, Any] | None:
    if item == "local_shell_call":
        action = payload.get("action") if isinstance(payload.get("action"), Mapping) else {}
        return _shell_action(_command_line(action.get("command")), "local_shell", cwd)
    if item == "web_search_call":
        search = payload.get("action") if isinstance(payload.get("action"), Mapping) else {}
        target = search.get("query") or search.get("url")
        return (
            {"tool": "web_search", "target": target.strip()[:MAX_TARGET]}
            if isinstance(target, str) and target.strip()
            else {"tool": "web_search"}
        )
    raw_name = payload.get("name")
    if isinstance(raw_name, str) and isinstance(payload.get("namespace"), str):
        raw_name = payload["namespace"] + raw_name  # an MCP tool: its server's namespace, then its name
    name = _tool_name(raw_name)
    if name is None or name in NOT_STEPS:
        return None
    if item == "custom_tool_call":  # freeform: the input is raw text, not JSON
        return _patch_action(payload.get("input"), cwd) if name == "apply_patch" else {"tool": name}
    arguments = _arguments(payload.get("arguments"))
    if name == "apply_patch":
        return _patch_action(arguments.get("input"), cwd)
    if name in ("shell", "container.exec", "shell_command"):
        return _shell_action(_command_line(arguments.get("command")), name, cwd)
    if name == "exec_command":
        return _shell_action(_command_line(arguments.get("cmd")), name, cwd)
    if name == "view_image":
        target = _relative(arguments.get("path"), cwd)
        return {"tool": name, "target": target} if target else {"tool": name}
    return {"tool": name}


def _shell_action(command: str | None, tool: str, cwd: str) -> dict[str, Any]:
    if command is None:
        return {"tool": tool}
    if command.lstrip().startswith(("apply_patch", "applypatch")):
        # a patch through the shell (older Codex, or a heredoc): the file, never the patch
        return _patch_action(command, cwd)
    return {"command": command[:MAX_COMMAND]}


def _output_text(output: Any) -> str:
    """A call output's text: a string, or (images, MCP content) a list of content items."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return _text(output)
    if isinstance(output, Mapping):  # the Responses API's failure shape {content, success}
        return str(output.get("content") or "")
    return ""


def _structured_exit_code(text: str) -> int | None:
    """`{"output": …, "metadata": {"exit_code": N}}`: Codex's structured shell and patch output."""
    if not text.startswith("{"):
        return None
    try:
        metadata = json.loads(text).get("metadata")
    except (ValueError, AttributeError):
        return None
    code = metadata.get("exit_code") if isinstance(metadata, Mapping) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _event_result(payload: Mapping[str, Any]) -> int | None:
    """The result code an event_msg reports for a call: exec_command_end's exit_code,
    patch_apply_end's success, mcp_tool_call_end's result (Ok with isError, or Err)."""
    if payload.get("type") == "exec_command_end":
        code = payload.get("exit_code")
        return code if isinstance(code, int) and not isinstance(code, bool) else None
    if payload.get("type") == "patch_apply_end":
        return 0 if payload.get("success") is True else 1 if payload.get("success") is False else None
    result = payload.get("result")
    if isinstance(result, Mapping):
        if "Err" in result:
            return 1
        ok = result.get("Ok")
        if isinstance(ok, Mapping):
            return 1 if ok.get("isError") is True or ok.get("is_error") is True else 0
    return None


def _session(session_id: str, task: str, actions: list[dict[str, Any]], model: str, ended: str) -> dict[str, Any]:
    if not session_id:
        raise CaptureError("the transcript names no session id (pass --session-id)")
    session: dict[str, Any] = {"session_id": session_id[:200], "task": task, "actions": actions}
    if model:
        session["model"] = model[:128]
    if ended:
        session["ended_at"] = ended
    return session


READERS = {"claude-code": claude_code_trace, "codex": codex_trace}


def send(session: Mapping[str, Any], *, url: str, token: str, timeout: float = 10.0) -> dict[str, Any]:
    """POST the session to <url>/api/v1/sessions?format=trace; the server's answer."""
    request = urllib.request.Request(
        url.rstrip("/") + "/api/v1/sessions?format=trace",
        data=json.dumps({"sessions": [dict(session)]}, ensure_ascii=False).encode("utf-8"),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        raise CaptureError(f"procmem answered {exc.code}: {exc.read()[:300].decode('utf-8', 'replace')}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise CaptureError(f"procmem at {url} cannot be reached: {exc}") from None


def read_hook_input(stdin: Any, timeout: float = HOOK_STDIN_SECONDS) -> Any:
    """The hook's JSON value from standard input, None when there is none. Claude Code may keep the
    pipe open after writing it, so this stops as soon as one whole JSON value has arrived (or at the
    end of the input, or after `timeout` seconds), never waiting for the end of the input alone."""
    try:
        fd = stdin.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None
    if fd is None or os.name == "nt":  # an in-memory stream (tests), or no select() on pipes
        text = stdin.read()
        try:
            return json.loads(text) if text.strip() else None
        except ValueError:
            return None
    if os.isatty(fd):
        return None  # run by hand without --transcript: nothing is coming
    import select

    data = b""
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
        try:
            return json.loads(data)
        except ValueError:
            continue  # not all of it yet
    try:
        return json.loads(data) if data.strip() else None
    except ValueError:
        return None


def main(argv: Iterable[str] | None = None, *, stdin=None, stdout=None, stderr=None) -> int:
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    parser = argparse.ArgumentParser(prog="procmem-capture", description=__doc__.split("\n\n")[0])
    parser.add_argument("harness", choices=sorted(READERS), help="whose transcript format to read")
    parser.add_argument(
        "--transcript", help="the transcript file (default: transcript_path of the hook's JSON on standard input)"
    )
    parser.add_argument("--session-id", default="", help="the session id (default: the hook's, else the transcript's)")
    parser.add_argument("--dry-run", action="store_true", help="print the trace session instead of sending it")
    args = parser.parse_args(list(argv) if argv is not None else None)
    hook: Any = {}
    if not args.transcript:
        hook = read_hook_input(stdin)
        if not isinstance(hook, dict) or not isinstance(hook.get("transcript_path"), str):
            stderr.write("procmem-capture: no --transcript and no hook JSON with transcript_path on standard input\n")
            return 2
    transcript = args.transcript or os.path.expanduser(hook["transcript_path"])
    try:
        session = READERS[args.harness](
            transcript,
            session_id=args.session_id or str(hook.get("session_id") or ""),
            cwd=str(hook.get("cwd") or ""),
        )
        if args.dry_run:
            stdout.write(json.dumps(session, ensure_ascii=False, indent=1) + "\n")
            return 0
        url, token = os.environ.get("PROCMEM_URL", ""), os.environ.get("PROCMEM_INGEST_TOKEN", "")
        if not url or not token:
            raise CaptureError("set PROCMEM_URL and PROCMEM_INGEST_TOKEN (an ingest token of the agent)")
        answer = send(session, url=url, token=token)
    except CaptureError as exc:
        stderr.write(f"procmem-capture: {exc}\n")
        return 1
    counts = answer.get("counts", {})
    stderr.write(
        f"procmem-capture: session {session['session_id']}: {len(session['actions'])} steps; "
        f"stored {counts.get('stored', 0)}, duplicate {counts.get('duplicate', 0)}, refused {counts.get('refused', 0)}\n"
    )
    return 0 if not answer.get("refused") else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
