"""procmem-capture (procmem_client/capture.py) on transcripts in the harnesses' formats: Claude Code's
session JSONL and a Codex rollout file (small fixtures written after their documented schemas). Per
step only the tool, its one identifying argument and the result code leave: no file contents, no
outputs, no reasoning."""

from __future__ import annotations

import io
import json
from pathlib import Path

from procmem_client.capture import claude_code_trace, codex_trace, main

DATA = Path(__file__).parent / "data" / "transcripts"


def test_a_claude_code_transcript_becomes_a_trace_of_steps():
    session = claude_code_trace(str(DATA / "claude_code.jsonl"))
    assert session["session_id"] == "5d1c6b1e-8f7a-4c55-9d0e-1f2a3b4c5d6e"
    assert session["task"] == "ModelChoiceField crashes when the queryset is empty; fix it and add a test"
    assert session["model"] == "claude-sonnet-4-5" and session["ended_at"] == "2026-11-30T10:02:15.000Z"
    assert session["actions"] == [
        {"tool": "Grep", "target": "django/forms", "result": 0},
        {"tool": "Read", "target": "django/forms/models.py", "result": 0},
        {"command": "python -m pytest tests/model_forms -x -q", "result": 1},
        {"tool": "Edit", "target": "django/forms/models.py", "result": 0},
        {"tool": "Write", "target": "tests/model_forms/test_empty_queryset.py", "result": 0},
        {"command": "python -m pytest tests/model_forms -x -q", "result": 0},
    ]
    sent = json.dumps(session)
    assert "SECRET" not in sent and "alice" not in sent and "Let me read" not in sent


def test_a_codex_rollout_becomes_a_trace_of_steps():
    session = codex_trace(str(DATA / "codex_rollout.jsonl"))
    assert session["session_id"] == "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    assert session["task"] == "Make Session.get retry on a 503" and session["model"] == "gpt-5-codex"
    assert session["actions"] == [
        {"command": "rg -n 'def get' src/requests/sessions.py", "result": 0},
        {"tool": "apply_patch", "target": "src/requests/sessions.py", "result": 0},
        {"command": "python -m pytest tests/test_sessions.py -q", "result": 1},
    ]
    assert "SECRET" not in json.dumps(session)


def test_the_hook_reads_its_json_from_standard_input(tmp_path):
    hook = {"session_id": "hook-7", "transcript_path": str(DATA / "claude_code.jsonl"), "cwd": "/home/alice/work/django",
            "hook_event_name": "SessionEnd", "reason": "exit"}
    out, err = io.StringIO(), io.StringIO()
    assert main(["claude-code", "--dry-run"], stdin=io.StringIO(json.dumps(hook)), stdout=out, stderr=err) == 0
    printed = json.loads(out.getvalue())
    assert printed["session_id"] == "hook-7" and len(printed["actions"]) == 6


def test_missing_input_and_settings_are_said_not_raised(tmp_path, monkeypatch):
    err = io.StringIO()
    assert main(["claude-code"], stdin=io.StringIO(""), stdout=io.StringIO(), stderr=err) == 2
    assert "transcript_path" in err.getvalue()
    err = io.StringIO()
    assert main(["codex", "--transcript", str(tmp_path / "none.jsonl")], stdin=io.StringIO(), stdout=io.StringIO(), stderr=err) == 1
    assert "cannot read the transcript" in err.getvalue()
    monkeypatch.delenv("PROCMEM_URL", raising=False)
    err = io.StringIO()
    assert main(["codex", "--transcript", str(DATA / "codex_rollout.jsonl")], stdin=io.StringIO(), stdout=io.StringIO(), stderr=err) == 1
    assert "PROCMEM_URL" in err.getvalue()
