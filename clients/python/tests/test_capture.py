"""procmem-capture (procmem_client/capture.py) on transcripts in the harnesses' real formats (fixtures
written after the schemas docs/api.md "A capture hook for coding agents" cites): Claude Code's session
JSONL, a Codex rollout of the shell tool era (0.46) and one of unified exec (0.128). Per step only the
tool, its one identifying argument and the result code leave: no file contents, no outputs, no
reasoning, no prompts of subagents, no instructions."""

from __future__ import annotations

import io
import json
import os
import threading
import time
from pathlib import Path

from procmem_client.capture import claude_code_trace, codex_trace, main, read_hook_input

DATA = Path(__file__).parent / "data" / "transcripts"
ACTION_KEYS = {"tool", "command", "target", "result"}
SESSION_KEYS = {"session_id", "task", "actions", "model", "ended_at"}


def assert_only_the_trace_leaves(session):
    assert set(session) <= SESSION_KEYS
    assert all(set(action) <= ACTION_KEYS for action in session["actions"])
    # every fixture marks what must never leave with SECRET: file contents, outputs, patches,
    # reasoning, assistant text, instructions, a subagent's prompt and report, MCP arguments
    assert "SECRET" not in json.dumps(session)


def test_a_claude_code_transcript_becomes_a_trace_of_steps():
    session = claude_code_trace(str(DATA / "claude_code.jsonl"))
    assert session["session_id"] == "5d1c6b1e-8f7a-4c55-9d0e-1f2a3b4c5d6e"
    # the slash command, its output and the meta caveat before it are not the request
    assert session["task"] == "ModelChoiceField crashes when the queryset is empty; fix it and add a test"
    assert session["model"] == "claude-sonnet-4-5-20250929" and session["ended_at"] == "2026-11-30T10:02:15.500Z"
    assert session["actions"] == [
        {"tool": "Grep", "target": "django/forms", "result": 0},
        {"tool": "Read", "target": "django/forms/models.py", "result": 0},
        # the subagent is one step; its own (sidechain) Read is not a step of this session
        {"tool": "Agent", "target": "Explore", "result": 0},
        # a failed Bash: the exit code its result states ("Exit code 2")
        {"command": "python -m pytest tests/model_forms -x -q", "result": 2},
        {"tool": "Edit", "target": "django/forms/models.py", "result": 0},
        # TodoWrite is bookkeeping, not a step; the two parallel tool uses each get their own result line
        {"tool": "Write", "target": "tests/model_forms/test_empty_queryset.py", "result": 0},
        {"command": "python -m pytest tests/model_forms -x -q", "result": 0},
    ]
    assert_only_the_trace_leaves(session)


def test_a_claude_code_tool_use_written_twice_is_one_step(tmp_path):
    lines = (DATA / "claude_code.jsonl").read_text().splitlines()
    grep = next(line for line in lines if "toolu_01Grep" in line and '"assistant"' in line)
    transcript = tmp_path / "resumed.jsonl"
    transcript.write_text(
        "\n".join([*lines, grep, '{"type": "assistant", "message": {"content": [{"type": "tool_u']) + "\n"
    )
    # a tool_use seen again (a resumed or re-streamed message) and a half-written last line change nothing
    assert (
        claude_code_trace(str(transcript))["actions"] == claude_code_trace(str(DATA / "claude_code.jsonl"))["actions"]
    )


def test_a_codex_rollout_of_the_shell_tool_becomes_a_trace_of_steps():
    session = codex_trace(str(DATA / "codex_rollout.jsonl"))
    assert session["session_id"] == "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    # the user_instructions and environment_context messages Codex writes itself are not the task
    assert session["task"] == "Make Session.get retry on a 503" and session["model"] == "gpt-5-codex"
    assert session["actions"] == [
        {"command": "rg -n 'def get' src/requests/sessions.py", "result": 0},
        # the freeform apply_patch (custom_tool_call): its file, never the patch
        {"tool": "apply_patch", "target": "src/requests/sessions.py", "result": 0},
        {"command": "python -m pytest tests/test_sessions.py -q", "result": 1},
        # a patch through the shell tool (argv ["apply_patch", patch]): the same
        {"tool": "apply_patch", "target": "tests/test_retry.py", "result": 0},
    ]
    assert_only_the_trace_leaves(session)


def test_a_codex_rollout_of_unified_exec_becomes_a_trace_of_steps():
    session = codex_trace(str(DATA / "codex_rollout_unified_exec.jsonl"))
    assert session["session_id"] == "019dd8e4-15dd-7143-95e8-219014341717"
    # the user_message event is what the user typed (not AGENTS.md, not the environment, not the developer message)
    assert session["task"] == "Make Session.get retry on a 503, then run the tests" and session["model"] == "gpt-5.5"
    assert session["ended_at"] == "2026-11-30T12:00:40.100Z"
    assert session["actions"] == [
        # exec_command's output header: "Process exited with code 0"
        {"command": 'rg -n "def get" src/requests/sessions.py', "result": 0},
        {"tool": "apply_patch", "target": "src/requests/sessions.py", "result": 0},
        # still running at first; the write_stdin to its session says how it ended (write_stdin is no step,
        # and an "Exit code: 0" line in the output, below the header, is not read)
        {"command": "python -m pytest tests/test_sessions.py -q", "result": 1},
        # shell_command's freeform output: "Exit code: 0"
        {"command": "git diff --stat", "result": 0},
        # an MCP tool: its namespace and name, the result from mcp_tool_call_end, never its arguments
        {"tool": "mcp__github__search_issues", "result": 0},
        # update_plan is bookkeeping; the web search is the model's own (no result)
        {"tool": "web_search", "target": "urllib3 Retry status_forcelist 503"},
    ]
    assert_only_the_trace_leaves(session)


def test_codex_results_come_from_events_when_the_output_has_none(tmp_path):
    """Without exit codes in the outputs (an MCP tool's, a failed patch's text), the event_msgs
    exec_command_end / patch_apply_end / mcp_tool_call_end give the result."""
    lines = [
        {"timestamp": "t0", "type": "session_meta", "payload": {"id": "s-events", "cwd": "/w"}},
        {
            "timestamp": "t1",
            "type": "response_item",
            "payload": {
                "type": "local_shell_call",
                "call_id": "c1",
                "status": "completed",
                "action": {"type": "exec", "command": ["make", "test"], "working_directory": "/w"},
            },
        },
        {
            "timestamp": "t2",
            "type": "event_msg",
            "payload": {"type": "exec_command_end", "call_id": "c1", "exit_code": 2},
        },
        {
            "timestamp": "t3",
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c1", "output": "no header here"},
        },
        {
            "timestamp": "t4",
            "type": "response_item",
            "payload": {
                "type": "custom_tool_call",
                "call_id": "c2",
                "name": "apply_patch",
                "input": "*** Begin Patch\n*** Delete File: /w/old.py\n*** End Patch\n",
            },
        },
        {
            "timestamp": "t5",
            "type": "event_msg",
            "payload": {"type": "patch_apply_end", "call_id": "c2", "success": False},
        },
        {
            "timestamp": "t6",
            "type": "response_item",
            "payload": {
                "type": "custom_tool_call_output",
                "call_id": "c2",
                "output": "apply_patch verification failed",
            },
        },
        {
            "timestamp": "t7",
            "type": "response_item",
            "payload": {"type": "function_call", "name": "lookup", "arguments": "{}", "call_id": "c3"},
        },
        {
            "timestamp": "t8",
            "type": "event_msg",
            "payload": {"type": "mcp_tool_call_end", "call_id": "c3", "result": {"Err": "server gone"}},
        },
    ]
    transcript = tmp_path / "rollout.jsonl"
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert codex_trace(str(transcript))["actions"] == [
        {"command": "make test", "result": 2},
        {"tool": "apply_patch", "target": "old.py", "result": 1},
        {"tool": "lookup", "result": 1},
    ]


def test_the_hook_reads_its_json_from_standard_input():
    hook = {
        "session_id": "hook-7",
        "transcript_path": str(DATA / "claude_code.jsonl"),
        "cwd": "/home/alice/work/django",
        "hook_event_name": "SessionEnd",
        "reason": "exit",
    }
    out, err = io.StringIO(), io.StringIO()
    assert main(["claude-code", "--dry-run"], stdin=io.StringIO(json.dumps(hook)), stdout=out, stderr=err) == 0
    printed = json.loads(out.getvalue())
    assert printed["session_id"] == "hook-7" and len(printed["actions"]) == 7


def test_the_hook_input_is_read_without_waiting_for_the_pipe_to_close():
    """Claude Code may keep the hook's standard input open after writing the JSON: the hook reads
    the one JSON value and goes on, in pieces too."""
    read_end, write_end = os.pipe()
    hook = json.dumps({"session_id": "s", "transcript_path": "/tmp/t.jsonl"}).encode()
    os.write(write_end, hook[:10])
    threading.Timer(0.2, os.write, (write_end, hook[10:])).start()
    with os.fdopen(read_end, "rb", buffering=0) as stdin:
        started = time.monotonic()
        assert read_hook_input(stdin, timeout=30) == {"session_id": "s", "transcript_path": "/tmp/t.jsonl"}
        assert time.monotonic() - started < 10
    os.close(write_end)
    # nothing comes and the pipe stays open: it gives up after the timeout
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb", buffering=0) as stdin:
        assert read_hook_input(stdin, timeout=0.3) is None
    os.close(write_end)


def test_missing_input_and_settings_are_said_not_raised(tmp_path, monkeypatch):
    err = io.StringIO()
    assert main(["claude-code"], stdin=io.StringIO(""), stdout=io.StringIO(), stderr=err) == 2
    assert "transcript_path" in err.getvalue()
    err = io.StringIO()
    assert (
        main(
            ["codex", "--transcript", str(tmp_path / "none.jsonl")],
            stdin=io.StringIO(),
            stdout=io.StringIO(),
            stderr=err,
        )
        == 1
    )
    assert "cannot read the transcript" in err.getvalue()
    monkeypatch.delenv("PROCMEM_URL", raising=False)
    err = io.StringIO()
    assert (
        main(
            ["codex", "--transcript", str(DATA / "codex_rollout.jsonl")],
            stdin=io.StringIO(),
            stdout=io.StringIO(),
            stderr=err,
        )
        == 1
    )
    assert "PROCMEM_URL" in err.getvalue()
