"""The agent API: the active set (load-time checks, refusals and their one alert, ETag/304, cache
headers), selection over HTTP, token scopes, the admin tool-list call and the OpenAPI document."""

from __future__ import annotations

import json

import pytest
from django.core import mail
from django.urls import URLResolver, reverse
from guardian.shortcuts import assign_perm

from library import services
from library.api.tokens import token_create
from library.models import Agent, ApiToken, AuditEvent, LoadRefusal, ProcedureRecord, Source, Status
from tests.conftest import _user, make_active, propose_next_version

pytestmark = pytest.mark.usefixtures("readonly_shares_default")

# the fields every record carries; a coding procedure adds the optional ones (preconditions, postconditions, verifyCommand)
RECORD_FIELDS = set(ProcedureRecord.__required_keys__)
SERVED_FIELDS = RECORD_FIELDS | {
    "intent",
    "namespace",
    "roles",
    "priority",
    "confidence",
    "rendered",
    "renderedChars",
    "renderedTokens",
}


def bearer(raw: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


@pytest.fixture
def read_token(agent, admin_user):
    return token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]


@pytest.fixture
def ingest_token(agent, admin_user):
    return token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest", user=admin_user)[1]


@pytest.fixture
def active_pair(candidate, other_procedure, admin_user):
    """Two ACTIVE procedures of the support agent: refund.over_limit v1 and order.status v1."""
    refund = make_active(candidate, admin_user)
    status = make_active(other_procedure.versions.get(number=1), admin_user)
    return refund, status


def url(name: str, agent: str = "support_agent") -> str:
    return reverse(f"api:{name}", kwargs={"agent": agent})


def get_set(client, token, **headers):
    return client.get(url("active_set"), **bearer(token), **headers)


# --------------------------------------------------------------------------------------------- the set


def test_active_set_carries_records_tools_and_headers(client, read_token, active_pair, agent):
    response = get_set(client, read_token)
    assert response.status_code == 200
    body = response.json()
    assert body["agent"] == "support_agent" and body["apiVersion"] == "v1"
    assert body["tools"] == agent.tools and body["proceduralMemoryEnabled"] is True and body["injectionCap"] == 2
    assert [(p["id"], p["version"]) for p in body["procedures"]] == [("order.status", 1), ("refund.over_limit", 1)]
    for record in body["procedures"]:
        assert set(record) == SERVED_FIELDS
        assert record["status"] == "ACTIVE" and record["approvedBy"] == "admin" and record["approvedAt"].endswith("Z")
        assert record["rendered"].startswith(
            f"Procedure {record['id']} v{record['version']} (source: written by reviewers; approved by admin on 20"
        )
        assert "\n1. " in record["rendered"]
        assert record["renderedChars"] == len(record["rendered"])
        assert set(record["requiredTools"]) <= set(body["tools"])
        assert record["evidence"]["evalRunId"]
    assert body["refused"] == []
    etag = response["ETag"]
    assert etag.startswith('"') and etag.endswith('"') and not etag.startswith("W/")
    assert "max-age=10" in response["Cache-Control"]
    assert "Authorization" in response["Vary"]


def test_every_active_record_parses_and_its_tools_are_checked(client, read_token, agent, intent, proposer, admin_user):
    # given: a mix of procedures, one needing a tool the agent never had
    versions = []
    for n, tools in enumerate([["lookupOrder"], ["lookupOrder", "createApproval"], ["lookupOrder", "issueRefund"]]):
        version = services.procedure_propose(
            agent=agent,
            intent=intent,
            key=f"refund.case_{n}",
            applies_when=f"Refund case {n} applies.",
            steps=[f"Call {t}." for t in tools] + ["Reply to the customer."],
            required_tools=tools,
            forbidden_actions=[],
            source=Source.MANUAL,
            proposed_by=proposer,
        )
        versions.append(version)
    # approval checks the tools too, so the third gets its tool for the approval only
    services.agent_set_tools(agent=agent, tools=agent.tools + ["issueRefund"], user=admin_user)
    for version in versions:
        make_active(version, admin_user)
    services.agent_set_tools(agent=agent, tools=[t for t in agent.tools if t != "issueRefund"], user=admin_user)

    # when
    body = get_set(client, read_token).json()

    # then: every served record has the record's fields with the right types; the one missing a tool is refused
    served = {p["id"]: p for p in body["procedures"]}
    assert set(served) == {"refund.case_0", "refund.case_1"}
    for record in served.values():
        assert isinstance(record["steps"], list) and all(isinstance(s, str) for s in record["steps"])
        assert isinstance(record["requiredTools"], list) and isinstance(record["forbiddenActions"], list)
        assert isinstance(record["version"], int) and isinstance(record["evidence"], dict)
        assert not set(record["requiredTools"]) - set(body["tools"])
    assert body["refused"] == [
        {
            "id": "refund.case_2",
            "version": 1,
            "intent": "refund_over_limit",
            "reason": "missing_tools",
            "message": "The agent lacks the required tools: issueRefund.",
            "missingTools": ["issueRefund"],
        }
    ]


def test_removed_tool_refuses_the_version_and_raises_exactly_one_alert(
    client, read_token, active_pair, agent, admin_user, django_capture_on_commit_callbacks
):
    manager = _user("toolkeeper")
    assign_perm("library.manage_agent", manager, agent)
    mail.outbox.clear()
    services.agent_set_tools(agent=agent, tools=["lookupOrder", "checkReturnWindow", "replyTemplates"], user=admin_user)

    for _ in range(3):  # repeated requests: the alert is raised once
        with django_capture_on_commit_callbacks(execute=True):
            body = get_set(client, read_token).json()
        assert [p["id"] for p in body["procedures"]] == ["order.status"]
        assert [(r["id"], r["missingTools"]) for r in body["refused"]] == [("refund.over_limit", ["createApproval"])]

    refund_version = active_pair[0]
    assert LoadRefusal.objects.filter(version=refund_version).count() == 1
    assert AuditEvent.objects.filter(action=AuditEvent.Action.REFUSED_AT_LOAD, version=refund_version).count() == 1
    # one e-mail to each of the agent's admins (the notifications' default for refusals)
    assert sorted(m.to[0] for m in mail.outbox) == ["admin@example.com", "toolkeeper@example.com"]
    assert all("refused at load" in m.subject for m in mail.outbox)
    assert all("refund.over_limit v1" in m.body and "createApproval" in m.body for m in mail.outbox)

    # a new tool-list state that still lacks the tool raises a new alert, once
    services.agent_set_tools(
        agent=agent, tools=["lookupOrder", "replyTemplates", "checkReturnWindow", "newTool"], user=admin_user
    )
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            get_set(client, read_token)
    assert LoadRefusal.objects.filter(version=refund_version).count() == 2
    assert len(mail.outbox) == 4

    # the tool comes back: served again, nothing refused
    services.agent_set_tools(agent=agent, tools=agent.tools + ["createApproval"], user=admin_user)
    body = get_set(client, read_token).json()
    assert {p["id"] for p in body["procedures"]} == {"order.status", "refund.over_limit"} and body["refused"] == []


def test_banner_counts_unresolved_refusals_for_agent_managers(
    client, read_token, active_pair, agent, admin_user, reviewer
):
    services.agent_set_tools(agent=agent, tools=["lookupOrder", "replyTemplates"], user=admin_user)
    get_set(client, read_token)
    client.force_login(admin_user)
    page = client.get(reverse("reviews:queue"))
    assert page.context["nav"].refused_at_load == 1
    assert "refused at load" in page.content.decode()
    client.force_login(reviewer)  # not an admin of the agent: no banner
    page = client.get(reverse("reviews:queue"))
    assert page.context["nav"].refused_at_load == 0
    # resolved by giving the tool back
    services.agent_set_tools(agent=agent, tools=agent.tools + ["createApproval", "checkReturnWindow"], user=admin_user)
    client.force_login(admin_user)
    assert client.get(reverse("reviews:queue")).context["nav"].refused_at_load == 0


def test_procedural_memory_off_serves_an_empty_set_and_says_so(client, read_token, active_pair, agent):
    Agent.objects.filter(pk=agent.pk).update(procedural_memory_enabled=False)
    body = get_set(client, read_token).json()
    assert body["procedures"] == [] and body["proceduralMemoryEnabled"] is False
    assert "switched off" in body["note"]
    selection = client.get(url("select"), {"task": "refund above the limit"}, **bearer(read_token)).json()
    assert selection["injected"] == [] and "switched off" in selection["note"]


# --------------------------------------------------------------------------------------------- ETag / 304


def test_etag_304_and_change_after_rollback(client, read_token, active_pair, candidate, admin_user, intent, proposer):
    first = get_set(client, read_token)
    again = get_set(client, read_token)
    assert first["ETag"] == again["ETag"] and first.content == again.content

    not_modified = get_set(client, read_token, HTTP_IF_NONE_MATCH=first["ETag"])
    assert not_modified.status_code == 304 and not_modified.content == b""
    assert not_modified["ETag"] == first["ETag"] and "Authorization" in not_modified["Vary"]
    assert get_set(client, read_token, HTTP_IF_NONE_MATCH='"other", ' + first["ETag"]).status_code == 304
    assert get_set(client, read_token, HTTP_IF_NONE_MATCH='"stale"').status_code == 200

    # a new approval changes the set: new ETag, the old one no longer gives 304
    v2 = propose_next_version(candidate, proposer)
    make_active(v2, admin_user)
    changed = get_set(client, read_token, HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200 and changed["ETag"] != first["ETag"]
    assert {(p["id"], p["version"]) for p in changed.json()["procedures"]} == {
        ("order.status", 1),
        ("refund.over_limit", 2),
    }

    # roll back: the set goes back to v1, and so do its bytes and ETag
    services.version_rollback(version=candidate, user=admin_user, reason="v2 confuses the agent")
    back = get_set(client, read_token)
    assert back["ETag"] == first["ETag"] and back.content == first.content


@pytest.mark.postgres
def test_a_current_set_costs_two_queries_and_none_inside_the_recheck_window(
    client, read_token, active_pair, settings, django_assert_num_queries
):
    get_set(client, read_token)  # builds the set
    with django_assert_num_queries(2):  # the token, then one statement: settings + fingerprint
        assert get_set(client, read_token).status_code == 200
    settings.PROCMEM_ACTIVE_SET_RECHECK_SECONDS = 30
    get_set(client, read_token)
    with django_assert_num_queries(0):
        assert get_set(client, read_token).status_code == 200


def test_gzip_representation_has_its_own_etag_and_either_tag_revalidates(client, read_token, active_pair):
    import gzip

    plain = get_set(client, read_token)
    packed = get_set(client, read_token, HTTP_ACCEPT_ENCODING="br, gzip;q=0.8")
    assert packed["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed["Vary"]
    assert gzip.decompress(packed.content) == plain.content
    assert len(packed.content) < len(plain.content)
    assert packed["ETag"] == plain["ETag"][:-1] + '-gzip"'
    assert get_set(client, read_token, HTTP_ACCEPT_ENCODING="gzip;q=0").get("Content-Encoding") is None
    for tag in (plain["ETag"], packed["ETag"]):
        assert get_set(client, read_token, HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH=tag).status_code == 304
        assert get_set(client, read_token, HTTP_IF_NONE_MATCH=tag).status_code == 304


def test_recheck_window_bounds_staleness_and_own_changes_show_at_once(
    client, read_token, active_pair, agent, admin_user, settings, django_capture_on_commit_callbacks
):
    settings.PROCMEM_ACTIVE_SET_RECHECK_SECONDS = 30
    first = get_set(client, read_token)
    # a change that sends no signal (as from another process): not seen inside the window ...
    Agent.objects.filter(pk=agent.pk).update(injection_cap=1)
    assert get_set(client, read_token)["ETag"] == first["ETag"]
    # ... and seen once the window is over
    from library.serving import active_set as serving

    assert serving.active_set_for_agent(agent=agent, recheck=0).data["injectionCap"] == 1
    # a change through the services in this process is seen at once (active_set_changed)
    with django_capture_on_commit_callbacks(execute=True):
        services.version_retire(version=active_pair[1], user=admin_user, reason="obsolete")
    assert [p["id"] for p in get_set(client, read_token).json()["procedures"]] == ["refund.over_limit"]
    # a revoked token stops working at once in this process, even inside the window
    from library.api.tokens import token_revoke

    token_revoke(token=ApiToken.objects.get(agent=agent, scope=ApiToken.Scope.READ), user=admin_user)
    assert get_set(client, read_token).status_code == 401


# --------------------------------------------------------------------------------------------- tokens


def test_token_scopes_and_agents(client, read_token, ingest_token, active_pair, admin_user):
    other = Agent.objects.create(name="billing_agent", tools=["lookupInvoice"])
    other_read = token_create(agent=other, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]

    assert client.get(url("active_set")).status_code == 401
    assert client.get(url("active_set"), **bearer("pm_not-a-token")).status_code == 401
    # an ingest token cannot read
    response = get_set(client, ingest_token)
    assert response.status_code == 403 and response.json()["error"]["code"] == "wrong_scope"
    # the message says what the token may do and what this request needs (it ended "…, not this.")
    assert response.json()["error"]["message"] == (
        f"This is an ingest token: it may write sessions. GET {url('active_set')} needs a read token."
    )
    assert client.get(url("select"), {"task": "refund"}, **bearer(ingest_token)).status_code == 403
    # a read token cannot write
    for method in ("post", "put", "patch", "delete"):
        response = getattr(client, method)(
            url("active_set"), data=json.dumps({"id": "x"}), content_type="application/json", **bearer(read_token)
        )
        assert response.status_code == 405, method
        assert response.json()["error"]["code"] == "method_not_allowed"
    # agent A's token cannot read agent B, and B's cannot read A
    response = client.get(url("active_set", "billing_agent"), **bearer(read_token))
    assert response.status_code == 403 and response.json()["error"]["code"] == "wrong_agent"
    assert response.json()["error"]["message"] == "This token belongs to agent 'support_agent', not 'billing_agent'."
    assert get_set(client, other_read).status_code == 403
    assert client.get(url("active_set", "billing_agent"), **bearer(other_read)).json()["procedures"] == []
    # nothing was written by any of it
    assert services.ProcedureVersion.objects.filter(status=Status.ACTIVE).count() == 2


# --------------------------------------------------------------------------------------------- selection


def test_select_endpoint_caps_and_reports_scores(client, read_token, active_pair, agent):
    response = client.get(
        url("select"), {"task": "The customer wants a refund of 900 dollars, above my limit."}, **bearer(read_token)
    )
    assert response.status_code == 200
    body = response.json()
    assert [p["id"] for p in body["injected"]] == ["refund.over_limit"]
    assert body["cap"] == 2 and "ranked" not in body
    assert body["rendered"].startswith("Reviewed procedures for this task") and body["renderedChars"] == len(
        body["rendered"]
    )
    assert "\n\nProcedure refund.over_limit v1 (source: written by reviewers; approved by admin on " in body["rendered"]
    assert body["setEtag"] == get_set(client, read_token)["ETag"]

    diagnostic = client.get(
        url("select"), {"task": "Where is my order? Please check lookupOrder.", "k": "5"}, **bearer(read_token)
    ).json()
    assert len(diagnostic["ranked"]) == 2
    for candidate in diagnostic["ranked"]:
        assert set(candidate["scores"]) == {"semantic", "lexical", "exact"}
        assert set(candidate["ranks"]) == {"semantic", "lexical", "exact"}
    by_id = {c["id"]: c for c in diagnostic["ranked"]}
    assert by_id["order.status"]["scores"]["exact"] == 1 and by_id["order.status"]["injected"] is True
    assert len(diagnostic["injected"]) <= 2

    Agent.objects.filter(pk=agent.pk).update(injection_cap=1)
    capped = client.get(
        url("select"), {"task": "refund above the limit for the order, lookupOrder", "k": "2"}, **bearer(read_token)
    ).json()
    assert capped["cap"] == 1 and len(capped["injected"]) == 1

    by_intent = client.get(
        url("select"), {"task": "refund above the limit", "intent": "order_status", "k": "3"}, **bearer(read_token)
    ).json()
    assert {c["id"] for c in by_intent["ranked"]} == {"order.status"}

    unrelated = client.get(url("select"), {"task": "Write a haiku about autumn leaves."}, **bearer(read_token)).json()
    assert unrelated["injected"] == [] and unrelated["rendered"] == ""


@pytest.mark.parametrize(
    "params,parameter",
    [
        ({"task": "x", "k": "21"}, "k"),
        ({"task": "x", "k": "0"}, "k"),
        ({"task": "x", "k": "two"}, "k"),
        ({}, "task"),
        ({"task": "   "}, "task"),
    ],
)
def test_select_rejects_bad_parameters(client, read_token, active_pair, params, parameter):
    response = client.get(url("select"), params, **bearer(read_token))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_parameter" and error["parameter"] == parameter
    if parameter == "k":
        assert "1 to 20" in error["message"]


@pytest.mark.parametrize(
    "params",
    [
        {"task": "The customer wants a refund of 900 dollars, above my limit."},
        {"task": "refund above the limit", "intent": "order_status", "k": 3},
        {"task": "Where is my order? Please check lookupOrder.", "k": "5", "environment": None},
    ],
)
def test_select_by_post_answers_as_the_get_does(client, read_token, active_pair, params):
    """Issue 42 finding 8: POST with the parameters in a JSON body (the task in no URL, so in no
    access or proxy log) answers exactly what the GET answers."""
    posted = client.post(url("select"), json.dumps(params), content_type="application/json", **bearer(read_token))
    query = {name: str(value) for name, value in params.items() if value is not None}
    assert posted.status_code == 200, posted.content
    assert posted.content == client.get(url("select"), query, **bearer(read_token)).content
    assert posted["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    "body,parameter,code",
    [
        ('{"task": "x", "k": 21}', "k", "invalid_parameter"),
        ('{"task": "x", "k": true}', "k", "invalid_parameter"),
        ('{"task": 7}', "task", "invalid_parameter"),
        ('{"task": "x", "color": "red"}', "color", "invalid_parameter"),
        ("{}", "task", "invalid_parameter"),
        ('["refund"]', None, "invalid_json"),
        ('{"task": "x"', None, "invalid_json"),
        ('{"task": "a\\u0000b"}', None, "invalid_json"),
    ],
)
def test_select_by_post_refuses_a_bad_body_naming_the_field(client, read_token, active_pair, body, parameter, code):
    response = client.post(url("select"), body, content_type="application/json", **bearer(read_token))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == code and error.get("parameter") == parameter


@pytest.mark.parametrize(
    "method,body,params,expected",
    [
        # the slips an integrator makes first: each message says what was wrong and what to send
        ("POST", '{"task": "x"', None, ["The body is not JSON: ", "line 1", '{"task": ']),
        ("POST", "", None, ["The body is empty", '{"task": ']),
        ("POST", '["refund"]', None, ["The body is a JSON list", '{"task": ']),
        ("POST", '{"task": "a\\u0000b"}', None, ["The body's field task ", "NUL"]),
        ("POST", "{}", None, ["task is required in the JSON body"]),
        ("GET", None, {"query": "refund", "q": "x"}, ["as ?task=", "'query', 'q'", "it takes task, intent, k"]),
        ("GET", None, {}, ["task is required as ?task="]),
        ("GET", None, {"task": "x" * 8001}, ["longer than 8000 characters (8001)"]),
    ],
)
def test_select_refusals_say_what_was_wrong_and_what_to_send(
    client, read_token, active_pair, method, body, params, expected
):
    if method == "POST":
        response = client.post(url("select"), body, content_type="application/json", **bearer(read_token))
    else:
        response = client.get(url("select"), params, **bearer(read_token))
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    for part in expected:
        assert part in message, message


@pytest.mark.parametrize(
    "header,expected",
    [
        (None, "Send Authorization: Bearer <token>."),
        (
            "pm_notbearer",
            "Send Authorization: Bearer <token>; the Authorization header holds a pm_… token without 'Bearer '.",
        ),
        ("Bearer ", "Send Authorization: Bearer <token>; the Authorization header has 'Bearer' but no token after it."),
        ("Token pm_x", "Send Authorization: Bearer <token>; the Authorization header uses the 'Token' scheme."),
    ],
)
def test_a_malformed_authorization_header_says_what_is_wrong_without_echoing_it(client, agent, header, expected):
    headers = {} if header is None else {"HTTP_AUTHORIZATION": header}
    response = client.get(url("active_set"), **headers)
    assert response.status_code == 401 and response["WWW-Authenticate"] == 'Bearer realm="procmem"'
    assert response.json()["error"] == {"code": "unauthorized", "message": expected}


def test_a_write_method_on_health_says_which_methods_it_answers(client):
    response = client.post(reverse("api:health"))
    assert response.status_code == 405
    assert response.json()["error"] == {
        "code": "method_not_allowed",
        "message": "POST is not allowed on /api/v1/health; it answers GET, HEAD.",
    }


@pytest.mark.parametrize("name", ["api:health", "api:v2:health", "api:openapi", "api:v2:openapi"])
def test_head_on_a_get_resource_answers_as_get_without_a_body(client, name):
    """HEAD /api/v1/health answered 405 (require_GET): a monitor or load balancer probing with HEAD
    saw the service down. HEAD is GET without the body (RFC 9110 9.3.2): the same status and headers."""
    got = client.get(reverse(name))
    head = client.head(reverse(name))
    assert head.status_code == got.status_code == 200
    assert head.content == b"" and got.content
    for header in ("Content-Type", "Content-Length", "Cache-Control"):
        assert head.get(header) == got.get(header), header


def test_select_by_post_needs_the_read_token_and_other_methods_are_405(
    client, read_token, active_pair, agent, admin_user
):
    body = json.dumps({"task": "refund above the limit"})
    assert client.post(url("select"), body, content_type="application/json").status_code == 401
    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest", user=admin_user)[1]
    assert client.post(url("select"), body, content_type="application/json", **bearer(ingest)).status_code == 403
    refused = client.put(url("select"), body, content_type="application/json", **bearer(read_token))
    assert refused.status_code == 405 and refused["Allow"] == "GET, HEAD, POST"


# --------------------------------------------------------------------------------------------- admin: tools


def test_admin_tools_call_needs_a_manager_session_and_csrf(
    client, agent, admin_user, reviewer, read_token, active_pair
):
    tools_url = url("agent_tools")
    payload = json.dumps({"tools": ["lookupOrder", "replyTemplates"], "reason": "createApproval moved to billing"})
    assert client.put(tools_url, payload, content_type="application/json").status_code == 401
    client.force_login(reviewer)
    assert client.put(tools_url, payload, content_type="application/json").status_code == 403
    assert client.get(url("agent_tools", "no_such_agent")).status_code == 404

    client.force_login(admin_user)
    response = client.put(tools_url, payload, content_type="application/json")
    assert response.status_code == 200
    body = response.json()
    assert body["tools"] == ["lookupOrder", "replyTemplates"]
    assert {r["id"] for r in body["refused"]} == {"refund.over_limit"}
    agent.refresh_from_db()
    assert agent.tools == ["lookupOrder", "replyTemplates"]
    change = agent.tool_changes.first()
    assert change.removed == ["checkReturnWindow", "createApproval"] and change.changed_by == admin_user
    assert AuditEvent.objects.filter(action=AuditEvent.Action.TOOLS_CHANGE, actor=admin_user).count() == 1

    bad = client.put(tools_url, json.dumps({"tools": ["a", "a"]}), content_type="application/json")
    assert bad.status_code == 400 and "twice" in bad.json()["error"]["message"]
    assert client.put(tools_url, "not json", content_type="application/json").status_code == 400
    # names sessions are never stored under, and reasons that are not short text, change nothing
    for body, says in [
        ({"tools": ["lookupOrder", "a b c"]}, "sessions store it as 'a_b_c'"),
        ({"tools": ["<script>"]}, "is not a tool name"),
        ({"tools": ["x" * 200]}, "at most 128"),
        ({"tools": ["lookupOrder"], "reason": 5}, "reason must be text"),
        ({"tools": ["lookupOrder"], "reason": "r" * 1001}, "at most 1000 characters"),
    ]:
        refused = client.put(tools_url, json.dumps(body), content_type="application/json")
        assert refused.status_code == 400 and says in refused.json()["error"]["message"], refused.json()
    agent.refresh_from_db()
    assert agent.tools == ["lookupOrder", "replyTemplates"] and agent.tool_changes.count() == 1

    # with CSRF checks on (as in production) a session PUT without the token is refused
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin_user)
    refused = strict.put(tools_url, payload, content_type="application/json")
    assert refused.status_code == 403
    # it says why (it said only "You may not do this.", as for a missing right) and what to send
    assert refused.json()["error"]["code"] == "forbidden"
    message = refused.json()["error"]["message"]
    assert message.startswith("The CSRF check refused this PUT: CSRF cookie not set") and "X-CSRFToken" in message
    strict.get(reverse("reviews:agent_tools", kwargs={"agent": "support_agent"}))
    csrf = strict.cookies["csrftoken"].value
    assert strict.put(tools_url, payload, content_type="application/json", HTTP_X_CSRFTOKEN=csrf).status_code == 200


# --------------------------------------------------------------------------------------------- OpenAPI


def test_openapi_document_gives_select_its_own_methods_and_the_503(client):
    """select answers POST too (the 405 said "Any method but GET/HEAD") and 503 embeddings_not_ready."""
    document = client.get(reverse("api:openapi")).json()
    for method in ("get", "post"):
        responses = document["paths"]["/v1/agents/{agent}/select"][method]["responses"]
        assert "GET/HEAD/POST" in responses["405"]["description"]
        assert responses["503"]["description"].startswith("embeddings_not_ready")
    procedures = document["paths"]["/v1/agents/{agent}/procedures"]["get"]["responses"]
    assert "503" not in procedures and "GET/HEAD:" in procedures["405"]["description"]


@pytest.mark.parametrize("api_version", ["v1", "v2"])
def test_openapi_document_describes_every_agent_route(client, api_version):
    response = client.get(reverse("api:openapi" if api_version == "v1" else "api:v2:openapi"))
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"].startswith("3.1") and document["info"]["version"] == api_version
    from library.api import urls as api_urls

    def routes(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from routes(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern)

    described = set(document["paths"])
    served = [route for route in routes(api_urls.urlpatterns) if route.startswith(f"{api_version}/")]
    assert len(served) == 9
    assert {"/" + route.replace("<str:agent>", "{agent}") for route in served} == described
    procedure = document["components"]["schemas"]["Procedure"]
    assert set(procedure["required"]) == SERVED_FIELDS
    outcomes = document["paths"][f"/{api_version}/sessions/outcomes"]["post"]
    assert outcomes["security"] == [{"ingestToken": []}] and {"200", "207", "422"} <= set(outcomes["responses"])
    assert set(document["components"]["schemas"]["OutcomeIn"]["properties"]) == {
        "session_id",
        "resolved",
        "escalated",
        "rating",
        "complaint",
        "closed_by_customer",
        "at",
        "source",
    }


@pytest.mark.parametrize("name", ["api:health", "api:openapi"])
@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_a_write_method_on_a_read_only_route_is_the_documented_json_405(name, method):
    # (it was the CSRF check's 403 "forbidden", which tells a client something else)
    from django.test import Client

    response = getattr(Client(enforce_csrf_checks=True), method)(reverse(name))
    assert (
        response.status_code == 405 and response["Allow"] == "GET, HEAD"
    )  # as docs/api.md says of every read-only route
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_embeddings_are_computed_once_per_version_and_shared_through_the_database(
    client, read_token, active_pair, agent
):
    import numpy as np

    from library import embeddings
    from library.models import VersionEmbedding
    from library.serving import active_set as serving
    from procmem_client.ranking import EmbeddingCache, Ranker

    client.get(url("select"), {"task": "refund above the limit"}, **bearer(read_token))
    stored = VersionEmbedding.objects.filter(model_key=serving.model_key())
    assert sorted(stored.values_list("version_id", flat=True)) == sorted(v.pk for v in active_pair)
    vector = np.frombuffer(bytes(stored.first().vector), dtype="<f4")
    # the configured backend's dimension (the default's two models side by side: 384 + 512)
    assert vector.shape == (embeddings.dimension(),) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4

    # another process (a fresh cache whose model must not be called) builds its index from the rows
    def no_model(texts):
        raise AssertionError(f"embedded again: {texts}")

    serving.clear_cache()
    served = serving.active_set_for_agent(agent=agent)
    index = served.index(Ranker(cache=EmbeddingCache(no_model)))
    assert len(index) == 2 and np.allclose(index.matrix[0] @ index.matrix[0], 1.0, atol=1e-4)
    assert VersionEmbedding.objects.count() == 2  # nothing stored twice


def test_select_block_is_capped_in_characters_dropping_the_lower_ranked_first(
    client, read_token, active_pair, settings
):
    task = "refund above the limit for the order, lookupOrder"
    full = client.get(url("select"), {"task": task, "k": "2"}, **bearer(read_token)).json()
    assert [p["id"] for p in full["injected"]] == ["refund.over_limit", "order.status"]
    settings.PROCMEM_INJECTION_MAX_CHARS = full["renderedChars"] - 1
    capped = client.get(url("select"), {"task": task, "k": "2"}, **bearer(read_token)).json()
    assert [p["id"] for p in capped["injected"]] == ["refund.over_limit"]
    assert capped["renderedChars"] <= full["renderedChars"] - 1 and "Procedure order.status" not in capped["rendered"]
    assert [c["injected"] for c in capped["ranked"]] == [True, False]


def test_a_write_method_on_an_agent_route_names_the_address(client, read_token, active_pair):
    """The agent routes' 405 said "DELETE is not allowed here": an integrator with several calls in
    flight could not tell which one. It names the address, as the 405 of /api/v1/health does."""
    for path, allowed in (
        (url("active_set"), "GET, HEAD"),
        (url("select"), "GET, HEAD, POST"),
        ("/.well-known/agent-skills/index.json", "GET, HEAD"),
    ):
        response = client.delete(path, **bearer(read_token))
        assert response.status_code == 405 and response["Allow"] == allowed
        assert response.json()["error"] == {
            "code": "method_not_allowed",
            "message": f"DELETE is not allowed on {path}; agents may only {allowed}.",
        }
