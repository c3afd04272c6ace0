"""Scope on the review pages and rights per namespace: the scope form of the procedure page, the
namespaces page (create, move an agent, grant, revoke), and review / approve / manage granted on a
namespace honoured by the access helpers, the services and the queue — for the namespace's
procedures only."""

from __future__ import annotations

import pytest
from django.urls import reverse
from guardian.shortcuts import assign_perm

from library.models import DEFAULT_NAMESPACE, AuditEvent, Namespace, Procedure, Status
from library.permissions import user_can_approve
from library.services import namespace_create
from reviews import selectors
from tests.conftest import _user

from .conftest import client_for


@pytest.fixture
def default_ns(agent):
    return Namespace.objects.get(name=DEFAULT_NAMESPACE)


@pytest.fixture
def other_ns(admin_user):
    return namespace_create(name="team-other", user=admin_user)


def _holder(name: str, perm: str, namespace):
    user = _user(name)
    assign_perm(f"library.{perm}", user, namespace)
    return user


def _scope_post(client, procedure, **changes):
    data = {
        "namespace": procedure.namespace.name,
        "roles": "",
        "priority": "0",
        "confidence": "medium",
        "reason": "a test",
        **changes,
    }
    return client.post(reverse("reviews:procedure_scope", args=[procedure.pk]), data)


# --------------------------------------------------------------------------------------------- the scope form


def test_the_procedure_page_shows_the_scope_and_the_form_to_its_managers_only(
    candidate, admin_user, reviewer, default_ns
):
    procedure = candidate.procedure
    page = client_for(admin_user).get(reverse("reviews:procedure", args=[procedure.pk]))
    assert b'id="scope-form"' in page.content and b"every role" in page.content
    manager = _holder("ns_manager", "manage_namespace_procedures", default_ns)
    assert b'id="scope-form"' in client_for(manager).get(reverse("reviews:procedure", args=[procedure.pk])).content
    assert b'id="scope-form"' not in client_for(reviewer).get(reverse("reviews:procedure", args=[procedure.pk])).content


def test_a_namespace_manager_changes_the_scope_and_others_get_403_or_404(
    candidate, reviewer, outsider, default_ns, other_ns
):
    procedure = candidate.procedure
    # only the manage right on the procedure's namespace (not a reviewer, nothing on the agent)
    manager = _holder("ns_manager", "manage_namespace_procedures", default_ns)
    response = _scope_post(
        client_for(manager),
        procedure,
        roles="billing, tier-2",
        priority="7",
        confidence="high",
        reason="billing owns it",
    )
    assert response.status_code == 302
    procedure.refresh_from_db()
    assert (procedure.roles, procedure.priority, procedure.confidence) == (["billing", "tier-2"], 7, "high")
    assert AuditEvent.objects.filter(action=AuditEvent.Action.SCOPE, procedure=procedure, actor=manager).exists()
    # the manager of the other namespace does not see this agent's operations: 404
    stranger = _holder("other_manager", "manage_namespace_procedures", other_ns)
    assert _scope_post(client_for(stranger), procedure, priority="1").status_code == 404
    # a reviewer sees the operations pages but may not manage: 403; an outsider sees nothing: 404
    assert _scope_post(client_for(reviewer), procedure, priority="1").status_code == 403
    assert _scope_post(client_for(outsider), procedure, priority="1").status_code == 404
    procedure.refresh_from_db()
    assert procedure.priority == 7


def test_bad_scope_input_is_a_400_saying_which_field(candidate, admin_user):
    procedure = candidate.procedure
    client = client_for(admin_user)
    for changes, word in (
        ({"priority": "1000"}, b"priority"),
        ({"roles": "Not A Role"}, b"roles"),
        ({"reason": ""}, b"reason"),
        ({"namespace": "nowhere"}, b"namespace"),
        ({"confidence": "sure"}, b"confidence"),
    ):
        response = _scope_post(client, procedure, **{"priority": "3", **changes})
        assert response.status_code == 400, changes
        assert word in response.content
    procedure.refresh_from_db()
    assert procedure.priority == 0


# --------------------------------------------------------------------------------------------- rights per namespace


def test_review_granted_on_a_namespace_lets_its_holder_reject_there_only(candidate, default_ns, other_ns):
    url = reverse("reviews:version_reject", args=[candidate.pk])
    other_reviewer = _holder("other_reviewer", "review_namespace_procedures", other_ns)
    assert client_for(other_reviewer).post(url, {"reason": "not ours"}).status_code == 403
    ns_reviewer = _holder("ns_reviewer", "review_namespace_procedures", default_ns)
    assert client_for(ns_reviewer).post(url, {"reason": "superseded"}).status_code == 302
    candidate.refresh_from_db()
    assert candidate.status == Status.REJECTED


def test_approve_granted_on_a_namespace_counts_for_its_procedures_and_the_queue(
    candidate, other_procedure, default_ns, other_ns, admin_user
):
    ns_approver = _holder("ns_approver", "approve_namespace_procedures", default_ns)
    other_approver = _holder("ns_other_approver", "approve_namespace_procedures", other_ns)
    assert user_can_approve(ns_approver, candidate.procedure) and not user_can_approve(
        other_approver, candidate.procedure
    )
    waiting = set(selectors.waiting_for_approver(ns_approver).values_list("procedure__key", flat=True))
    assert waiting == {"refund.over_limit", "order.status"}
    assert not selectors.waiting_for_approver(other_approver).exists()
    # move order.status into the other namespace: each approver's queue follows
    Procedure.objects.filter(pk=other_procedure.pk).update(namespace=other_ns)
    for user in (ns_approver, other_approver):
        user._procmem_approve_scope = None
        del user._procmem_approve_scope
    assert set(selectors.waiting_for_approver(ns_approver).values_list("procedure__key", flat=True)) == {
        "refund.over_limit"
    }
    assert set(selectors.waiting_for_approver(other_approver).values_list("procedure__key", flat=True)) == {
        "order.status"
    }
    # approving: the other namespace's approver is refused (403), the namespace's approves
    from tests.conftest import make_passing_eval

    make_passing_eval(candidate)
    url = reverse("reviews:version_approve", args=[candidate.pk])
    assert client_for(other_approver).post(url, {"comment": "no"}).status_code == 403
    assert client_for(ns_approver).post(url, {"comment": "fine", "confirm": "on"}).status_code == 302
    candidate.refresh_from_db()
    assert candidate.status == Status.ACTIVE and candidate.approved_by == ns_approver


def test_manage_granted_on_a_namespace_opens_the_agents_operations_and_retire(
    candidate, admin_user, default_ns, other_ns
):
    from tests.conftest import make_active

    active = make_active(candidate, admin_user)
    url = reverse("reviews:ops_retire", args=[active.pk])
    stranger = _holder("other_manager", "manage_namespace_procedures", other_ns)
    assert client_for(stranger).post(url, {"reason": "no"}).status_code == 404
    manager = _holder("ns_manager", "manage_namespace_procedures", default_ns)
    assert (
        client_for(manager).get(reverse("reviews:ops_agent", args=[candidate.procedure.agent.name])).status_code == 200
    )
    assert client_for(manager).post(url, {"reason": "outdated"}).status_code == 302
    active.refresh_from_db()
    assert active.status == Status.RETIRED


# --------------------------------------------------------------------------------------------- the namespaces page


def test_the_namespaces_page_creates_grants_and_revokes_audited(agent, admin_user, reviewer):
    client = client_for(admin_user)
    page = client.get(reverse("reviews:ops_namespaces"))
    assert page.status_code == 200 and b'id="namespace-create-form"' in page.content
    assert (
        client.post(
            reverse("reviews:ops_namespace_create"), {"name": "team-billing", "description": "Billing"}
        ).status_code
        == 302
    )
    billing = Namespace.objects.get(name="team-billing")
    grant = {
        "namespace": "team-billing",
        "right": "approve",
        "grantee_kind": "user",
        "grantee": "reviewer",
        "reason": "lead",
    }
    assert client.post(reverse("reviews:ops_namespace_grant"), grant).status_code == 302
    assert reviewer.has_perm("library.approve_namespace_procedures", billing)
    assert client.post(reverse("reviews:ops_namespace_grant"), grant).status_code == 400  # already held
    assert b"approve: " in client.get(reverse("reviews:ops_namespaces")).content
    assert client.post(reverse("reviews:ops_namespace_revoke"), grant).status_code == 302
    assert AuditEvent.objects.filter(action=AuditEvent.Action.NAMESPACE_CREATE).count() == 1
    assert AuditEvent.objects.filter(action=AuditEvent.Action.GRANT, after__on="namespace team-billing").count() == 1
    assert AuditEvent.objects.filter(action=AuditEvent.Action.REVOKE, before__on="namespace team-billing").count() == 1
    # moving the agent
    move = {"agent": agent.name, "namespace": "team-billing", "reason": "billing runs it"}
    assert client.post(reverse("reviews:ops_agent_namespace"), move).status_code == 302
    agent.refresh_from_db()
    assert agent.namespace == billing


def test_the_namespaces_page_refuses_who_may_not(agent, reviewer, outsider, admin_user):
    namespace_create(name="team-billing", user=admin_user)
    grant = {"namespace": "team-billing", "right": "manage", "grantee_kind": "user", "grantee": "reviewer"}
    move = {"agent": agent.name, "namespace": "team-billing", "reason": "x"}
    reviewer_client = client_for(reviewer)
    assert reviewer_client.get(reverse("reviews:ops_namespaces")).status_code == 200
    assert reviewer_client.post(reverse("reviews:ops_namespace_create"), {"name": "team-x"}).status_code == 403
    assert reviewer_client.post(reverse("reviews:ops_namespace_grant"), grant).status_code == 403
    assert reviewer_client.post(reverse("reviews:ops_agent_namespace"), move).status_code == 403
    outsider_client = client_for(outsider)
    for name, data in (
        ("ops_namespaces", None),
        ("ops_namespace_create", {"name": "team-y"}),
        ("ops_namespace_grant", grant),
    ):
        response = (
            outsider_client.post(reverse(f"reviews:{name}"), data)
            if data
            else outsider_client.get(reverse(f"reviews:{name}"))
        )
        assert response.status_code == 404, name
    assert not Namespace.objects.filter(name__in=["team-x", "team-y"]).exists()
    assert not reviewer.has_perm("library.manage_namespace_procedures", Namespace.objects.get(name="team-billing"))
    agent.refresh_from_db()
    assert agent.namespace.name == DEFAULT_NAMESPACE
