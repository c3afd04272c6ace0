"""The access layer (reviews.access): the one sign-in guard every page of the workspace uses, and
the helpers per object kind with their purposes — hidden is 404, seen but not allowed is 403."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.test import RequestFactory
from django.urls import URLPattern, reverse

from library.models import EvalRun
from reviews import access
from reviews.urls import urlpatterns
from tests.reviews.conftest import HTMX
from tests.reviews.operations_helpers import procedure_manager

pytestmark = pytest.mark.django_db


def _next_of(location: str) -> str:
    parts = urlsplit(location)
    assert parts.path == reverse("login")
    query = parse_qs(parts.query)
    assert list(query) == ["next"], f"next is not one encoded parameter: {location}"
    return query["next"][0]


# ---------------------------------------------------------------------------------------------- the sign-in guard


def test_anonymous_page_request_is_redirected_with_an_encoded_next(client, agent):
    page = "/queue/?agent=support_agent&sort=newest&q=a b"
    response = client.get(page)
    assert response.status_code == 302
    assert "&sort" not in response["Location"], "the & of the page's own query must be encoded"
    assert _next_of(response["Location"]) == "/queue/?agent=support_agent&sort=newest&q=a%20b"


def test_anonymous_htmx_request_gets_hx_redirect_back_to_the_page_it_was_on(client, agent):
    response = client.get(
        "/queue/?page=2", HTTP_HX_CURRENT_URL="http://testserver/queue/?agent=support_agent&sort=newest", **HTMX
    )
    assert response.status_code == 200
    assert _next_of(response["HX-Redirect"]) == "/queue/?agent=support_agent&sort=newest"


def _sample_url(pattern: URLPattern) -> str:
    values = {"pk": 1, "agent": "support_agent", "key": "refund.over_limit"}
    return reverse(f"reviews:{pattern.name}", kwargs={name: values[name] for name in pattern.pattern.converters})


@pytest.mark.parametrize("pattern", urlpatterns, ids=lambda p: p.name)
def test_every_page_of_the_workspace_needs_sign_in(client, agent, pattern):
    url = _sample_url(pattern)
    send = client.get
    response = send(url)
    if response.status_code == 405:  # a POST-only action
        send = client.post
        response = send(url)
    assert response.status_code == 302 and _next_of(response["Location"]) == url
    response = send(url, **HTMX)
    assert response.status_code == 200 and _next_of(response["HX-Redirect"]) == url


# ---------------------------------------------------------------------------------------------- helpers per kind


def _request(user):
    request = RequestFactory().get("/")
    request.user = user
    return request


def _outcome(call) -> int:
    try:
        call()
    except Http404:
        return 404
    except PermissionDenied:
        return 403
    return 200


@pytest.fixture
def people(outsider, reviewer, approver, admin_user, candidate):
    return {
        "anonymous": AnonymousUser(),
        "outsider": outsider,
        "reviewer": reviewer,
        "approver": approver,
        "manager": procedure_manager(candidate.procedure),
        "admin": admin_user,
    }


# who → purpose → expected status, for a version, its procedure and an eval run of it
VERSION_MATRIX = {
    "anonymous": {"view": 404, "operate": 404, "review": 404, "approve": 404, "manage": 404},
    "outsider": {"view": 200, "operate": 404, "review": 403, "approve": 403, "manage": 404},
    "reviewer": {"view": 200, "operate": 200, "review": 200, "approve": 403, "manage": 403},
    "approver": {"view": 200, "operate": 200, "review": 200, "approve": 200, "manage": 403},
    "manager": {"view": 200, "operate": 200, "review": 403, "approve": 403, "manage": 200},
    "admin": {"view": 200, "operate": 200, "review": 200, "approve": 200, "manage": 200},
}


@pytest.mark.parametrize("who", VERSION_MATRIX)
def test_version_and_procedure_purposes(people, candidate, who):
    request = _request(people[who])
    for purpose, expected in VERSION_MATRIX[who].items():
        assert _outcome(lambda: access.get_version_for_user(request, candidate.pk, for_=purpose)) == expected, purpose
        assert (
            _outcome(lambda: access.get_procedure_for_user(request, candidate.procedure_id, for_=purpose)) == expected
        ), purpose
    assert _outcome(lambda: access.get_version_for_user(request, 999_999, for_="view")) == 404


@pytest.mark.parametrize("who", VERSION_MATRIX)
def test_eval_run_purposes(people, candidate, who):
    run = EvalRun.objects.create(version=candidate, content_hash=candidate.content_hash, state=EvalRun.State.RUNNING)
    request = _request(people[who])
    expected = VERSION_MATRIX[who]["review"]
    assert _outcome(lambda: access.get_eval_run_for_user(request, run.pk, for_="review")) == expected


AGENT_MATRIX = {
    "anonymous": {"view": 404, "operate": 404, "review": 404, "manage": 404},
    "outsider": {"view": 200, "operate": 404, "review": 403, "manage": 404},
    "reviewer": {"view": 200, "operate": 200, "review": 200, "manage": 403},
    "manager": {"view": 200, "operate": 200, "review": 403, "manage": 403},
    "admin": {"view": 200, "operate": 200, "review": 200, "manage": 200},
}


@pytest.mark.parametrize("who", AGENT_MATRIX)
def test_agent_purposes(people, agent, who):
    request = _request(people[who])
    for purpose, expected in AGENT_MATRIX[who].items():
        assert _outcome(lambda: access.get_agent_for_user(request, agent.name, for_=purpose)) == expected, purpose
    assert _outcome(lambda: access.get_agent_for_user(request, "no_such_agent", for_="view")) == 404


def test_a_purpose_that_does_not_apply_is_a_programming_error(admin_user, agent):
    with pytest.raises(ValueError):
        access.get_agent_for_user(_request(admin_user), agent.name, for_="approve")
    with pytest.raises(ValueError):
        access.get_agent_for_user(_request(admin_user), agent.name, for_="see")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- restricting to agents


def test_of_agents_leaves_out_only_a_condition_that_holds_for_every_agent(candidate, other_procedure):
    """Every agent unfiltered: no condition (and no join); any narrowed, emptied or sliced agents
    queryset still restricts the rows."""
    from library.models import Agent, ProcedureVersion

    everyone = access.of_agents(ProcedureVersion.objects.all(), Agent.objects.all())
    assert "library_agent" not in str(everyone.query) and everyone.count() == ProcedureVersion.objects.count()
    other = Agent.objects.create(name="other_agent")
    assert not access.of_agents(ProcedureVersion.objects.all(), Agent.objects.filter(pk=other.pk)).exists()
    assert not access.of_agents(ProcedureVersion.objects.all(), Agent.objects.none()).exists()
    assert (
        access.of_agents(ProcedureVersion.objects.all(), Agent.objects.exclude(pk=other.pk)).count()
        == ProcedureVersion.objects.count()
    )
    assert not access.of_agents(ProcedureVersion.objects.all(), Agent.objects.order_by("-pk")[:1]).exists()


# ---------------------------------------------------------------------------------------------- moving between namespaces

# who → status of POST /procedures/<pk>/scope/ moving the procedure out of its namespace ("out":
# default → tenant-b) and back ("in": tenant-b → default). A move needs the manage right on both
# namespaces (library.permissions.user_can_move_procedure); the procedure's and the agent's rights
# travel with it and open neither side (issue 42). 404: the user does not see the agent's operations.
SCOPE_MOVE_MATRIX = {
    "anonymous": {"out": 302, "in": 302},  # to the sign-in page
    "outsider": {"out": 404, "in": 404},
    "reviewer": {"out": 403, "in": 403},
    "approver": {"out": 403, "in": 403},
    "manager": {"out": 403, "in": 403},
    "agent_manager": {"out": 403, "in": 403},
    "default_manager": {"out": 403, "in": 403},
    "tenant_b_manager": {"out": 404, "in": 403},
    "tenant_b_admin": {"out": 403, "in": 403},  # manage on the agent, approve in tenant-b: the probe's admin
    "both_managers": {"out": 302, "in": 302},
    "admin": {"out": 302, "in": 302},
}


@pytest.fixture
def movers(people, candidate, admin_user):
    from guardian.shortcuts import assign_perm

    from library.models import Namespace
    from library.services import namespace_create
    from tests.reviews.operations_helpers import agent_manager, make_user

    default = candidate.procedure.namespace
    tenant_b = namespace_create(name="tenant-b", user=admin_user)
    extra = {
        "agent_manager": agent_manager(candidate.procedure.agent),
        "default_manager": make_user("default_manager"),
        "tenant_b_manager": make_user("tenant_b_manager"),
        "tenant_b_admin": agent_manager(candidate.procedure.agent, name="tenant_b_admin"),
        "both_managers": make_user("both_managers"),
    }
    assign_perm("library.manage_namespace_procedures", extra["default_manager"], default)
    assign_perm("library.manage_namespace_procedures", extra["tenant_b_manager"], tenant_b)
    assign_perm("library.approve_namespace_procedures", extra["tenant_b_admin"], tenant_b)
    for namespace in (default, tenant_b):
        assign_perm("library.manage_namespace_procedures", extra["both_managers"], namespace)
    return {**people, **extra}, {"default": default, "tenant-b": Namespace.objects.get(pk=tenant_b.pk)}


@pytest.mark.parametrize("direction", ["out", "in"])
@pytest.mark.parametrize("who", SCOPE_MOVE_MATRIX)
def test_scope_moves_between_namespaces(movers, candidate, who, direction):
    from django.test import Client

    from library.models import AuditEvent, Procedure

    users, namespaces = movers
    start, goal = ("default", "tenant-b") if direction == "out" else ("tenant-b", "default")
    Procedure.objects.filter(pk=candidate.procedure_id).update(namespace=namespaces[start])
    client = Client()
    if who != "anonymous":
        client.force_login(users[who])
    data = {"namespace": goal, "roles": "", "priority": "0", "confidence": "medium", "reason": "a move"}
    response = client.post(reverse("reviews:procedure_scope", args=[candidate.procedure_id]), data)
    expected = SCOPE_MOVE_MATRIX[who][direction]
    assert response.status_code == expected, response.content[:300]
    moved = Procedure.objects.get(pk=candidate.procedure_id).namespace.name
    events = AuditEvent.objects.filter(action=AuditEvent.Action.SCOPE, procedure_id=candidate.procedure_id)
    if expected == 302 and who != "anonymous":
        assert moved == goal
        assert [(e.before["namespace"], e.after["namespace"]) for e in events] == [(start, goal)]
    else:
        assert moved == start and not events.exists()
