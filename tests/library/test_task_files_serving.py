"""The files a coding task's words point to, served (issue 38): the file index built from an agent's
stored sessions by one service (and by each mining run), nothing personal in it; the select endpoint's
optional `taskFiles`, after which each injected coding procedure's recallPointer names the task's files
first (without it, byte for byte as before); GET …/file-index for clients that rank locally."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from library import services
from library.api.tokens import token_create
from library.mining.coding_runs import coding_mining_run
from library.models import Agent, AgentSession, ApiToken, CodingFileIndex, MiningRun, ProcedureVersion, Source, Status
from library.serving import task_files as served_files
from procmem_client.coding import recall_pointer
from procmem_client.task_files import TASK_FILES, TaskFileIndex, indexes_from_response, task_pointer
from tests.conftest import make_active

pytestmark = pytest.mark.usefixtures("readonly_shares_default")

TASK = "Rational('0.5') prints wrong with StrPrinter"


def call(command: str, output: str = "", activity: str = "read") -> dict:
    return {"name": "shell", "args": {"activity": activity, "command": command, "output": output}, "ok": True}


GREP = call(
    'grep -rn "class Rational" sympy',
    "sympy/core/numbers.py:1483:class Rational(Number):\n"
    "/home/alice/src/sympy/sympy/core/numbers.py:9:class AliceSecret:\n"
    "/usr/lib/python3/dist-packages/mpmath/rational.py:3:class mpq:",
)
CAT = call("sed -n '1,40p' sympy/printing/str.py", "class StrPrinter(Printer):\n    def _print_Rational(self, expr):")
PERSONAL = call(
    "cat /home/alice/notes/todo.py ~/secrets/keys.py ../outside/thing.py .venv/lib/site.py",
    'File "/Users/bob/work/sympy/sympy/core/basic.py", line 3\n'
    'File "/testbed/sympy/sets/sets.py", line 3\n'
    "venv/lib/python3.11/site-packages/numpy/core/numeric.py",
)
EDIT = call("sed -i 's/a/b/' sympy/core/add.py", activity="edit")
TEST = call("./bin/test sympy/core/tests/test_numbers.py", "ok", activity="test")


def _session(agent: Agent, n: int, calls: list[dict], *, key: str | None = None, resolved: bool = True) -> AgentSession:
    return AgentSession.objects.create(
        agent=agent,
        session_id=f"s{n}",
        task=f"task {n}",
        task_key=key or f"sympy__sympy-{n}",
        resolved=resolved,
        tool_calls=calls,
        intent=agent.intents.get(name="refund_over_limit"),
    )


@pytest.fixture
def coding_agent(agent):
    agent.kind = Agent.Kind.CODING
    agent.min_tool_calls = 1
    agent.save()
    return agent


@pytest.fixture
def sessions(coding_agent):
    return [
        _session(coding_agent, 1, [GREP, EDIT, TEST]),
        _session(coding_agent, 2, [CAT, PERSONAL, EDIT, TEST]),
        _session(coding_agent, 3, [call("cat django/db/models/query.py", "class QuerySet:")], key="django__django-7"),
    ]


def _fix(agent, proposer, *, repository: str = "sympy/sympy") -> ProcedureVersion:
    return services.procedure_propose(
        agent=agent,
        intent=agent.intents.get(name="refund_over_limit"),
        key="fix.sympy.core",
        applies_when="Fix a bug in sympy/core (sympy/core/add.py). More after the first sentence.",
        steps=["Read sympy/core/add.py.", "Edit it.", "Run ./bin/test {{test_file}}."],
        required_tools=[],
        forbidden_actions=[],
        source=Source.MANUAL,
        proposed_by=proposer,
        evidence={"repository": repository, "family": {"key": "sympy/core", "repository": repository}},
        preconditions=["Read before the edit: sympy/core/basic.py."],
        postconditions=["Changed: sympy/core/add.py.", "Changed: sympy/core/tests/test_add.py."],
        verify_command="./bin/test {{test_file}}",
    )


# --------------------------------------------------------------------------------------------- the index


def test_the_index_keeps_repository_relative_source_paths_and_identifiers_only(sessions, coding_agent):
    rows = services.file_indexes_rebuild(agent=coding_agent)
    by_repository = {row.repository: row for row in rows}
    assert set(by_repository) == {"sympy/sympy", "django/django"}
    sympy = by_repository["sympy/sympy"]
    assert sympy.sessions == 2
    assert sympy.files == [
        "sympy/core/add.py",
        "sympy/core/numbers.py",
        "sympy/printing/str.py",
        "sympy/sets/sets.py",
    ]
    index = TaskFileIndex.from_dict({"files": sympy.files, "definitions": sympy.definitions})
    assert index.definitions == {
        "Rational": {"sympy/core/numbers.py"},
        "StrPrinter": {"sympy/printing/str.py"},
        "_print_Rational": {"sympy/printing/str.py"},
    }
    stored = json.dumps([sympy.files, sympy.definitions])
    for personal in ("alice", "bob", "Users", "home", "secrets", "outside", "venv", "site-packages", "mpmath", "mpq"):
        assert personal not in stored, personal
    assert index.files_for(TASK) == ["sympy/core/numbers.py", "sympy/printing/str.py"]


def test_a_rebuild_leaves_unchanged_indexes_and_drops_those_of_no_session(sessions, coding_agent):
    first = {row.repository: row for row in services.file_indexes_rebuild(agent=coding_agent)}
    again = {row.repository: row for row in services.file_indexes_rebuild(agent=coding_agent)}
    assert {r: (row.pk, row.built_at, row.digest) for r, row in first.items()} == {
        r: (row.pk, row.built_at, row.digest) for r, row in again.items()
    }
    AgentSession.objects.filter(agent=coding_agent, task_key="django__django-7").delete()
    services.file_indexes_rebuild(agent=coding_agent)
    assert list(CodingFileIndex.objects.filter(agent=coding_agent).values_list("repository", flat=True)) == [
        "sympy/sympy"
    ]


def test_a_mining_run_rebuilds_the_index_and_makes_nothing_active(sessions, coding_agent, admin_user):
    run = MiningRun.objects.create(agent=coding_agent, parameters={})
    coding_mining_run(agent=coding_agent, run=run, user=admin_user)
    run.refresh_from_db()
    assert run.counts["fileIndexes"] == 2
    assert set(CodingFileIndex.objects.filter(agent=coding_agent).values_list("mining_run", flat=True)) == {run.pk}
    assert not ProcedureVersion.objects.filter(procedure__agent=coding_agent, status=Status.ACTIVE).exists()


# --------------------------------------------------------------------------------------------- select


def bearer(raw: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


@pytest.fixture
def read_token(coding_agent, admin_user):
    return token_create(agent=coding_agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]


@pytest.fixture
def served_fix(sessions, coding_agent, proposer, admin_user):
    version = make_active(_fix(coding_agent, proposer), admin_user)
    services.file_indexes_rebuild(agent=coding_agent)
    served_files.clear_cache()
    return version


def select_url(api_version: str = "v1") -> str:
    name = "api:select" if api_version == "v1" else "api:v2:select"
    return reverse(name, kwargs={"agent": "support_agent"})


@pytest.mark.parametrize("api_version", ["v1", "v2"])
def test_select_names_the_tasks_files_first_only_when_asked(client, read_token, served_fix, api_version):
    task = f"{TASK} in sympy/core/add.py"
    plain = client.get(select_url(api_version), {"task": task}, **bearer(read_token))
    asked = client.get(select_url(api_version), {"task": task, "taskFiles": "true"}, **bearer(read_token))
    off = client.get(select_url(api_version), {"task": task, "taskFiles": "0"}, **bearer(read_token))
    posted = client.post(
        select_url(api_version),
        json.dumps({"task": task, "taskFiles": True}),
        content_type="application/json",
        **bearer(read_token),
    )
    assert plain.status_code == asked.status_code == off.status_code == posted.status_code == 200
    # without the field (or with false) the answer is byte for byte what it was: the set's pointer
    assert off.content == plain.content
    record = plain.json()["injected"][0]
    assert record["id"] == "fix.sympy.core"
    served_set = client.get(
        reverse("api:active_set" if api_version == "v1" else "api:v2:active_set", kwargs={"agent": "support_agent"}),
        **bearer(read_token),
    ).json()
    assert record["recallPointer"] == served_set["procedures"][0]["recallPointer"] == recall_pointer(record)
    # with it: the task's files first, then the family's; the same bound and format
    pointer = asked.json()["injected"][0]["recallPointer"]
    assert pointer["files"] == [
        "sympy/core/add.py",
        "sympy/core/numbers.py",
        "sympy/printing/str.py",
        "sympy/core/basic.py",
    ]
    assert pointer["text"].startswith(
        "Procedure fix.sympy.core v1 — when: Fix a bug in sympy/core (sympy/core/add.py)."
    )
    assert pointer["tokens"] <= 300 and pointer == task_pointer(
        record, task, served_files.file_indexes_for_agent(agent=served_fix.procedure.agent).indexes
    )
    assert posted.json()["injected"] == asked.json()["injected"]
    # everything else as without it
    unchanged = {k: v for k, v in asked.json().items() if k != "injected"}
    assert unchanged == {k: v for k, v in plain.json().items() if k != "injected"}
    assert [{**p, "recallPointer": None} for p in asked.json()["injected"]] == [
        {**p, "recallPointer": None} for p in plain.json()["injected"]
    ]


def test_a_procedure_of_another_repository_gets_no_task_files(
    client, read_token, sessions, coding_agent, proposer, admin_user
):
    make_active(_fix(coding_agent, proposer, repository="pallets/flask"), admin_user)
    services.file_indexes_rebuild(agent=coding_agent)
    task = f"{TASK} in sympy/core/add.py"
    plain = client.get(select_url(), {"task": task}, **bearer(read_token)).json()
    asked = client.get(select_url(), {"task": task, "taskFiles": "1"}, **bearer(read_token)).json()
    assert asked["injected"][0]["recallPointer"] == plain["injected"][0]["recallPointer"]


@pytest.mark.parametrize("value", ["yes", "2", "on", "tru"])
def test_select_refuses_a_task_files_that_is_not_a_boolean(client, read_token, served_fix, value):
    response = client.get(select_url(), {"task": TASK, "taskFiles": value}, **bearer(read_token))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["parameter"] == "taskFiles" and "taskFiles must be a boolean" in error["message"]


@pytest.mark.parametrize("value", ["true", 1, None, [True], {"on": True}])
def test_select_by_post_refuses_a_task_files_that_is_not_a_json_boolean(client, read_token, served_fix, value):
    response = client.post(
        select_url(),
        json.dumps({"task": TASK, "taskFiles": value}),
        content_type="application/json",
        **bearer(read_token),
    )
    if value is None:  # null: absent, as every other field
        assert response.status_code == 200
        return
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["parameter"] == "taskFiles" and "taskFiles must be a boolean" in error["message"]


# --------------------------------------------------------------------------------------------- GET …/file-index


def index_url(agent: str = "support_agent", api_version: str = "v1") -> str:
    return reverse("api:file_index" if api_version == "v1" else "api:v2:file_index", kwargs={"agent": agent})


def test_the_file_index_endpoint_serves_the_index_with_a_strong_etag(client, read_token, served_fix):
    response = client.get(index_url(), **bearer(read_token))
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    body = response.json()
    assert body["apiVersion"] == "v1" and body["agent"] == "support_agent" and body["taskFiles"] == TASK_FILES
    assert [entry["repository"] for entry in body["indexes"]] == ["django/django", "sympy/sympy"]
    indexes = indexes_from_response(body)
    assert indexes["sympy/sympy"].files_for(TASK) == ["sympy/core/numbers.py", "sympy/printing/str.py"]
    etag = response["ETag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    again = client.get(index_url(), HTTP_IF_NONE_MATCH=etag, **bearer(read_token))
    assert again.status_code == 304 and again["ETag"] == etag and not again.content
    # a rebuild that changes the index changes the tag
    AgentSession.objects.filter(task_key="django__django-7").delete()
    services.file_indexes_rebuild(agent=served_fix.procedure.agent)
    changed = client.get(index_url(), HTTP_IF_NONE_MATCH=etag, **bearer(read_token))
    assert changed.status_code == 200 and changed["ETag"] != etag
    assert client.get(index_url(api_version="v2"), **bearer(read_token)).json()["apiVersion"] == "v2"


def test_the_file_index_endpoint_refuses_other_tokens_and_methods(client, read_token, served_fix, admin_user, proposer):
    agent = served_fix.procedure.agent
    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest", user=admin_user)[1]
    other = Agent.objects.create(name="other_agent", tools=[])
    foreign = token_create(agent=other, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]
    assert client.get(index_url()).status_code == 401
    assert client.get(index_url(), **bearer("pm_not_a_token")).status_code == 401
    wrong_scope = client.get(index_url(), **bearer(ingest))
    assert wrong_scope.status_code == 403 and wrong_scope.json()["error"]["code"] == "wrong_scope"
    wrong_agent = client.get(index_url(), **bearer(foreign))
    assert wrong_agent.status_code == 403 and wrong_agent.json()["error"]["code"] == "wrong_agent"
    # the other agent's own index is empty, not this one's
    assert client.get(index_url("other_agent"), **bearer(foreign)).json()["indexes"] == []
    for method in ("post", "put", "delete", "patch"):
        response = getattr(client, method)(index_url(), **bearer(read_token))
        assert response.status_code == 405 and response["Allow"] == "GET, HEAD"


# --------------------------------------------------------------------------------------------- MCP


def test_the_mcp_recall_tool_returns_the_pointers_with_the_tasks_files(served_fix):
    from library.api.mcp_endpoint import ServedBackend
    from procmem_client.mcp_server import recall_result

    agent = served_fix.procedure.agent
    backend = ServedBackend(agent=agent, scope=ApiToken.Scope.READ, api_version="v1")
    task = f"{TASK} in sympy/core/add.py"
    recall = backend.recall(task=task, intent=None)
    assert recall["injected"] == [{"id": "fix.sympy.core", "version": 1}]
    [pointer] = recall["pointers"]
    assert pointer["files"][:3] == ["sympy/core/add.py", "sympy/core/numbers.py", "sympy/printing/str.py"]
    assert pointer == task_pointer(served_fix.to_dict(), task, served_files.file_indexes_for_agent(agent=agent).indexes)
    result = recall_result(recall)
    assert [c.text for c in result.content] == [recall["rendered"], pointer["text"]]
    # another task, other files: the pointer depends on the task
    other = backend.recall(task="Fix sympy/sets/sets.py", intent=None)
    assert other["pointers"][0]["files"][0] == "sympy/sets/sets.py"


def test_the_tasks_files_cost_one_query_once_the_index_is_read(client, read_token, served_fix):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    task = f"{TASK} in sympy/core/add.py"

    def queries(params) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(select_url(), params, **bearer(read_token)).status_code == 200
        return len(captured.captured_queries)

    queries({"task": task, "taskFiles": "1"})  # reads the set and the index
    # one more than without: the index rows' fingerprint, the same, so this process's copy serves
    assert queries({"task": task, "taskFiles": "1"}) == queries({"task": task}) + 1
    response = client.get(index_url(), **bearer(read_token))
    head = client.head(index_url(), **bearer(read_token))
    assert head.status_code == 200 and head["ETag"] == response["ETag"] and not head.content
