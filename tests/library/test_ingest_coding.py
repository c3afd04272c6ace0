"""Coding agents' sessions: mini-swe-agent trajectories (import_sessions --format mini-swe-agent) and
the trace-hook format (import and POST /api/v1/sessions?format=trace)."""

import io
import json
import tarfile

import pytest
from django.core.management import CommandError, call_command

from library.api.tokens import token_create
from library.ingest.formats import (
    MAX_OUTPUT_CHARS,
    ImportOptions,
    ItemInvalid,
    outcomes_from_results,
    parse_item,
    parse_mini_swe_agent,
    parse_trace,
)
from library.models import Agent, AgentSession, ApiToken

from ..conftest import SWEBENCH_RESULTS, SWEBENCH_TRAJS


def traj(instance_id="django__django-1", commands=(("grep -rn Foo django/", 0, "django/a.py:1"),), submit=True):
    messages = [
        {"role": "system", "content": "You are a helpful assistant"},
        {
            "role": "user",
            "content": "<pr_description>\nConsider the following PR description:\nFoo breaks for anna@example.com\n</pr_description>",
        },
    ]
    for command, code, output in commands:
        messages.append({"role": "assistant", "content": f"THOUGHT: look\n\n```bash\n{command}\n```"})
        messages.append({"role": "user", "content": f"<returncode>{code}</returncode>\n<output>\n{output}\n</output>"})
    if submit:
        messages.append(
            {
                "role": "assistant",
                "content": "THOUGHT: done\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\n```",
            }
        )
        messages.append({"role": "user", "content": "diff --git a/django/a.py b/django/a.py\n+fixed"})
    return {
        "instance_id": instance_id,
        "trajectory_format": "mini-swe-agent-1",
        "info": {"exit_status": "Submitted", "submission": "diff --git a/django/a.py"},
        "messages": messages,
    }


def test_mini_swe_agent_commands_become_classified_calls_with_return_codes():
    item = traj(
        commands=[
            ("grep -rn Foo django/", 0, "django/a.py:1"),
            ("cat <<'EOF' > reproduce.py\nimport django\nEOF", 0, ""),
            ("python reproduce.py", 1, "Traceback: boom"),
            ("sed -i 's/a/b/' django/a.py", 0, ""),
            ("./tests/runtests.py foo_tests", 0, "OK"),
        ]
    )
    # a turn with two commands was refused by the agent's loop and ran nothing
    item["messages"].insert(4, {"role": "assistant", "content": "```bash\nls\n```\n```bash\npwd\n```"})
    item["messages"].insert(
        5, {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks."}
    )
    session = parse_item(item, options=ImportOptions(outcomes={"django__django-1": True}))
    assert session.source_format == "mini-swe-agent" and session.resolved is True and session.intent == "resolve_issue"
    assert session.task == "Foo breaks for anna@example.com"
    assert session.skeleton == ["search", "edit:script", "run:script", "edit:source", "test", "submit"]
    run = session.tool_calls[2]
    assert run["name"] == "python" and run["ok"] is False
    assert run["args"] == {
        "activity": "run",
        "step": "run:script",
        "command": "python reproduce.py",
        "path": "reproduce.py",
        "target": "{{script}}",
        "role": "script",
        "returncode": 1,
        "output": "Traceback: boom\n",
    }
    assert session.tool_calls[-1]["ok"] is None and "output" not in session.tool_calls[-1]["args"]
    assert session.reply == "diff --git a/django/a.py"


def test_mini_swe_agent_outputs_are_truncated():
    session = parse_mini_swe_agent(traj(commands=[("cat big.py", 0, "x" * 10 * MAX_OUTPUT_CHARS)]))
    assert len(session.tool_calls[0]["args"]["output"]) == MAX_OUTPUT_CHARS


def test_mini_swe_agent_errors_name_the_field():
    with pytest.raises(ItemInvalid) as caught:
        parse_mini_swe_agent({"instance_id": "", "messages": [{"content": "no role"}]})
    fields = {e.field for e in caught.value.errors}
    assert {"instance_id", "messages[0]"} <= fields


def test_outcome_files_of_three_shapes():
    assert outcomes_from_results(
        {"instances": [{"instance_id": "a", "resolved": True}, {"instance_id": "b", "resolved": False}]}
    ) == {"a": True, "b": False}
    assert outcomes_from_results({"resolved": ["a"], "unresolved": ["b"]}) == {"a": True, "b": False}
    assert outcomes_from_results({"a": True}) == {"a": True}
    with pytest.raises(ValueError, match=r"instances\[0\]"):
        outcomes_from_results({"instances": [{"instance_id": "a"}]})


def test_trace_actions_carry_tool_or_command_target_and_result_only():
    session = parse_trace(
        {
            "session_id": "t-1",
            "outcome": {"resolved": False},
            "task": "fix the bug",
            "actions": [
                {"tool": "Grep", "target": "django/forms"},
                {"tool": "Read", "target": "django/forms/models.py", "result": 0},
                {"tool": "Edit", "target": "django/forms/models.py", "result": 0},
                {"command": "python -m pytest tests/forms/test_models.py", "result": 1},
            ],
        }
    )
    assert session.skeleton == ["search", "read:source", "edit:source", "test"]
    assert [c["ok"] for c in session.tool_calls] == [None, True, True, False]
    assert session.tool_calls[3]["args"]["path"] == "tests/forms/test_models.py"
    assert session.resolved is False and session.source_format == "trace"


def test_trace_refuses_extra_fields_and_bad_results():
    with pytest.raises(ItemInvalid) as caught:
        parse_trace(
            {
                "session_id": "t-2",
                "actions": [
                    {"tool": "Read", "output": "secret file contents"},
                    {"tool": "Edit", "result": "fine"},
                    {"target": "x.py"},
                ],
            }
        )
    assert [e.field for e in caught.value.errors] == ["actions[0]", "actions[1].result", "actions[2]"]
    assert "output" in caught.value.errors[0].message


@pytest.mark.django_db
def test_import_sessions_reads_a_directory_and_an_archive_with_an_outcome_file(tmp_path):
    folder = tmp_path / "trajs"
    for name, resolved in (("django__django-1", True), ("django__django-2", False)):
        (folder / name).mkdir(parents=True)
        (folder / name / f"{name}.traj.json").write_text(json.dumps(traj(name)))
    (folder / "broken.traj.json").write_text("{not json")
    outcomes = tmp_path / "results.json"
    outcomes.write_text(
        json.dumps(
            {
                "instances": [
                    {"instance_id": "django__django-1", "resolved": True},
                    {"instance_id": "django__django-2", "resolved": False},
                ]
            }
        )
    )
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="1 item"):
        _import_trajectories(str(folder), "--outcomes", str(outcomes), stdout=out, stderr=err)
    assert "2 stored" in out.getvalue() and "broken.traj.json" in err.getvalue()
    agent = Agent.objects.get(name="coder")
    assert agent.kind == Agent.Kind.CODING
    assert dict(AgentSession.objects.filter(agent=agent).values_list("session_id", "resolved")) == {
        "django__django-1": True,
        "django__django-2": False,
    }
    (folder / "broken.traj.json").unlink()
    archive = tmp_path / "trajs.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="trajs")
    out = io.StringIO()
    _import_trajectories(str(archive), create_agent=False, stdout=out)
    assert "0 stored, 2 duplicate, 0 refused" in out.getvalue()


def _import_trajectories(path, *options, agent="coder", create_agent=True, stdout=None, stderr=None):
    """`manage.py import_sessions PATH --format mini-swe-agent --agent AGENT [--create-agent]
    --no-progress OPTIONS…`, its output to `stdout` and `stderr` (thrown away when not given)."""
    args = ["import_sessions", str(path), "--format", "mini-swe-agent", "--agent", agent, "--no-progress"]
    args += ["--create-agent"] if create_agent else []
    stdout = io.StringIO() if stdout is None else stdout
    call_command(*args, *options, stdout=stdout, stderr=io.StringIO() if stderr is None else stderr)


def _stored(agent_name):
    return list(
        AgentSession.objects.filter(agent__name=agent_name)
        .order_by("session_id")
        .values_list("session_id", "task_key", "resolved", "skeleton", "tool_calls", "redacted_excerpt", "task")
    )


def _trajectory_folder(tmp_path, count, commands):
    """`count` pretty-printed trajectories django__django-1 … in tmp_path/trajs; commands(number) gives each one's."""
    folder = tmp_path / "trajs"
    folder.mkdir()
    for number in range(1, count + 1):
        name = f"django__django-{number}"
        (folder / f"{name}.traj.json").write_text(json.dumps(traj(name, commands(number)), indent=2))
    return folder


@pytest.mark.django_db
def test_worker_processes_store_what_one_process_stores(tmp_path):
    folder = _trajectory_folder(
        tmp_path,
        12,
        lambda number: [
            (f"grep -rn Foo{number} django/", 0, "django/a.py:1"),
            (f"python reproduce_{number}.py", 1, "Error for mia.li@example.com"),
        ],
    )
    (folder / "django__django-5.traj.json").write_text('{\n  "instance_id": "django__django-5",\n  "messages": oops\n}')
    for workers, agent in (("1", "one"), ("2", "two"), ("3", "three")):
        out, err = io.StringIO(), io.StringIO()
        with pytest.raises(CommandError, match="1 item"):
            _import_trajectories(
                str(folder), "--workers", workers, "--batch-size", "4", agent=agent, stdout=out, stderr=err
            )
        assert "11 stored, 0 duplicate, 1 refused" in out.getvalue()
        # the broken file is named with the line where the reading stopped
        assert err.getvalue().strip() == f"{folder}/django__django-5.traj.json: line 3: invalid JSON: Expecting value"
    assert _stored("one") == _stored("two") == _stored("three")
    assert all(
        "mia.li@example.com" not in json.dumps(row[5]) and "{{email_address}}" in json.dumps(row[5])
        for row in _stored("two")
    )
    assert Agent.objects.get(name="two").tools == Agent.objects.get(name="one").tools == ["grep", "python", "submit"]


def test_the_caller_is_told_when_the_workers_are_on_the_last_files(tmp_path):
    # pipeline.import_outcomes' on_idle: once every file is read, while the next file's outcomes are
    # not ready (the command stores meanwhile), and once after the last file's; the outcomes as in one process
    from library.ingest.pipeline import ImportSpec, import_outcomes
    from library.ingest.reader import iter_session_files

    folder = _trajectory_folder(tmp_path, 8, lambda number: [(f"grep -rn Foo{number} django/", 0, "x" * 20000)])
    spec = ImportSpec(fmt="mini-swe-agent")
    calls: list[tuple[bool, int]] = []
    received: list = []

    def on_idle(last: bool) -> None:
        calls.append((last, len(received)))

    for name, outcome in import_outcomes(iter_session_files(str(folder)), spec, workers=2, on_idle=on_idle):
        received.append((name, outcome.session_id, outcome.fields["tool_calls"]))
    alone = [
        (name, outcome.session_id, outcome.fields["tool_calls"])
        for name, outcome in import_outcomes(iter_session_files(str(folder)), spec, workers=1, on_idle=on_idle)
    ]
    assert [entry[:2] for entry in received] == [entry[:2] for entry in alone] and len(alone) == 8
    assert calls[-1] == (True, 8) and [last for last, _ in calls].count(True) == 1  # not called in one process


@pytest.mark.django_db
def test_a_broken_archive_keeps_what_was_read_before_the_break(tmp_path):
    folder = _trajectory_folder(tmp_path, 40, lambda number: [(f"cat file_{number}_{'x' * 4000}.py", 0, "y" * 3000)])
    archive = tmp_path / "trajs.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=0) as tar:
        tar.add(folder, arcname="trajs")
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(
        CommandError,
        match=r"trajs\.tar\.gz:trajs/django__django-\d+\.traj\.json: .* \((\d+) sessions stored before it\)",
    ) as caught:
        _import_trajectories(str(archive), "--workers", "2")
    stored = AgentSession.objects.filter(agent__name="coder").count()
    assert 10 < stored < 40 and f"({stored} sessions stored before it)" in str(caught.value)


@pytest.mark.django_db
def test_a_corrupt_gzip_archive_stops_the_import_with_a_clear_error(tmp_path):
    # the archive is gunzipped by ISA-L (library/ingest/reader.py): its errors are the command's too
    folder = _trajectory_folder(tmp_path, 20, lambda number: [(f"grep -rn Foo{number} django/", 0, "x" * 2000)])
    archive = tmp_path / "trajs.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="trajs")
    data = archive.read_bytes()
    archive.write_bytes(data[:200] + bytes(400) + data[600:])  # deflate data that does not decode
    with pytest.raises(CommandError, match=r"trajs\.tar\.gz.*\((\d+) sessions stored before it\)"):
        _import_trajectories(str(archive))


@pytest.mark.django_db
def test_a_worker_that_dies_stops_the_import_with_a_clear_error(tmp_path, monkeypatch):
    import os

    from library.ingest import pipeline

    folder = _trajectory_folder(tmp_path, 6, lambda number: [(f"grep -rn Foo{number} django/", 0, "django/a.py:1")])
    # the forked workers inherit it (the function a worker runs is sent by name, and calls this one);
    # the command's process, which prepares files too, reads them as before
    command, file_outcomes = os.getpid(), pipeline.file_outcomes
    monkeypatch.setattr(
        pipeline,
        "file_outcomes",
        lambda *args, **kwargs: file_outcomes(*args, **kwargs) if os.getpid() == command else os._exit(3),
    )
    with pytest.raises(
        CommandError, match=r"a worker process stopped unexpectedly .*; try --workers 1 \(0 sessions stored before it\)"
    ):
        _import_trajectories(str(folder), "--workers", "2")
    assert not AgentSession.objects.filter(agent__name="coder").exists()


@pytest.mark.django_db
@pytest.mark.timeout(120)
def test_one_worker_dying_among_several_stops_the_import_and_the_others(tmp_path, monkeypatch):
    # given: three processes (the command and two workers); the first worker to read a file dies,
    # the other one goes on, and the command prepares files the workers have not started
    import os

    from library.ingest import pipeline

    folder = _trajectory_folder(tmp_path, 40, lambda number: [(f"grep -rn Foo{number} django/", 0, "x" * 3000)])
    command, file_outcomes, marker = os.getpid(), pipeline.file_outcomes, str(tmp_path / "died")

    def one_worker_dies(*args, **kwargs):
        if os.getpid() != command:
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
            else:
                os._exit(3)
        return file_outcomes(*args, **kwargs)

    monkeypatch.setattr(pipeline, "file_outcomes", one_worker_dies)
    # when / then: the import stops with the error, having stored the files before the broken one,
    # and returns: the other worker is stopped too (nothing is left waiting for it)
    with pytest.raises(CommandError, match=r"a worker process stopped unexpectedly .*; try --workers 1") as caught:
        _import_trajectories(str(folder), "--workers", "3")
    stored = AgentSession.objects.filter(agent__name="coder").count()
    assert str(caught.value).endswith(f"({stored} sessions stored before it)") and stored < 40


@pytest.mark.django_db
@pytest.mark.parametrize(
    "args, env, message",
    [
        (("--workers", "0"), "", "--workers must be at least 1, got 0"),
        (("--batch-size", "0"), "", "--batch-size must be at least 1, got 0"),
        ((), "two", "PROCMEM_IMPORT_WORKERS must be a whole number, got 'two'"),
        ((), "0", "PROCMEM_IMPORT_WORKERS must be at least 1, got 0"),
    ],
)
def test_a_bad_worker_count_is_refused_before_anything_is_written(tmp_path, monkeypatch, args, env, message):
    monkeypatch.setenv("PROCMEM_IMPORT_WORKERS", env)
    (tmp_path / "a.traj.json").write_text(json.dumps(traj()))
    with pytest.raises(CommandError) as caught:
        _import_trajectories(str(tmp_path), *args)
    assert str(caught.value) == message
    assert not Agent.objects.filter(name="coder").exists()


@pytest.mark.django_db
def test_bad_outcome_file_is_named(tmp_path):
    bad = tmp_path / "results.json"
    bad.write_text("[1, 2]")
    with pytest.raises(CommandError, match="--outcomes"):
        _import_trajectories(str(tmp_path), "--outcomes", str(bad))


@pytest.mark.django_db
def test_all_231_real_trajectories_import_redacted_with_their_outcomes(swebench_dir):
    out, err = io.StringIO(), io.StringIO()
    _import_trajectories(
        str(SWEBENCH_TRAJS), "--outcomes", str(SWEBENCH_RESULTS), agent="swe-gemini", stdout=out, stderr=err
    )
    assert "231 stored, 0 duplicate, 0 refused" in out.getvalue()
    sessions = AgentSession.objects.filter(agent__name="swe-gemini")
    assert sessions.filter(resolved=True).count() == 179 and sessions.filter(resolved=False).count() == 52
    steps = [step for skeleton in sessions.values_list("skeleton", flat=True) for step in skeleton]
    assert len(steps) > 8000 and steps.count("other") / len(steps) < 0.05
    # every session ends with its submit, and the excerpt holds the commands, redacted and short
    assert sum("submit" in skeleton for skeleton in sessions.values_list("skeleton", flat=True)) == 231
    excerpt = sessions.get(session_id="django__django-14915").redacted_excerpt
    call = next(e for e in excerpt if e["role"] == "tool_call")
    assert call["args"]["activity"] == "search" and len(call["args"]["output"]) <= 200


@pytest.mark.django_db
def test_post_sessions_accepts_the_trace_format(client, agent):
    token = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest")[1]
    body = {
        "sessions": [
            {
                "session_id": "hook-1",
                "outcome": {"resolved": True},
                "actions": [{"tool": "Read", "target": "a/b.py"}, {"command": "pytest tests/test_b.py", "result": 0}],
            },
            {"session_id": "hook-2", "actions": [{"tool": "Read", "args": {"x": 1}}]},
        ]
    }
    response = client.post(
        "/api/v1/sessions?format=trace",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 207
    assert response.json()["stored"] == ["hook-1"]
    assert response.json()["refused"][0]["errors"][0]["field"] == "actions[0]"
    stored = AgentSession.objects.get(agent=agent, session_id="hook-1")
    assert stored.skeleton == ["read:source", "test"] and stored.source_format == "trace"


@pytest.mark.django_db
def test_an_output_is_cut_before_redaction_without_leaking_a_value_across_the_cut(agent):
    from library.ingest.store import EXCERPT_ARG_CHARS, build_excerpt, redactor_for

    output = "x" * (EXCERPT_ARG_CHARS - 10) + " anna.schmidt@example.com " + "y" * 3000
    session = parse_mini_swe_agent(traj(commands=[("cat log.txt", 0, output)]))
    excerpt = build_excerpt(session, redactor_for(session, agent.redaction_patterns))
    shown = next(e for e in excerpt if e["role"] == "tool_call")["args"]["output"]
    assert "anna" not in shown and "example.com" not in shown and len(shown) <= EXCERPT_ARG_CHARS
