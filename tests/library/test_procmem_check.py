"""`procmem check` (procmem_client/check_cli.py) against a live server of the app, as an agent
repository's CI runs it: a process with PROCMEM_URL/PROCMEM_AGENT/PROCMEM_TOKEN, the tool list from
a real MCP server's tools/list (a small server made with the official MCP SDK), a selection fixture
and rendering snapshots; the same checks on `manage.py export_procedures`' directory. Exit codes
and JUnit XML are what CI reads. The Django-free tests of each check are in
clients/python/tests/test_agent_checks.py."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from django.core.management import call_command
from pytest_django.live_server_helper import LiveServer

from library import services
from library.api.tokens import token_create
from library.models import ApiToken
from library.serving import active_set as serving
from tests.conftest import make_active

REPO = Path(__file__).resolve().parents[2]
REFUND_TASK = "A customer wants a refund of 900 dollars, above my limit."
STATUS_TASK = "Where is my order? It has not arrived yet."

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "readonly"])

AGENT_TOOLS_SERVER = '''
"""The agent's own tools, served over MCP stdio with the official SDK (createApproval is gone)."""
from mcp.server.mcpserver import MCPServer

server = MCPServer("support-agent-tools")


@server.tool()
def lookupOrder(order_id: str) -> str:
    return "order " + order_id


@server.tool()
def checkReturnWindow(order_id: str) -> str:
    return "open"


@server.tool()
def replyTemplates(name: str) -> str:
    return name


server.run()
'''


@pytest.fixture
def server():
    serving.clear_cache()
    live = LiveServer("127.0.0.1:0")
    yield live
    live.stop()
    serving.clear_cache()


@pytest.fixture
def served(agent, candidate, other_procedure, admin_user):
    make_active(candidate, admin_user)
    make_active(other_procedure.versions.get(number=1), admin_user)
    return token_create(agent=agent, scope=ApiToken.Scope.READ, name="ci", user=admin_user)[1]


def procmem_check(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """`procmem check …` as a CI step runs it: its own process, the environment variables."""
    environment = {
        **os.environ,
        **(env or {}),
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(REPO / "clients" / "python"), os.environ.get("PYTHONPATH", "")])
        ),
    }
    environment.pop("GITHUB_ACTIONS", None)
    return subprocess.run(
        [sys.executable, "-m", "procmem_client.check_cli", "check", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
        cwd=cwd,
    )


def test_procmem_check_against_a_live_server_with_an_mcp_tool_list(
    server, agent, served, tmp_path, admin_user, reviewer, candidate
):
    env = {"PROCMEM_URL": server.url, "PROCMEM_AGENT": agent.name, "PROCMEM_TOKEN": served}
    tools_server = tmp_path / "agent_tools_mcp.py"
    tools_server.write_text(AGENT_TOOLS_SERVER)
    (tmp_path / "selection.yaml").write_text(
        textwrap.dedent(f"""
        - task: "{REFUND_TASK}"
          expect: [refund.over_limit]
        - task: "{STATUS_TASK}"
          intent: order_status
          expect: [order.status]
    """)
    )
    snapshots = tmp_path / "snapshots"
    snapshots.mkdir()
    (snapshots / "contexts.yaml").write_text(
        f'- name: refund_900\n  task: "{REFUND_TASK}"\n  base: You are the support agent.\n'
    )

    # the tool list from the agent's MCP server lacks createApproval: the build fails, naming both
    junit = tmp_path / "reports" / "procmem.xml"
    completed = procmem_check(
        "--tools",
        f"mcp:{sys.executable} {tools_server}",
        "--selection",
        str(tmp_path / "selection.yaml"),
        "--junit-xml",
        str(junit),
        env=env,
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr
    out = completed.stdout
    assert (
        f"FAIL tools     refund.over_limit v1 requires createApproval, which is not in the agent's tool list "
        f"(MCP tools/list of {sys.executable} {tools_server}, 3 tools)"
    ) in out
    assert "PASS tools     order.status v1" in out
    assert "PASS selection" in out and "procmem check: 1 failed, 3 passed" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("4", "1")
    [failed] = [case for case in suite.iter("testcase") if case.find("failure") is not None]
    assert failed.get("classname") == "procmem.tools" and failed.get("name") == "refund.over_limit v1"

    # a selection fixture that moves fails
    (tmp_path / "moved.yaml").write_text(
        f'- task: "{STATUS_TASK}"\n  intent: order_status\n  expect: [refund.over_limit]\n'
    )
    completed = procmem_check("--selection", str(tmp_path / "moved.yaml"), env=env)
    assert completed.returncode == 1
    assert "expected [refund.over_limit], got [order.status]" in completed.stdout

    # the snapshot: written with --update, then unchanged, then a reviewed edit makes it grow
    assert procmem_check("--snapshot", str(snapshots), env=env).returncode == 1  # no snapshot yet
    assert procmem_check("--snapshot", str(snapshots), "--update", env=env).returncode == 0
    written = (snapshots / "refund_900.txt").read_text(encoding="utf-8")
    assert written.startswith("You are the support agent.\n\nReviewed procedures for this task")
    assert procmem_check("--snapshot", str(snapshots), env=env).returncode == 0

    revised = services.version_revise(
        version=candidate,
        user=reviewer,
        applies_when=candidate.applies_when,
        steps=[*candidate.steps, "Log the approval request id in the ticket."],
        required_tools=candidate.required_tools,
        forbidden_actions=candidate.forbidden_actions,
        reason="audit trail",
    )
    make_active(revised, admin_user)
    completed = procmem_check("--snapshot", str(snapshots), env=env)
    assert completed.returncode == 1
    assert "FAIL snapshot  refund_900: the rendered instruction changed: " in completed.stdout
    assert "    -Procedure refund.over_limit v1 (" in completed.stdout
    assert "    +Procedure refund.over_limit v2 (" in completed.stdout
    assert "    +5. Log the approval request id in the ticket." in completed.stdout

    # the server cannot be read: exit 2, not a pass or an ordinary failure
    completed = procmem_check("--selection", str(tmp_path / "selection.yaml"), env={**env, "PROCMEM_TOKEN": "pm_wrong"})
    assert completed.returncode == 2 and "answered 401" in completed.stderr


def test_procmem_check_on_an_export_directory_agrees_with_the_live_server(server, agent, served, tmp_path):
    export = tmp_path / "procedures"
    call_command("export_procedures", str(export))
    (tmp_path / "tools.txt").write_text("lookupOrder\nreplyTemplates\ncheckReturnWindow\n")
    (tmp_path / "selection.jsonl").write_text(
        f'{{"task": "{REFUND_TASK}", "expect": ["refund.over_limit"]}}\n'
        f'{{"task": "{STATUS_TASK}", "intent": "order_status", "expect": ["order.status"]}}\n'
    )
    live = procmem_check(
        "--tools",
        str(tmp_path / "tools.txt"),
        "--selection",
        str(tmp_path / "selection.jsonl"),
        env={"PROCMEM_URL": server.url, "PROCMEM_AGENT": agent.name, "PROCMEM_TOKEN": served},
    )
    exported = procmem_check(
        "--export",
        str(export),
        "--agent",
        agent.name,
        "--tools",
        str(tmp_path / "tools.txt"),
        "--selection",
        str(tmp_path / "selection.jsonl"),
    )
    assert live.returncode == exported.returncode == 1, live.stdout + exported.stdout + exported.stderr
    for completed in (live, exported):
        assert "FAIL tools     refund.over_limit v1 requires createApproval" in completed.stdout
        assert completed.stdout.count("PASS selection") == 2
    assert f"export {export} (2 files)" in exported.stdout
