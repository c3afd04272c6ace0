"""`procmem check` and the pytest plugin on export directories and the fake server (no Django):
the tool check names the procedure and the missing tool, a selection fixture that moves fails, a
changed snapshot shows a diff, the exit codes, JUnit XML, and every way of giving the tool list.
tests/library/test_procmem_check.py runs the same against a live server and a real MCP server."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procmem_client.agent_checks import CheckError, check_selection, check_snapshots, export_library, load_tools
from procmem_client.check_cli import main, report
from procmem_client.ranking import EmbeddingCache, Ranker
from procmem_client.rendering import render_block

REFUND = {
    "version": 3,
    "status": "ACTIVE",
    "appliesWhen": "The customer asks for a refund above the agent's approval limit.",
    "steps": [
        "Look up the order with lookupOrder({{order_id}}).",
        "Create an approval request with createApproval({{order_id}}).",
    ],
    "requiredTools": ["lookupOrder", "createApproval"],
    "forbiddenActions": ["Do not promise a refund date before approval."],
    "evidence": {"miningRunId": 4},
    "approvedBy": "alice",
    "approvedAt": "2026-11-29T10:00:00Z",
}
STATUS = {
    "version": 1,
    "status": "ACTIVE",
    "appliesWhen": "The customer asks where the order is.",
    "steps": ["Look up the order with lookupOrder({{order_id}}).", "Reply with the carrier status."],
    "requiredTools": ["lookupOrder"],
    "forbiddenActions": [],
    "evidence": {},
    "approvedBy": "bob",
    "approvedAt": "2026-10-01T08:00:00Z",
}
TOOLS = ["lookupOrder", "createApproval", "replyTemplates"]


def write_export(root: Path, procedures: dict[str, tuple[str, list[dict]]], agent: str = "support_agent") -> Path:
    """An export directory as manage.py export_procedures writes it: <root>/<agent>/<id>.json."""
    for key, (intent, versions) in procedures.items():
        path = root / agent / f"{key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "format": "procmem.procedure/1",
            "id": key,
            "agent": agent,
            "intent": intent,
            "versions": [{"id": key, **v} for v in versions],
        }
        path.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    return root


@pytest.fixture
def export(tmp_path):
    return write_export(
        tmp_path / "export",
        {
            "refund.over_limit": ("refund_over_limit", [{**REFUND, "version": 2, "status": "RETIRED"}, REFUND]),
            "order.status": ("order_status", [STATUS]),
            "order.cancel": (
                "cancel_order",
                [{**STATUS, "version": 1, "status": "CANDIDATE", "requiredTools": ["cancelOrder"]}],
            ),
        },
    )


def keyword_ranker() -> Ranker:
    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray([[1.0, 0.0] if "refund" in t.lower() else [0.0, 1.0] for t in texts], dtype=np.float32)

    return Ranker(cache=EmbeddingCache(embed))


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", *argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------------------------------- tools


def test_a_missing_tool_fails_naming_the_procedure_and_the_tool(export, tmp_path):
    tools = tmp_path / "tools.txt"
    tools.write_text("# the agent's real tools\nlookupOrder\n\nreplyTemplates\n")
    code, out, err = run("--export", str(export), "--tools", str(tools))
    assert code == 1, out + err
    assert (
        f"FAIL tools     refund.over_limit v3 requires createApproval, which is not in the agent's tool list ({tools}, 2 tools)"
        in out
    )
    assert "PASS tools     order.status v1" in out
    assert "order.cancel" not in out and "v2" not in out  # only ACTIVE versions are checked
    assert out.rstrip().endswith("procmem check: 1 failed, 1 passed")

    tools.write_text("\n".join(TOOLS))
    code, out, _ = run("--export", str(export), "--tools", str(tools))
    assert code == 0 and "procmem check: 0 failed, 2 passed" in out


def test_the_tool_list_as_json_an_mcp_result_openai_definitions_or_an_import_path(export, tmp_path, monkeypatch):
    cases = {
        "list.json": json.dumps(TOOLS),
        "mcp.json": json.dumps({"tools": [{"name": t, "inputSchema": {"type": "object"}} for t in TOOLS]}),
        "openai.json": json.dumps([{"type": "function", "function": {"name": t, "parameters": {}}} for t in TOOLS]),
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        assert load_tools(str(tmp_path / name))[0] == TOOLS, name

    (tmp_path / "agent_tools.py").write_text(
        textwrap.dedent("""
        def lookupOrder(order_id): ...
        def createApproval(order_id): ...
        class Tool:
            def __init__(self, name): self.name = name
        TOOLS = [lookupOrder, createApproval, Tool("replyTemplates")]
        NAMES = {"lookupOrder": None, "createApproval": None}
        def tools(): return ["lookupOrder"]
        class Agent:
            tools = [Tool("lookupOrder"), {"name": "createApproval"}]
        agent = Agent()
        NUMBERS = [1, 2]
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_tools("agent_tools:TOOLS") == (TOOLS, "agent_tools:TOOLS")
    assert load_tools("py:agent_tools.NAMES")[0] == ["lookupOrder", "createApproval"]
    assert load_tools("agent_tools:tools")[0] == ["lookupOrder"]
    assert load_tools("agent_tools:agent")[0] == ["lookupOrder", "createApproval"]
    code, out, _ = run("--export", str(export), "--tools", "agent_tools:TOOLS")
    assert code == 0, out

    with pytest.raises(CheckError, match=r"agent_tools:NUMBERS: 1 is not a tool name"):
        load_tools("agent_tools:NUMBERS")
    with pytest.raises(CheckError, match="cannot import it"):
        load_tools("agent_tools:MISSING")
    with pytest.raises(CheckError, match="no such file"):
        load_tools(str(tmp_path / "absent.txt"))
    (tmp_path / "broken.json").write_text('["a",')
    with pytest.raises(CheckError, match="broken.json: not valid JSON"):
        load_tools(str(tmp_path / "broken.json"))


def test_exit_code_2_and_a_message_when_the_check_cannot_run(export, tmp_path):
    code, _, err = run("--export", str(export))
    assert code == 2 and "nothing to check" in err
    code, _, err = run("--export", str(export), "--tools", "py:json:loads")
    assert code == 2 and "--tools json:loads: a callable must take no arguments and return the tool list" in err
    (tmp_path / "tools.txt").write_text("lookupOrder\n")
    code, _, err = run("--export", str(tmp_path / "nowhere"), "--tools", str(tmp_path / "tools.txt"))
    assert code == 2 and "not a directory" in err
    code, _, err = run(
        "--url", "http://127.0.0.1:9", "--agent", "a", "--token", "t", "--tools", str(tmp_path / "none.txt")
    )
    assert code == 2 and "no such file" in err
    code, _, err = run(
        "--url", "http://127.0.0.1:9", "--agent", "a", "--token", "t", "--tools", str(tmp_path / "tools.txt")
    )
    assert code == 2 and "GET http://127.0.0.1:9/api/v1/agents/a/procedures" in err and "failed" in err
    code, _, err = run("--tools", str(tmp_path / "tools.txt"))
    assert code == 2 and "--url (or PROCMEM_URL)" in err
    bad = write_export(tmp_path / "bad", {"x.y": ("i", [{**REFUND, "steps": "one step"}])})
    code, _, err = run("--export", str(bad), "--tools", str(tmp_path / "tools.txt"))
    assert code == 2 and "x.y.json: versions[0].steps: must be a list of strings" in err


def test_the_live_server_is_read_with_the_token_and_its_refusals_are_reported(server, fake, tmp_path, monkeypatch):
    (tmp_path / "tools.txt").write_text("lookupOrder\n")
    monkeypatch.setenv("PROCMEM_URL", server.url)
    monkeypatch.setenv("PROCMEM_AGENT", fake.agent)
    monkeypatch.setenv("PROCMEM_TOKEN", fake.token)
    code, out, _ = run("--tools", str(tmp_path / "tools.txt"))
    assert code == 1 and "FAIL tools     refund.over_limit v1 requires createApproval" in out
    assert f'agent support_agent, {server.url} (set "' in out
    monkeypatch.setenv("PROCMEM_TOKEN", "pm_wrong")
    code, _, err = run("--tools", str(tmp_path / "tools.txt"))
    assert code == 2 and "answered 401: bad token" in err


# ------------------------------------------------------------------------------------------- selection


def test_a_selection_fixture_that_moves_fails(export, tmp_path):
    library = export_library(directory=export, ranker=keyword_ranker())
    fixture = tmp_path / "selection.jsonl"
    fixture.write_text(
        json.dumps({"task": "I want a refund of $900, above your limit", "expect": ["refund.over_limit"]})
        + "\n\n"
        + json.dumps({"task": "Where is my order?", "intent": "order_status", "expect": ["order.status"]})
        + "\n"
    )
    assert all(o.ok for o in check_selection(library, fixture))

    # the fixture moves: another procedure is expected than the one selected
    fixture.write_text(
        json.dumps({"task": "I want a refund of $900, above your limit", "expect": ["order.status"]}) + "\n"
    )
    [outcome] = check_selection(library, fixture)
    assert not outcome.ok
    assert (
        outcome.message
        == f"{fixture}:1 'I want a refund of $900, above your limit': expected [order.status], got [refund.over_limit]"
    )

    yaml_fixture = tmp_path / "selection.yaml"
    yaml_fixture.write_text(
        "- task: Where is my order?\n  intent: order_status\n  expect: [order.status]\n- task: x\n  expect: nothing\n"
    )
    with pytest.raises(CheckError, match=r"selection.yaml entry 2: expect: must be a list of procedure ids"):
        check_selection(library, yaml_fixture)


def test_selection_over_an_export_with_the_bundled_model_through_the_cli(model_and_data, export, tmp_path):
    fixture = tmp_path / "selection.yaml"
    fixture.write_text(
        "cases:\n- task: The customer wants a refund of 900 dollars, above my approval limit.\n  expect: [refund.over_limit]\n"
    )
    junit = tmp_path / "reports" / "procmem.xml"
    code, out, _ = run(
        "--export", str(export / "support_agent"), "--selection", str(fixture), "--junit-xml", str(junit)
    )
    assert code == 0, out
    fixture.write_text(
        "cases:\n- task: The customer wants a refund of 900 dollars, above my approval limit.\n  expect: []\n"
    )
    code, out, _ = run(
        "--export", str(export / "support_agent"), "--selection", str(fixture), "--junit-xml", str(junit)
    )
    assert code == 1 and "expected [], got [refund.over_limit]" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "1" and suite.get("failures") == "1"
    failure = suite.find("testcase").find("failure")
    assert "expected [], got [refund.over_limit]" in failure.get("message")


# ------------------------------------------------------------------------------------------- snapshot


def test_a_changed_snapshot_shows_a_readable_diff_and_update_accepts_it(export, tmp_path):
    snapshots = tmp_path / "snapshots"
    snapshots.mkdir()
    (snapshots / "contexts.yaml").write_text(
        "- name: refund_900\n  task: I want a refund of $900\n  base: You are the support agent.\n"
        "- name: where_is_my_order\n  task: Where is my order?\n  intent: order_status\n"
    )
    library = export_library(directory=export, ranker=keyword_ranker())
    first = check_snapshots(library, snapshots)
    assert [o.ok for o in first] == [False, False] and "run with --update to write it" in first[0].message

    written = check_snapshots(library, snapshots, update=True)
    assert all(o.ok for o in written) and "written" in written[0].message
    text = (snapshots / "refund_900.txt").read_text(encoding="utf-8")
    assert (
        text
        == "You are the support agent.\n\n"
        + render_block([{**REFUND, "id": "refund.over_limit", "intent": "refund_over_limit"}])["text"]
    )
    assert all(o.ok for o in check_snapshots(library, snapshots))

    # the library changes: a step is reworded and one added
    changed = {
        **REFUND,
        "steps": [
            REFUND["steps"][0],
            "Create an approval request with createApproval({{order_id}}, {{amount}}).",
            "Tell the customer the expected wait.",
        ],
    }
    write_export(export, {"refund.over_limit": ("refund_over_limit", [changed])})
    library = export_library(directory=export, ranker=keyword_ranker())
    printed = io.StringIO()
    report(check_snapshots(library, snapshots), printed)
    out = printed.getvalue()
    assert (
        "FAIL snapshot  refund_900: the rendered instruction changed: " in out
        and "review the diff, then run with --update" in out
    )
    assert "PASS snapshot  where_is_my_order: unchanged" in out
    assert f"    --- {snapshots / 'refund_900.txt'} (snapshot)" in out and "    +++ refund_900 (rendered now)" in out
    assert "    -2. Create an approval request with createApproval({{order_id}})." in out
    assert "    +2. Create an approval request with createApproval({{order_id}}, {{amount}})." in out
    assert "    +3. Tell the customer the expected wait." in out
    assert out.endswith("procmem check: 1 failed, 1 passed\n")

    updated = check_snapshots(library, snapshots, update=True)
    assert [o.message.split(" (")[0] for o in updated] == ["refund_900: updated", "where_is_my_order: unchanged"]
    assert all(o.ok for o in check_snapshots(library, snapshots))

    (snapshots / "contexts.yaml").write_text("- name: ../escape\n  task: t\n")
    code, _, err = run("--export", str(export), "--snapshot", str(snapshots))
    assert code == 2 and "name: '../escape' must be unique" in err


def test_github_actions_gets_error_annotations(export, tmp_path, monkeypatch):
    (tmp_path / "tools.txt").write_text("lookupOrder\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, _ = run("--export", str(export), "--tools", str(tmp_path / "tools.txt"))
    assert code == 1 and "::error title=procmem check tools::refund.over_limit v3 requires createApproval" in out


# ------------------------------------------------------------------------------------------- pytest plugin


def test_the_pytest_plugin_runs_the_checks_as_tests(export, tmp_path):
    project = tmp_path / "agent_repo"
    project.mkdir()
    (project / "tools.txt").write_text("lookupOrder\n")
    (project / "conftest.py").write_text('pytest_plugins = ["procmem_client.pytest_plugin"]\n')
    (project / "test_procmem.py").write_text(
        textwrap.dedent("""
        def test_tools(procmem):
            procmem.check_tools("tools.txt")

        def test_library_is_read_once(procmem):
            assert procmem.library is procmem.library and procmem.library.agent == "support_agent"
    """)
    )
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--procmem-export", str(export), str(project)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert (
        "FAIL tools: refund.over_limit v3 requires createApproval, which is not in the agent's tool list (tools.txt, 1 tool)"
        in completed.stdout
    )
    assert "1 failed, 1 passed" in completed.stdout


# ------------------------------------------------------------------------------------------- MCP tools/list

TOOLS_SERVER = """
import sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("agent-tools")
for name in ("lookupOrder", "createApproval", "replyTemplates"):
    server.add_tool(lambda order_id="": "", name=name, description=f"the agent's {name}")
if len(sys.argv) > 1:
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
else:
    server.run()
"""


def test_the_tool_list_from_an_mcp_server_over_stdio_and_streamable_http(tmp_path):
    """A small MCP server made with the official SDK; the check reads its tools/list with the SDK's client."""
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    import socket
    import time

    script = tmp_path / "tools_server.py"
    script.write_text(TOOLS_SERVER)
    names, label = load_tools(f"mcp:{sys.executable} {script}")
    assert (
        names == ["lookupOrder", "createApproval", "replyTemplates"]
        and label == f"MCP tools/list of {sys.executable} {script}"
    )

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(script), str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, (
                    process.stderr.read().decode() if process.poll() is not None else "no answer in 60 s"
                )
                time.sleep(0.2)
        assert load_tools(f"mcp:http://127.0.0.1:{port}/mcp")[0] == ["lookupOrder", "createApproval", "replyTemplates"]
    finally:
        process.terminate()
        process.wait(timeout=20)

    with pytest.raises(CheckError, match=r"tools/list failed"):
        load_tools(f"mcp:{sys.executable} -c 'import sys; sys.exit(3)'", timeout=20)


# ------------------------------------------------------------------------------------------- bad input

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["task", "expect", "intent", "name", "base", "tools", "cases", "x"]), children, max_size=5
        )
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    suffix=st.sampled_from([".jsonl", ".json", ".yaml", ".txt"]),
    payload=st.one_of(_json_values.map(json.dumps), st.text(max_size=200)),
)
def test_any_fixture_file_gives_outcomes_or_a_check_error_naming_it(tmp_path, suffix, payload):
    from procmem_client.agent_checks import Library, check_tools

    library = Library(
        agent="a",
        source="test",
        procedures=[{"id": "x.y", "version": 1, "requiredTools": ["t"]}],
        select=lambda task, intent: ([], ""),
    )
    path = tmp_path / f"fixture{suffix}"
    path.write_text(payload, encoding="utf-8")
    snapshots = tmp_path / "snap"
    snapshots.mkdir(exist_ok=True)
    (snapshots / "contexts.json").write_text(payload, encoding="utf-8")
    for check in (
        lambda: check_selection(library, path),
        lambda: check_snapshots(library, snapshots),
        lambda: check_tools(library, *load_tools(str(path))),
    ):
        try:
            outcomes = check()
        except CheckError as exc:
            assert str(path) in str(exc) or str(snapshots) in str(exc)
        else:
            assert all(o.check in ("selection", "snapshot", "tools") for o in outcomes)


# ------------------------------------------------------------------- what the command line says first


@pytest.mark.parametrize(
    "argv,expected",
    [
        ([], "the following arguments are required: {check,skills}"),  # was: "…required: command"
        (["skills"], "the following arguments are required: {sync}"),  # was: "…required: skills_command"
    ],
)
def test_a_missing_command_names_the_commands(argv, expected, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and expected in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv,env,expected",
    [
        (["skills", "sync", "DIR"], {"PROCMEM_URL": "http://procmem.test"}, "needs --token (or PROCMEM_TOKEN)"),
        (["skills", "sync", "DIR"], {"PROCMEM_TOKEN": "pm_x"}, "needs --url (or PROCMEM_URL)"),
        (["skills", "sync", "DIR"], {}, "needs --url and --token (or PROCMEM_URL, PROCMEM_TOKEN)"),
        (
            ["skills", "sync", "DIR", "--url", "127.0.0.1:8000", "--token", "pm_x"],
            {},
            "--url (or PROCMEM_URL) must be procmem's address, http://… or https://…; got '127.0.0.1:8000'",
        ),
        (
            ["check", "--tools", "TOOLS", "--url", "localhost:8000", "--agent", "a", "--token", "pm_x"],
            {},
            "--url (or PROCMEM_URL) must be procmem's address, http://… or https://…; got 'localhost:8000'",
        ),
    ],
)
def test_the_command_line_names_the_missing_or_bad_option(argv, env, expected, tmp_path, monkeypatch):
    """Without a scheme urllib said only "unknown url type: 127.0.0.1"; a missing token was reported
    as a missing --url and --token."""
    for name in ("PROCMEM_URL", "PROCMEM_TOKEN", "PROCMEM_AGENT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    tools = tmp_path / "tools.txt"
    tools.write_text("lookupOrder\n")
    argv = [str(tmp_path / "skills") if a == "DIR" else str(tools) if a == "TOOLS" else a for a in argv]
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out=out, err=err) == 2
    assert expected in err.getvalue(), err.getvalue()
    assert not (tmp_path / "skills").exists()


def test_a_fixture_entry_with_a_misspelt_key_names_it(export, tmp_path):
    """'entry 1: task: must be a non-empty string' did not say the entry had 'tsk' instead."""
    library = export_library(directory=export, ranker=keyword_ranker())
    fixture = tmp_path / "selection.jsonl"
    fixture.write_text(json.dumps({"tsk": "Where is my order?", "expect": []}) + "\n")
    with pytest.raises(CheckError) as refused:
        check_selection(library, fixture)
    assert str(refused.value).startswith(str(fixture)) and str(refused.value).endswith(
        "1: task: must be a non-empty string (the entry has 'tsk'; its keys are task, intent, expect, name)"
    )
    fixture.write_text(json.dumps({"task": "  ", "expect": []}) + "\n")  # present but blank: no hint
    with pytest.raises(CheckError, match=r"1: task: must be a non-empty string$"):
        check_selection(library, fixture)
