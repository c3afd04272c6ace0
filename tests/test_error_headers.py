"""Every error page carries the same security headers as any other page under production settings
(DEBUG off, as in every test): the Content-Security-Policy, X-Frame-Options, X-Content-Type-Options,
Referrer-Policy and Cross-Origin-Opener-Policy (issue 32 part 4). Errors answered above the views
(the input guard's 400, the API's JSON errors, an unhandled exception's 500) included."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from library.api.tokens import token_create
from library.models import ApiToken

pytestmark = pytest.mark.django_db

SECURITY_HEADERS = (
    "Content-Security-Policy",
    "X-Frame-Options",
    "X-Content-Type-Options",
    "Referrer-Policy",
    "Cross-Origin-Opener-Policy",
    "Strict-Transport-Security",
)


@pytest.fixture
def page_headers(client, settings):
    assert not settings.DEBUG  # production settings: django-csp leaves DEBUG's own error pages alone
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    headers = {name: response[name] for name in SECURITY_HEADERS if name in response}
    assert {"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options"} <= set(headers)
    return headers


def _normal(name: str, value: str | None):
    # a policy's directives in any order
    return sorted(part.strip() for part in value.split(";")) if value and name == "Content-Security-Policy" else value


def _assert_same(response, status: int, headers: dict[str, str]) -> None:
    assert response.status_code == status, response.content[:300]
    for name, value in headers.items():
        assert _normal(name, response.get(name)) == _normal(name, value), (
            f"{status}: {name} is {response.get(name)!r}, other pages send {value!r}"
        )


@pytest.fixture
def signed_in(reviewer):
    client = Client()
    client.force_login(reviewer)
    return client


def test_400_of_the_input_guard(signed_in, page_headers):
    _assert_same(signed_in.get("/queue/?q=a%00b"), 400, page_headers)


def test_400_of_a_host_not_allowed(page_headers):
    _assert_same(Client(HTTP_HOST="evil.example").get("/accounts/login/"), 400, page_headers)


def test_400_of_the_api(client, agent, page_headers):
    token = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest")[1]
    response = client.post(
        "/api/v1/sessions", data="{not json", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    _assert_same(response, 400, page_headers)


def test_403_of_a_missing_csrf_token(page_headers):
    _assert_same(
        Client(enforce_csrf_checks=True).post("/accounts/login/", {"username": "x", "password": "y"}), 403, page_headers
    )


def test_403_of_a_right_not_held(signed_in, agent, reviewer, page_headers):
    # granting approver rights is for the agent's admins: a reviewer is refused
    response = signed_in.post(
        f"/ops/agents/{agent.name}/approvers/grant/", {"username": reviewer.username, "scope": "agent"}
    )
    _assert_same(response, 403, page_headers)


def test_404_of_an_unknown_page_and_an_unknown_api_address(signed_in, client, page_headers):
    _assert_same(signed_in.get("/no-such-page/"), 404, page_headers)
    _assert_same(client.get("/api/v1/no-such-thing"), 404, page_headers)


def test_405_of_a_method_not_allowed(signed_in, page_headers):
    _assert_same(signed_in.post("/queue/"), 405, page_headers)


def test_413_of_a_body_too_large(client, agent, settings, page_headers):
    settings.PROCMEM_INGEST_MAX_BODY_BYTES = 64
    token = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest")[1]
    body = json.dumps([{"session_id": f"s-{i}", "agent": agent.name} for i in range(10)])
    response = client.post(
        "/api/v1/sessions", data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    _assert_same(response, 413, page_headers)


def test_429_of_a_locked_out_sign_in(settings, page_headers):
    settings.AXES_FAILURE_LIMIT = 2
    get_user_model().objects.create_user("locked", password="right-horse-battery")
    client = Client(REMOTE_ADDR="203.0.113.8")
    for _ in range(2):
        client.post("/accounts/login/", {"username": "locked", "password": "wrong"})
    locked = client.post("/accounts/login/", {"username": "locked", "password": "right-horse-battery"})
    _assert_same(locked, 429, page_headers)
    # Retry-After: the cool-off (15 minutes by default) less the seconds since the last failure
    assert 15 * 60 - 60 <= int(locked["Retry-After"]) <= 15 * 60


@pytest.mark.urls("tests.failing_api_urls")
def test_500_of_an_unhandled_exception_on_a_page_and_in_the_api(reviewer, page_headers):
    client = Client(raise_request_exception=False)
    client.force_login(reviewer)
    _assert_same(client.get("/failing-page/"), 500, page_headers)
    _assert_same(client.get("/api/v1/failing"), 500, page_headers)


def test_the_csrf_refusal_is_json_saying_why_under_api_and_djangos_page_elsewhere():
    strict = Client(enforce_csrf_checks=True)
    api = strict.put("/api/v2/agents/support_agent/tools", "{}", content_type="application/json")
    assert api.status_code == 403 and api["Content-Type"] == "application/json"
    assert api.json()["error"]["message"].startswith("The CSRF check refused this PUT: CSRF cookie not set")
    page = strict.post("/accounts/login/", {"username": "a", "password": "b"})
    assert page.status_code == 403 and page["Content-Type"].startswith("text/html")
