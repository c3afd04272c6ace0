"""procmem-capture: a coding agent's finished session, sent to procmem in the trace format.

Called by a harness when a session ends — Claude Code's `SessionEnd` hook, or a wrapper script around
Codex or any shell harness — it reads the harness's transcript file and sends, per step, only the
tool, its one identifying argument (the file it read or edited, the directory it searched, the shell
command it ran) and the result code. Nothing else leaves the machine: no file contents, no tool
outputs, no reasoning, no assistant text (docs/api.md "Trace format", "A capture hook for coding agents").

Claude Code (`~/.claude/settings.json` or the project's `.claude/settings.json`), one line:

    "hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "procmem-capture claude-code"}]}]}

The hook gets `{"session_id", "transcript_path", "cwd", "hook_event_name", "reason"}` on standard input.
Codex, or any harness, from a wrapper: `procmem-capture codex --transcript <rollout-….jsonl>`.
Where to send: PROCMEM_URL and PROCMEM_INGEST_TOKEN (an ingest token of the agent). `--dry-run`
prints the trace instead of sending it. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

MAX_TARGET = 1000
MAX_COMMAND = 2000
MAX_TASK = 20000
# Claude Code's tools → the argument that names what the step acted on (nothing else is read)
CLAUDE_TARGETS = {
    "Read": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path",
    "NotebookEdit": "notebook_path", "NotebookRead": "notebook_path", "Grep": "path", "Glob": "path", "LS": "path",
    "WebFetch": "url", "Task": "subagent_type",
}
PATCH_FILE_RE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)
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
        return "\n".join(b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") in ("text", "input_text") and isinstance(b.get("text"), str))
    return ""


def claude_code_trace(transcript: str, *, session_id: str = "", cwd: str = "") -> dict[str, Any]:
    """A Claude Code transcript (JSON Lines: `{"type": "user"|"assistant", "message": {"role",
    "content"}, "sessionId", "timestamp", "cwd", ...}`; assistant content blocks `tool_use {id,
    name, input}`, user content blocks `tool_result {tool_use_id, is_error}`) as a trace session."""
    actions: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    task = model = ended = ""
    for line in _lines(transcript):
        session_id = session_id or str(line.get("sessionId") or "")
        cwd = cwd or str(line.get("cwd") or "")
        ended = str(line.get("timestamp") or ended)
        message = line.get("message") if isinstance(line.get("message"), Mapping) else {}
        content = message.get("content")
        if line.get("type") == "assistant":
            model = model or str(message.get("model") or "")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, Mapping) and block.get("type") == "tool_use":
                    action = _claude_action(block, cwd)
                    if action is not None:
                        actions.append(action)
                        by_id[str(block.get("id"))] = action
        elif line.get("type") == "user":
            results = [b for b in content if isinstance(b, Mapping) and b.get("type") == "tool_result"] if isinstance(content, list) else []
            for block in results:
                action = by_id.get(str(block.get("tool_use_id")))
                if action is not None:
                    action["result"] = 1 if block.get("is_error") else 0
            if not results and not task and not line.get("isMeta"):
                text = _text(content).strip()
                if text and not text.startswith(("<command-", "<local-command", "Caveat:")):
                    task = text[:MAX_TASK]
    return _session(session_id, task, actions, model, ended)


def _claude_action(block: Mapping[str, Any], cwd: str) -> dict[str, Any] | None:
    name = _tool_name(block.get("name"))
    if name is None:
        return None
    arguments = block.get("input") if isinstance(block.get("input"), Mapping) else {}
    if name == "Bash":
        command = arguments.get("command")
        return {"command": command[:MAX_COMMAND]} if isinstance(command, str) and command.strip() else {"tool": "Bash"}
    action: dict[str, Any] = {"tool": name}
    key = CLAUDE_TARGETS.get(name)
    target = arguments.get(key) if key else None
    if key == "url" or key == "subagent_type":
        target = str(target)[:MAX_TARGET] if isinstance(target, str) and target else None
    else:
        target = _relative(target, cwd)
    if target:
        action["target"] = target
    return action


def codex_trace(transcript: str, *, session_id: str = "", cwd: str = "") -> dict[str, Any]:
    """A Codex rollout file (JSON Lines `{"timestamp", "type", "payload"}`: `session_meta {id, cwd}`,
    `response_item` payloads `message {role, content}`, `function_call {name, arguments, call_id}` and
    `function_call_output {call_id, output}` whose output JSON carries `metadata.exit_code`) as a
    trace session. The shell tool's command is the step; apply_patch's files are its targets."""
    actions: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    task = model = ended = ""
    for line in _lines(transcript):
        ended = str(line.get("timestamp") or ended)
        payload = line.get("payload") if isinstance(line.get("payload"), Mapping) else {}
        kind = payload.get("type")
        if line.get("type") == "session_meta":
            session_id = session_id or str(payload.get("id") or "")
            cwd = cwd or str(payload.get("cwd") or "")
        elif line.get("type") == "turn_context":
            model = model or str(payload.get("model") or "")
        elif kind == "message" and payload.get("role") == "user" and not task:
            text = _text(payload.get("content")).strip()
            if text and not text.startswith(("<environment_context>", "<user_instructions>")):
                task = text[:MAX_TASK]
        elif kind == "function_call":
            action = _codex_action(payload, cwd)
            if action is not None:
                actions.append(action)
                by_id[str(payload.get("call_id"))] = action
        elif kind == "function_call_output":
            action = by_id.get(str(payload.get("call_id")))
            if action is not None:
                action["result"] = _exit_code(payload.get("output"))
    return _session(session_id, task, actions, model, ended)


def _codex_action(payload: Mapping[str, Any], cwd: str) -> dict[str, Any] | None:
    name = _tool_name(payload.get("name"))
    if name is None:
        return None
    try:
        arguments = json.loads(payload.get("arguments") or "{}")
    except (TypeError, ValueError):
        arguments = {}
    if not isinstance(arguments, Mapping):
        arguments = {}
    if name in ("shell", "container.exec", "local_shell"):
        command = arguments.get("command")
        if isinstance(command, list) and command[:2] in (["bash", "-lc"], ["bash", "-c"], ["sh", "-c"]) and len(command) == 3:
            command = command[2]
        elif isinstance(command, list):
            command = " ".join(str(part) for part in command)
        if isinstance(command, str) and command.strip():
            if command.lstrip().startswith("apply_patch"):
                # the patch's first file is what the step edited; the patch itself never leaves
                found = PATCH_FILE_RE.search(command)
                target = _relative(found.group(1), cwd) if found else None
                return {"tool": "apply_patch", "target": target} if target else {"tool": "apply_patch"}
            return {"command": command[:MAX_COMMAND]}
        return {"tool": name}
    return {"tool": name}


def _exit_code(output: Any) -> int | None:
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except ValueError:
            return None
    metadata = output.get("metadata") if isinstance(output, Mapping) else None
    code = metadata.get("exit_code") if isinstance(metadata, Mapping) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


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


def main(argv: Iterable[str] | None = None, *, stdin=None, stdout=None, stderr=None) -> int:
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    parser = argparse.ArgumentParser(prog="procmem-capture", description=__doc__.split("\n\n")[0])
    parser.add_argument("harness", choices=sorted(READERS), help="whose transcript format to read")
    parser.add_argument("--transcript", help="the transcript file (default: transcript_path of the hook's JSON on standard input)")
    parser.add_argument("--session-id", default="", help="the session id (default: the hook's, else the transcript's)")
    parser.add_argument("--dry-run", action="store_true", help="print the trace session instead of sending it")
    args = parser.parse_args(list(argv) if argv is not None else None)
    hook: dict[str, Any] = {}
    if not args.transcript:
        try:
            hook = json.loads(stdin.read() or "{}")
        except ValueError:
            hook = {}
        if not isinstance(hook, dict) or not isinstance(hook.get("transcript_path"), str):
            stderr.write("procmem-capture: no --transcript and no hook JSON with transcript_path on standard input\n")
            return 2
    transcript = args.transcript or os.path.expanduser(hook["transcript_path"])
    try:
        session = READERS[args.harness](
            transcript, session_id=args.session_id or str(hook.get("session_id") or ""), cwd=str(hook.get("cwd") or ""),
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
    stderr.write(f"procmem-capture: session {session['session_id']}: {len(session['actions'])} steps; "
                 f"stored {counts.get('stored', 0)}, duplicate {counts.get('duplicate', 0)}, refused {counts.get('refused', 0)}\n")
    return 0 if not answer.get("refused") else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
