"""POST /api/v1/sessions."""

import json

import pytest
from django.urls import reverse

from library.api.tokens import token_create, token_revoke
from library.models import Agent, AgentSession, ApiToken

from .test_ingest import procmem_item

pytestmark = pytest.mark.django_db
URL = "/api/v1/sessions"


@pytest.fixture
def ingest_token(agent):
    return token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest")[1]


def post(client, token, body, **extra):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return client.post(URL, data=data, content_type="application/json", **headers, **extra)


def test_route_name():
    assert reverse("api:sessions") == URL


def test_one_session_is_stored_and_a_resend_is_a_duplicate(client, agent, ingest_token):
    response = post(client, ingest_token, procmem_item("s-1"))
    assert response.status_code == 200
    assert response.json()["stored"] == ["s-1"] and response.json()["counts"] == {
        "stored": 1,
        "duplicate": 0,
        "refused": 0,
    }
    again = post(client, ingest_token, procmem_item("s-1"))
    assert again.status_code == 200 and again.json()["duplicate"] == ["s-1"] and again.json()["stored"] == []
    assert AgentSession.objects.filter(agent=agent).count() == 1


def test_batch_with_bad_items_stores_the_good_ones_whole_and_names_index_and_field(client, agent, ingest_token):
    batch = {
        "sessions": [
            procmem_item("good-1"),
            procmem_item("bad-1", tool_calls=[{"name": "lookupOrder"}, {"name": "x", "args": "not json"}]),
            procmem_item("good-2"),
            "not an object",
        ]
    }
    response = post(client, ingest_token, batch)
    assert response.status_code == 207
    body = response.json()
    assert body["stored"] == ["good-1", "good-2"]
    assert body["refused"][0] == {
        "index": 1,
        "session_id": "bad-1",
        "errors": [
            {
                "field": "tool_calls[1].args",
                "message": "is a string that is not JSON: expected ident at line 1 column 2",
            }
        ],
    }
    assert body["refused"][1]["index"] == 3 and body["refused"][1]["errors"][0]["field"] == "(item)"
    # nothing of the bad item exists
    assert not AgentSession.objects.filter(session_id="bad-1").exists()
    assert AgentSession.objects.filter(agent=agent).count() == 2


def test_every_item_refused_is_422(client, ingest_token):
    response = post(client, ingest_token, [procmem_item("x", outcome="done")])
    assert response.status_code == 422 and response.json()["refused"][0]["errors"][0]["field"] == "outcome"
    assert AgentSession.objects.count() == 0


def test_body_over_the_limit_is_413_and_stores_nothing(client, ingest_token, settings):
    settings.PROCMEM_INGEST_MAX_BODY_BYTES = 2048
    big = [procmem_item(f"s-{i}") for i in range(20)]
    response = post(client, ingest_token, big)
    assert response.status_code == 413 and response.json()["error"]["code"] == "body_too_large"
    assert AgentSession.objects.count() == 0


def test_batch_over_the_item_limit_is_413(client, ingest_token, settings):
    settings.PROCMEM_INGEST_MAX_BATCH = 2
    response = post(client, ingest_token, [procmem_item(f"s-{i}") for i in range(3)])
    assert response.status_code == 413 and response.json()["error"]["code"] == "batch_too_large"


def test_malformed_json_is_400(client, ingest_token):
    assert post(client, ingest_token, b"{nope").json()["error"]["code"] == "invalid_json"
    assert post(client, ingest_token, b"42").status_code == 400


@pytest.mark.parametrize("body", ['{"sessions": "x"}', '{"sessions": null}', '{"sessions": {"session_id": "s"}}'])
def test_a_sessions_wrapper_that_is_not_a_list_is_the_wrong_shape(client, agent, ingest_token, body):
    # (it was taken for one session and refused as "session_id is required", a 422)
    response = post(client, ingest_token, body)
    assert response.status_code == 400 and response.json()["error"]["code"] == "bad_shape"
    assert '"sessions" must be a list' in response.json()["error"]["message"]
    assert not AgentSession.objects.exists()


def test_read_token_gets_403_and_no_token_401(client, agent):
    read_token = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read")[1]
    assert post(client, read_token, procmem_item()).status_code == 403
    assert post(client, None, procmem_item()).status_code == 401
    assert AgentSession.objects.count() == 0


def test_revoked_token_gets_401(client, agent):
    token, raw = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest")
    token_revoke(token=token)
    assert post(client, raw, procmem_item()).status_code == 401


def test_token_of_agent_a_cannot_write_agent_b(client, agent):
    other = Agent.objects.create(name="other_agent", tools=["x"])
    other_token = token_create(agent=other, scope=ApiToken.Scope.INGEST, name="ingest")[1]
    # an item that claims to belong to support_agent is refused ...
    response = post(client, other_token, procmem_item("s-1", agent="support_agent"))
    assert response.status_code == 422 and response.json()["refused"][0]["errors"][0]["field"] == "agent"
    # ... and one that names no agent lands with the token's agent, never with support_agent
    post(client, other_token, procmem_item("s-2", agent=None))
    assert not AgentSession.objects.filter(agent=agent).exists()
    assert AgentSession.objects.get(session_id="s-2").agent == other


def test_get_is_405(client, ingest_token):
    assert client.get(URL, HTTP_AUTHORIZATION=f"Bearer {ingest_token}").status_code == 405


def test_openai_format_by_query_parameter(client, agent, ingest_token):
    item = {
        "session_id": "chat-1",
        "intent": "order_status",
        "outcome": {"resolved": True},
        "messages": [
            {"role": "user", "content": "where is it"},
            {"role": "assistant", "tool_calls": [{"function": {"name": "lookupOrder", "arguments": "{}"}}]},
        ],
    }
    response = client.post(
        URL + "?format=openai",
        data=json.dumps(item),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {ingest_token}",
    )
    assert response.status_code == 200, response.content
    assert AgentSession.objects.get(session_id="chat-1").skeleton == ["lookupOrder"]


def test_json_lines_body(client, agent, ingest_token):
    lines = "\n".join(json.dumps(procmem_item(f"nd-{i}")) for i in range(3)) + "\n\n"
    response = client.post(
        URL, data=lines, content_type="application/x-ndjson", HTTP_AUTHORIZATION=f"Bearer {ingest_token}"
    )
    assert response.status_code == 200, response.json()
    assert sorted(response.json()["stored"]) == ["nd-0", "nd-1", "nd-2"]
    bad = json.dumps(procmem_item("nd-9")) + "\n{broken\n"
    response = client.post(
        URL, data=bad, content_type="application/x-ndjson", HTTP_AUTHORIZATION=f"Bearer {ingest_token}"
    )
    # the broken line is refused by its line; the good one is stored
    assert response.status_code == 207 and response.json()["refused"][0]["errors"][0]["line"] == 2
    assert AgentSession.objects.filter(session_id="nd-9").exists()


# ----------------------------------------------------------------------------- input that never crashes


@pytest.mark.parametrize(
    "bad_item, field, message",
    [
        ('{"session_id": "bad", "task": "a\\u0000b"}', "task", "NUL"),
        (
            '{"session_id": "bad", "tool_calls": [{"name": "lookupOrder", "args": {"q": "x\\u0000"}}]}',
            "tool_calls[0].args.q",
            "NUL",
        ),
        ('{"session_id": "bad", "instruction_chars": 2147483648}', "instruction_chars", "0 to 2147483647"),
        ('{"session_id": "bad", "instruction_chars": 100000000000000000000000}', "instruction_chars", "64-bit"),
        (
            '{"session_id": "bad", "injected": [{"id": "a.b", "version": 1000000000000000000000000000000}]}',
            "injected[0].version",
            "64-bit",
        ),
        (
            '{"session_id": "bad", "injected": [{"id": "a.b", "version": 2147483648}]}',
            "injected[0].version",
            "positive integer",
        ),
        ('{"session_id": "bad", "outcome": {"rating": 1e400}}', "outcome.rating", "finite"),
        (
            '{"session_id": "bad", "tool_calls": [{"name": "lookupOrder", "args": ' + "[" * 100 + "]" * 100 + "}]}",
            "tool_calls[0].args",
            "deeper than 64",
        ),
        (
            '{"session_id": "bad", "tool_calls": [{"name": "lookupOrder", "args": "{\\"a\\": NaN}"}]}',
            "tool_calls[0].args",
            "not JSON",
        ),
        ('{"session_id": "bad", "tool_calls": [{"name": "///"}]}', "tool_calls[0].name", "tool name"),
        # times no session can have ended at: far-future ones stopped every metrics refresh, and an
        # offset that carries the year past 9999 or before 1 failed the whole batch at the database
        ('{"session_id": "bad", "ended_at": "9999-12-31T23:59:59Z"}', "ended_at", "outside the dates"),
        ('{"session_id": "bad", "ended_at": "9999-12-31T23:59:59-14:00"}', "ended_at", "outside the dates"),
        ('{"session_id": "bad", "ended_at": "0001-01-01T00:00:00+14:00"}', "ended_at", "outside the dates"),
        (
            '{"session_id": "bad", "ended_at": "1999-12-31T23:59:59Z"}',
            "ended_at",
            "from 2000-01-01 to one day from now",
        ),
        ('{"session_id": "bad", "ended_at": 253402300799}', "ended_at", "outside the dates"),
    ],
)
def test_a_bad_item_is_refused_alone_and_the_rest_stored(client, agent, ingest_token, bad_item, field, message):
    body = (
        '{"sessions": ['
        + json.dumps(procmem_item("good-1"))
        + ", "
        + bad_item
        + ", "
        + json.dumps(procmem_item("good-2"))
        + "]}"
    )
    response = post(client, ingest_token, body)
    assert response.status_code == 207, response.content
    refused = response.json()["refused"]
    assert [r["index"] for r in refused] == [1]
    assert refused[0]["errors"][0]["field"].startswith(field) and message in refused[0]["errors"][0]["message"], refused
    assert sorted(AgentSession.objects.filter(agent=agent).values_list("session_id", flat=True)) == ["good-1", "good-2"]


@pytest.mark.parametrize(
    "body, message",
    [
        ('{"session_id": "x", "outcome": {"rating": NaN}}', "not JSON"),
        ('[{"session_id": "x", "outcome": {"rating": Infinity}}]', "not JSON"),
        ('{"session_id": "\\ud800"}', "not JSON"),
        ("[" * 990 + "]" * 990, "nested too deep"),
        (b'{"session_id": "\xff"}', "not JSON"),
    ],
)
def test_a_body_that_is_not_storable_json_is_a_json_400(client, agent, ingest_token, body, message):
    response = post(client, ingest_token, body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json" and message in response.json()["error"]["message"]
    assert not AgentSession.objects.filter(agent=agent).exists()


def test_a_bad_json_lines_line_is_refused_by_its_line_and_the_rest_stored(client, agent, ingest_token):
    lines = [
        json.dumps(procmem_item("l-1")),
        '{"session_id": "l-2", oops',
        "",
        json.dumps(procmem_item("l-3")),
        b'{"session_id": "\xff"}',
    ]
    body = b"\n".join(line if isinstance(line, bytes) else line.encode() for line in lines)
    response = client.post(
        URL, data=body, content_type="application/x-ndjson", HTTP_AUTHORIZATION=f"Bearer {ingest_token}"
    )
    assert response.status_code == 207
    refused = response.json()["refused"]
    assert [(r["index"], r["errors"][0]["line"]) for r in refused] == [(1, 2), (3, 5)]
    assert sorted(AgentSession.objects.filter(agent=agent).values_list("session_id", flat=True)) == ["l-1", "l-3"]


def test_tool_names_as_agents_write_http_calls_are_normalised(client, agent, ingest_token):
    item = procmem_item(
        "http-1", tool_calls=[{"name": "GET Observation", "args": {}}, {"name": "POST /Patient/$match", "args": {}}]
    )
    assert post(client, ingest_token, item).status_code == 200
    stored = AgentSession.objects.get(agent=agent, session_id="http-1")
    assert [c["name"] for c in stored.tool_calls] == ["GET_Observation", "POST_Patient_match"]


@pytest.mark.parametrize(
    "raw, normalised",
    [
        ("GET Observation", "GET_Observation"),
        ("fhir/Patient.search", "fhir_Patient.search"),
        ("  spaced  out ", "spaced_out"),
        ("7eleven", "_7eleven"),
        ("lookupOrder", "lookupOrder"),
        ("///", None),
        ("", None),
        ("x" * 200, None),
        (5, None),
    ],
)
def test_the_tool_name_normalisation(raw, normalised):
    from library.ingest.formats import normalise_tool_name

    assert normalise_tool_name(raw) == normalised
