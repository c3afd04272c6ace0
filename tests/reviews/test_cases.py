"""Regression-case pages: the permission matrix (anonymous → sign-in, not a reviewer → 403,
hidden → 404) and what a reviewer does there."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from library.models import AgentSession, RegressionCase

pytestmark = pytest.mark.django_db


@pytest.fixture
def case(agent, intent):
    return RegressionCase.objects.create(
        agent=agent, intent=intent, task="Refund ORD-1", expected_tools=["lookupOrder"]
    )


def urls(agent, case):
    return [
        ("get", reverse("reviews:case_list", args=[agent.name])),
        ("get", reverse("reviews:case_create", args=[agent.name])),
        ("post", reverse("reviews:case_create", args=[agent.name])),
        ("get", reverse("reviews:case_import", args=[agent.name])),
        ("post", reverse("reviews:case_import", args=[agent.name])),
        ("post", reverse("reviews:case_from_session", args=[agent.name])),
        ("get", reverse("reviews:case_edit", args=[case.pk])),
        ("post", reverse("reviews:case_edit", args=[case.pk])),
    ]


def test_anonymous_is_sent_to_sign_in(client, agent, case):
    for method, url in urls(agent, case):
        response = getattr(client, method)(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url


def test_a_signed_in_non_reviewer_gets_403(client, agent, case, outsider):
    client.force_login(outsider)
    for method, url in urls(agent, case):
        assert getattr(client, method)(url).status_code == 403, url
    assert RegressionCase.objects.count() == 1


def test_hidden_or_missing_objects_are_404(client, agent, case, reviewer):
    client.force_login(reviewer)
    assert client.get(reverse("reviews:case_list", args=["no_such_agent"])).status_code == 404
    assert client.get(reverse("reviews:case_edit", args=[case.pk + 1000])).status_code == 404
    other = AgentSession.objects.create(agent=agent, session_id="s-1", task="x")
    # a session id of another agent (or none) is not found for this one
    from library.models import Agent

    elsewhere = Agent.objects.create(name="other_agent")
    url = reverse("reviews:case_from_session", args=[elsewhere.name])
    assert client.post(url, {"session": other.session_id}).status_code == 404
    assert client.get(reverse("reviews:case_from_session", args=[agent.name])).status_code == 405


def test_a_reviewer_creates_and_edits_a_case(client, agent, intent, reviewer, case):
    client.force_login(reviewer)
    response = client.post(
        reverse("reviews:case_create", args=[agent.name]),
        {
            "intent": intent.pk,
            "name": "big refund",
            "task": "Refund ORD-7, 900 EUR",
            "context": '{"order_id": "ORD-7"}',
            "expected_tools": 'lookupOrder\n{"name": "createApproval", "args": {"order_id": "ORD-7"}}',
            "forbidden_tools": '{"name": "replyTemplates", "before": "createApproval"}',
            "reply_must_match": "(?i)approv",
            "reply_must_not_match": "",
            "tool_results": "{}",
            "is_active": "on",
        },
    )
    assert response.status_code == 302
    created = RegressionCase.objects.get(name="big refund")
    assert created.expected_tools == ["lookupOrder", {"name": "createApproval", "args": {"order_id": "ORD-7"}}]
    assert created.forbidden_tools == [{"name": "replyTemplates", "before": "createApproval"}]
    assert created.created_by == reviewer and created.context == {"order_id": "ORD-7"}
    from library.models import AuditEvent

    event = AuditEvent.objects.get(action=AuditEvent.Action.CASE_CHANGE, actor=reviewer)
    assert event.after["case"] == created.pk and event.reason == "Written by hand"
    # the list shows it, escaped
    page = client.get(reverse("reviews:case_list", args=[agent.name]))
    assert "Refund ORD-7, 900 EUR" in page.content.decode()
    # an edit with a broken regex is refused with the field named
    edit = reverse("reviews:case_edit", args=[created.pk])
    bad = client.post(
        edit, {"intent": intent.pk, "task": "x", "reply_must_match": "(", "context": "{}", "tool_results": "{}"}
    )
    assert bad.status_code == 400 and "not a regular expression" in bad.content.decode()
    good = client.post(
        edit, {"intent": intent.pk, "task": "<script>alert(1)</script>", "context": "{}", "tool_results": "{}"}
    )
    assert good.status_code == 302
    created.refresh_from_db()
    assert created.task == "<script>alert(1)</script>" and created.is_active is False
    edit_event = AuditEvent.objects.filter(action=AuditEvent.Action.CASE_CHANGE, reason="Edited").get()
    assert edit_event.before["task"] == "Refund ORD-7, 900 EUR" and edit_event.after["task"] == created.task
    assert "&lt;script&gt;" in client.get(reverse("reviews:case_list", args=[agent.name])).content.decode()


def test_a_reviewer_imports_jsonl(client, agent, reviewer):
    client.force_login(reviewer)
    body = "\n".join(
        json.dumps({"intent": "order_status", "task": f"Where is ORD-{i}?", "expected_tools": ["lookupOrder"]})
        for i in range(3)
    )
    upload = SimpleUploadedFile("cases.jsonl", body.encode(), content_type="application/jsonl")
    response = client.post(reverse("reviews:case_import", args=[agent.name]), {"file": upload})
    assert response.status_code == 302
    assert agent.regression_cases.count() == 3
    broken = SimpleUploadedFile("broken.jsonl", (body + "\n{oops").encode())
    response = client.post(reverse("reviews:case_import", args=[agent.name]), {"file": broken})
    assert response.status_code == 400 and "Nothing was imported" in response.content.decode()
    assert agent.regression_cases.count() == 3


UNSTORABLE_JSON = [
    '{"a": "\\ud800"}',  # the escape as typed: a case holding it broke its edit page for good
    '{"a": NaN}',
    '{"a": 1e999}',
    '{"a": "x\\u0000"}',
    '{"a":' * 2000 + "1" + "}" * 2000,
]


@pytest.mark.parametrize("context", UNSTORABLE_JSON)
def test_json_a_database_cannot_store_is_a_form_error_not_a_500(client, agent, intent, reviewer, case, context):
    client.force_login(reviewer)
    fields = {
        "intent": intent.pk,
        "task": "t",
        "context": context,
        "tool_results": "{}",
        "expected_tools": "lookupOrder",
    }
    before = list(RegressionCase.objects.values_list("pk", "context"))
    for url in (reverse("reviews:case_create", args=[agent.name]), reverse("reviews:case_edit", args=[case.pk])):
        response = client.post(url, fields)
        assert response.status_code == 400 and "Enter valid JSON" in response.content.decode(), url
        # the same in an expected call's arguments
        response = client.post(
            url, {**fields, "context": "{}", "expected_tools": '{"name": "lookupOrder", "args": ' + context + "}"}
        )
        assert response.status_code == 400, url
    assert list(RegressionCase.objects.values_list("pk", "context")) == before


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"intent": "order_status", "task": "t", "context": {"a": "\\udc00"}}', "lone surrogate"),
        ('{"intent": "order_status", "task": "a\\ud800b"}', "lone surrogate"),
        ('{"intent": "order_status", "task": "t", "context": {"a": NaN}}', "NaN"),
        ('{"intent": "order_status", "task": "t", "tool_results": {"a": [1e999]}}', "finite"),
        ('{"intent": "order_status", "task": "t", "context": {"a": "x\\u0000"}}', "NUL"),
        (
            '{"intent": "order_status", "task": "t", "context": ' + '{"a":' * 2000 + "1" + "}" * 2000 + "}",
            "nested too deep",
        ),
    ],
)
def test_an_import_line_a_database_cannot_store_imports_nothing_and_is_named(client, agent, reviewer, line, message):
    client.force_login(reviewer)
    good = json.dumps({"intent": "order_status", "task": "Where is my parcel?"})
    upload = SimpleUploadedFile("cases.jsonl", (good + "\n" + line).encode())
    response = client.post(reverse("reviews:case_import", args=[agent.name]), {"file": upload})
    page = response.content.decode()
    assert response.status_code == 400 and "cases.jsonl:2" in page and message in page, page[-2000:]
    assert agent.regression_cases.count() == 0


def test_a_reviewer_turns_a_session_into_a_case(client, agent, intent, reviewer):
    client.force_login(reviewer)
    session = AgentSession.objects.create(
        agent=agent,
        session_id="sess-9",
        intent=intent,
        task="Refund ORD-9",
        resolved=True,
        escalated=False,
        skeleton=["lookupOrder", "createApproval"],
    )
    response = client.post(reverse("reviews:case_from_session", args=[agent.name]), {"session": "sess-9"})
    case = RegressionCase.objects.get(source_session=session)
    assert response.status_code == 302 and response["Location"] == reverse("reviews:case_edit", args=[case.pk])
    assert case.expected_tools == ["lookupOrder", "createApproval"]
    assert "Made from session sess-9" in client.get(response["Location"]).content.decode()


def test_the_case_list_costs_the_same_queries_for_few_and_many_cases(client, agent, intent, reviewer):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(reviewer)
    url = reverse("reviews:case_list", args=[agent.name])

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    RegressionCase.objects.bulk_create(RegressionCase(agent=agent, intent=intent, task=f"t{i}") for i in range(3))
    few = queries()
    RegressionCase.objects.bulk_create(RegressionCase(agent=agent, intent=intent, task=f"t{i}") for i in range(60))
    assert queries() == few
