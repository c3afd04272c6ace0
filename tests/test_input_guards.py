"""Input that never crashes: NUL characters and lone surrogates in paths, query strings and form
fields are refused with 400 before any view; under /api/ every error is JSON; JSON bodies go
through one validation layer (library/safe_json.py)."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from hypothesis import given, settings
from hypothesis import strategies as st

from library.safe_json import JsonRefused, check, parse

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(admin_user):
    client = Client()
    client.force_login(admin_user)
    return client


@pytest.mark.parametrize(
    "path",
    [
        "/ops/audit.csv?agent=%00",
        "/ops/audit/?agent=%00",
        "/ops/agents/%00/",
        "/queue/?q=a%00b",
        "/procedures/new/?agent=%00",
        "/agents/support_agent/tools/?x%00=1",
    ],
)
def test_a_nul_in_the_address_is_refused(admin_client, agent, path):
    response = admin_client.get(path)
    assert response.status_code == 400
    assert "NUL" in response.content.decode()


def test_a_nul_in_a_form_field_is_refused(admin_client, agent):
    response = admin_client.post("/procedures/new/", {"agent": agent.name, "applies_when": "x\x00y"})
    assert response.status_code == 400 and "form field 'applies_when'" in response.content.decode()


def test_a_nul_in_the_sign_in_form_is_refused_before_the_lock_out_records_it(db):
    response = Client().post("/accounts/login/", {"username": "a\x00", "password": "x"})
    assert response.status_code == 400


def test_api_errors_above_the_views_are_json(client, agent):
    unknown = client.get("/api/v1/nothing-here")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    nul = client.get("/api/v1/agents/support_agent/select?task=%00")
    assert nul.status_code == 400 and nul.json()["error"]["code"] == "invalid_input"


def test_an_unknown_api_address_is_named_with_the_one_it_probably_meant(client, agent):
    # the routes take no trailing slash: an integrator who adds one hears so, and where the list is
    response = client.get(f"/api/v1/agents/{agent.name}/procedures/")
    assert response.status_code == 404 and response.json()["error"] == {
        "code": "not_found",
        "message": f"There is no API endpoint at /api/v1/agents/{agent.name}/procedures/."
        f" Did you mean /api/v1/agents/{agent.name}/procedures?"
        " The endpoints are listed at /api/v1/openapi.json.",
    }
    message = client.get("/api/v2/nothing-here").json()["error"]["message"]
    assert (
        message == "There is no API endpoint at /api/v2/nothing-here. The endpoints are listed at /api/v2/openapi.json."
    )


def test_a_view_saying_404_keeps_its_own_answer(admin_client, agent):
    # the address is a route: what is missing is the agent, and the view says which
    response = admin_client.get("/api/v1/agents/nobody/tools")
    assert response.status_code == 404 and response.json()["error"]["message"] == "No agent named 'nobody'."


@pytest.mark.urls("tests.failing_api_urls")
def test_an_unhandled_exception_under_the_api_is_a_json_500(client):
    client.raise_request_exception = False
    response = client.get("/api/v1/failing")
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "server_error"
    assert "did not expect" not in response.content.decode()


@pytest.mark.parametrize(
    "body, where, message",
    [
        (b'{"a": NaN}', "", "not JSON"),
        (b"[Infinity]", "", "not JSON"),
        (b"[1e400]", "[0]", "finite"),
        (b'["\\ud800"]', "", "not JSON"),
        (b'{"a": ["x\\u0000y"]}', "a[0]", "NUL"),
        (b'{"k\\u0000": 1}', "", "key"),
        (b"[" + str(2**64).encode() + b"]", "[0]", "64-bit"),
        (b"[" * 100 + b"]" * 100, "", "deeper than 64"),
        (b"[" * 1000 + b"]" * 1000, "", "nested too deep"),
        (b'["\xff"]', "", "not JSON"),
    ],
)
def test_the_json_layer_refuses_what_cannot_be_stored(body, where, message):
    with pytest.raises(JsonRefused, match=message) as excinfo:
        parse(body)
    assert excinfo.value.path.startswith(where)


def test_the_json_layer_keeps_what_can_be_stored():
    value = {"a": [1, -(2**63), 2.5, "😀", None, True, {"b": "ü"}]}
    assert parse(json.dumps(value, ensure_ascii=False).encode()) == value
    check([[[[]]]], max_depth=4)


@pytest.mark.parametrize(
    "value, where, message",
    [
        (["ok", "a\ud800"], "[1]", "lone surrogate"),
        ({"k\ud800": 1}, "", "key that contains a lone surrogate"),
        ({"a": [{"b": "x\x00"}]}, "a[0].b", "NUL"),
        ({"a": {"b": float("nan")}}, "a.b", "finite"),
        ({"a": [1, 2**63]}, "a[1]", "64-bit"),
        ([[[[[]]]]], "[0][0][0][0]", "deeper than 4"),
    ],
)
def test_the_check_of_parsed_values_says_what_and_where(value, where, message):
    # the fast walk finds that something is wrong; the walk that keeps paths names it
    with pytest.raises(JsonRefused, match=message) as excinfo:
        check(value, max_depth=4)
    assert excinfo.value.path == where


def test_an_unknown_skills_address_is_json_for_the_agent_that_asked(client, agent):
    # the skills are read by agents: a wrong address there was Django's HTML page
    response = client.get("/.well-known/agent-skills/skills.json")
    assert response.status_code == 404 and response.json()["error"] == {
        "code": "not_found",
        "message": "There is no skills endpoint at /.well-known/agent-skills/skills.json."
        " The skills are listed at /.well-known/agent-skills/index.json.",
    }


_REFUSED_BODIES = [
    (b'{"a": [1e400]}', "a[0]", "finite"),
    (b'{"a": ["x\\u0000y"]}', "a[0]", "NUL"),
    (b'{"k\\u0000": 1}', "", "key"),
    (b'{"a": "\\\\u0000"}', None, None),  # an escaped backslash before u0000: no NUL
    (b'{"a": [' + str(2**64).encode() + b"]}", "a[0]", "64-bit"),
    (b'{"a": ' + b"[" * 70 + b"]" * 70 + b"}", "a", "deeper than 64"),
    (b'{"a": ["\\u00e9", 1, 2.5, null, true]}', None, None),
]


@pytest.mark.parametrize("body, where, message", _REFUSED_BODIES)
def test_a_check_told_the_texts_are_storable_refuses_as_the_full_check(body, where, message):
    # texts_storable: a text without the escape \u0000 gives strings from_json read whole; then
    # only the numbers and the depth are walked, and what is refused, where and why, is the same
    from library import safe_json

    value = parse(body, check_values=False)
    for texts_checked in (False, safe_json.texts_storable(body)):
        if message is None:
            check(value, texts_checked=texts_checked)
            continue
        with pytest.raises(JsonRefused, match=message) as excinfo:
            check(value, texts_checked=texts_checked)
        assert excinfo.value.path.startswith(where)
    assert safe_json.texts_storable(body) == (b"\\u0000" not in body)


_ANY_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None)
@given(value=_ANY_JSON, ensure_ascii=st.booleans(), depth=st.integers(min_value=1, max_value=8))
def test_the_walk_of_numbers_answers_as_the_full_walk_for_text_without_a_nul_escape(value, ensure_ascii, depth):
    from library import safe_json

    body = json.dumps(value, ensure_ascii=ensure_ascii).encode()
    parsed = parse(body, check_values=False)
    if safe_json.texts_storable(body):
        assert safe_json._numbers_storable(parsed, depth) == safe_json._storable(parsed, depth)
