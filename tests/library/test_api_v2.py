"""API v2: the same endpoints as v1, the served procedures' evidence cut to its scalar facts. v1 is
unchanged (tests/library/test_api.py); here v2 is compared with it on the same set, on its caching,
its permissions and on procedures mined from the real tau-bench sessions."""

from __future__ import annotations

import gzip
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from library.api.tokens import token_create
from library.models import ApiToken, Status
from tests.conftest import TAUBENCH_DIR, make_active, require_taubench

pytestmark = pytest.mark.usefixtures("readonly_shares_default")

RICH_EVIDENCE = {
    "support": 118,
    "supportRate": 0.84,
    "skeletonLift": "inf",
    "miningRunId": 7,
    "proposed": True,
    "nearDuplicateOf": None,
    "summary": "118 of 140 resolved tasks followed lookupOrder → createApproval.",
    "sessionIds": ["s-1", "s-2"],
    "excerpts": [{"session": "s-1", "turns": [{"role": "user", "text": "Refund {{order_id}}"}]}],
    "pairs": {"lookupOrder→createApproval": [118, 9]},
    "backtest": {"verdict": "supports"},
}


def bearer(raw: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def v1(name: str, agent: str = "support_agent") -> str:
    return reverse(f"api:{name}", kwargs={"agent": agent})


def v2(name: str, agent: str = "support_agent") -> str:
    return reverse(f"api:v2:{name}", kwargs={"agent": agent})


@pytest.fixture
def read_token(agent, admin_user):
    return token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]


@pytest.fixture
def rich_active(agent, intent, proposer, admin_user):
    from library.services import procedure_propose

    version = procedure_propose(
        agent=agent,
        intent=intent,
        key="refund.mined",
        applies_when="The customer asks for a refund above the limit.",
        steps=[
            "Look up the order with lookupOrder({{order_id}}).",
            "Create the approval with createApproval({{order_id}}).",
        ],
        required_tools=["lookupOrder", "createApproval"],
        forbidden_actions=["Do not promise a refund date."],
        source="mined",
        proposed_by=proposer,
        evidence=RICH_EVIDENCE,
    )
    return make_active(version, admin_user)


def test_v2_serves_the_same_set_with_the_evidence_cut_to_its_scalar_facts(client, read_token, rich_active):
    one = client.get(v1("active_set"), **bearer(read_token))
    two = client.get(v2("active_set"), **bearer(read_token))
    assert one.status_code == two.status_code == 200
    first, second = one.json(), two.json()
    assert (first["apiVersion"], second["apiVersion"]) == ("v1", "v2")
    [old], [new] = first["procedures"], second["procedures"]
    assert old["evidence"]["sessionIds"] == ["s-1", "s-2"]  # v1 as it was
    assert new["evidence"] == {
        "support": 118,
        "supportRate": 0.84,
        "skeletonLift": "inf",
        "miningRunId": 7,
        "proposed": True,
        "nearDuplicateOf": None,
        "summary": "118 of 140 resolved tasks followed lookupOrder → createApproval.",
        "evalRunId": old["evidence"]["evalRunId"],
    }
    # everything else, the rendered text included, is v1's
    assert {k: v for k, v in new.items() if k != "evidence"} == {k: v for k, v in old.items() if k != "evidence"}
    assert {k: v for k, v in second.items() if k not in ("apiVersion", "procedures")} == {
        k: v for k, v in first.items() if k not in ("apiVersion", "procedures")
    }
    # its own strong ETag, 304 on it, and its own gzip representation
    assert two["ETag"] != one["ETag"]
    assert client.get(v2("active_set"), **bearer(read_token), HTTP_IF_NONE_MATCH=two["ETag"]).status_code == 304
    zipped = client.get(v2("active_set"), **bearer(read_token), HTTP_ACCEPT_ENCODING="gzip")
    assert zipped["Content-Encoding"] == "gzip" and json.loads(gzip.decompress(zipped.content)) == second


def test_v2_selection_injects_v2_records_and_names_the_v2_set(client, read_token, rich_active):
    task = {"task": "The customer wants a refund of 900 EUR, above the limit"}
    one = client.get(v1("select"), task, **bearer(read_token)).json()
    two = client.get(v2("select"), task, **bearer(read_token)).json()
    assert two["apiVersion"] == "v2" and two["rendered"] == one["rendered"] != ""
    assert [p["id"] for p in two["injected"]] == [p["id"] for p in one["injected"]] == ["refund.mined"]
    assert "sessionIds" not in two["injected"][0]["evidence"] and "sessionIds" in one["injected"][0]["evidence"]
    v2_set = client.get(v2("active_set"), **bearer(read_token))
    assert (
        two["setEtag"] == v2_set["ETag"]
        and one["setEtag"] == client.get(v1("active_set"), **bearer(read_token))["ETag"]
    )


def test_v2_keeps_every_refusal_of_v1(client, agent, admin_user, reviewer, read_token, rich_active):
    from library.models import Agent

    other_agent = Agent.objects.create(name="other_agent", tools=["lookupOrder"])
    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest", user=admin_user)[1]
    foreign = token_create(agent=other_agent, scope=ApiToken.Scope.READ, name="other", user=admin_user)[1]
    assert client.get(v2("active_set")).status_code == 401
    assert client.get(v2("active_set"), **bearer(ingest)).json()["error"]["code"] == "wrong_scope"
    assert client.get(v2("active_set"), **bearer(foreign)).json()["error"]["code"] == "wrong_agent"
    assert client.post(v2("active_set"), **bearer(read_token)).status_code == 405
    assert client.get(v2("active_set"), {"role": "Not A Role"}, **bearer(read_token)).status_code == 400
    assert (
        client.get(v2("active_set"), {"environment": "nowhere"}, **bearer(read_token)).json()["error"]["code"]
        == "unknown_environment"
    )
    assert client.get(v2("select"), {"task": " "}, **bearer(read_token)).status_code == 400
    # the writes: sessions need an ingest token; the tool list a signed-in admin of the agent
    session = json.dumps({"session_id": "x", "agent": agent.name, "task": "t", "tool_calls": []})
    response = client.post(reverse("api:v2:sessions"), session, content_type="application/json", **bearer(read_token))
    assert response.status_code == 403 and response.json()["error"]["code"] == "wrong_scope"
    tools = json.dumps({"tools": ["lookupOrder"], "reason": "trim"})
    assert client.put(v2("agent_tools"), tools, content_type="application/json").status_code == 401
    client.force_login(reviewer)
    assert client.put(v2("agent_tools"), tools, content_type="application/json").status_code == 403
    agent.refresh_from_db()
    assert "createApproval" in agent.tools
    client.logout()
    assert client.get(reverse("api:v2:health")).json() == {"status": "ok", "apiVersion": "v2"}


def test_v2_takes_sessions_as_v1_does(client, agent, admin_user):
    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest", user=admin_user)[1]
    session = {
        "session_id": "v2-1",
        "agent": agent.name,
        "task": "Where is my order?",
        "tool_calls": [{"name": "lookupOrder"}],
        "resolved": True,
    }
    response = client.post(
        reverse("api:v2:sessions"), json.dumps(session), content_type="application/json", **bearer(ingest)
    )
    assert response.status_code in (200, 201), response.content
    assert agent.sessions.filter(session_id="v2-1").exists()


@pytest.mark.slow
def test_on_procedures_mined_from_the_real_sessions_v2_is_a_fraction_of_v1(client, admin_user, proposer):
    # given the tau-bench airline sessions imported and mined, every group the run reported proposed
    # by a reviewer, and every candidate made ACTIVE
    require_taubench()
    call_command(
        "import_sessions",
        str(TAUBENCH_DIR / "gpt-4o-airline.json"),
        "--agent",
        "airline",
        "--create-agent",
        "--intent-from",
        "taubench-actions",
        "--no-progress",
        stdout=io.StringIO(),
    )
    call_command("mine", "--agent", "airline", "--threshold", "2", stdout=io.StringIO())
    from library.mining.mining_runs import mining_report_propose
    from library.models import Agent, MiningRun, ProcedureVersion

    airline = Agent.objects.get(name="airline")
    run = MiningRun.objects.get(agent=airline)
    for entry in run.report:
        if isinstance(entry.get("draft"), dict):
            mining_report_propose(run=run, intent_name=entry["intent"], user=proposer, reason="served-size check")
    candidates = list(ProcedureVersion.objects.filter(procedure__agent=airline, status=Status.CANDIDATE))
    assert len(candidates) >= 3
    for version in candidates:
        make_active(version, admin_user)
    token = token_create(agent=airline, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]
    # when both versions of the set are fetched
    one = client.get(v1("active_set", "airline"), **bearer(token))
    two = client.get(v2("active_set", "airline"), **bearer(token))
    first, second = one.json(), two.json()
    # then v2 serves the same procedures and text, with evidence of scalars only, in far fewer bytes
    assert [p["rendered"] for p in second["procedures"]] == [p["rendered"] for p in first["procedures"]]
    assert len(second["procedures"]) == len(candidates)
    for procedure in second["procedures"]:
        assert all(
            value is None or isinstance(value, (str, int, float, bool)) for value in procedure["evidence"].values()
        )
        assert {"support", "miningRunId", "summary"} <= set(procedure["evidence"])
    assert len(two.content) * 4 < len(one.content), (len(two.content), len(one.content))


@pytest.mark.django_db(transaction=True, databases=["default", "readonly"])
def test_concurrent_v1_and_v2_fetches_of_a_fresh_set_agree(agent, intent, proposer, admin_user):
    # given a live server whose set has not been built yet, and twelve agents asking at once, half
    # in v1 and half in v2, while one asks for a selection (which builds the index)
    from concurrent.futures import ThreadPoolExecutor
    from urllib.request import Request, urlopen

    from pytest_django.live_server_helper import LiveServer

    from library.services import procedure_propose
    from library.serving import active_set as serving

    version = procedure_propose(
        agent=agent,
        intent=intent,
        key="refund.mined",
        applies_when="The customer asks for a refund above the limit.",
        steps=["Look up the order with lookupOrder({{order_id}})."],
        required_tools=["lookupOrder"],
        forbidden_actions=[],
        source="mined",
        proposed_by=proposer,
        evidence=RICH_EVIDENCE,
    )
    make_active(version, admin_user)
    token = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]
    serving.clear_cache()
    live = LiveServer("127.0.0.1:0")
    try:

        def fetch(path: str) -> tuple[str, str, bytes]:
            request = Request(live.url + path, headers={"Authorization": f"Bearer {token}"})
            with urlopen(request, timeout=120) as response:
                return path, response.headers.get("ETag", ""), response.read()

        paths = [v1("active_set"), v2("active_set")] * 6 + [v2("select") + "?task=refund+above+the+limit"]
        with ThreadPoolExecutor(max_workers=len(paths)) as pool:
            answers = list(pool.map(fetch, paths))
    finally:
        live.stop()
        serving.clear_cache()
    # then every answer of a version is the same bytes under the same ETag, and the selection names
    # the v2 set it selected from
    for path in (v1("active_set"), v2("active_set")):
        same = {(etag, body) for p, etag, body in answers if p == path}
        assert len(same) == 1, path
    [(_, v2_etag, v2_body)] = {(p, e, b) for p, e, b in answers if p == v2("active_set")}
    selection = json.loads(next(body for p, _, body in answers if p.startswith(v2("select"))))
    assert selection["setEtag"] == v2_etag and json.loads(v2_body)["apiVersion"] == "v2"
