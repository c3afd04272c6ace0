"""Scope: namespaces, a procedure's roles, priority and confidence — the one service that changes
them (row lock, audit row, refusals), what the agent API serves for a namespace and a role, the
ETag following scope, and priority breaking near-ties through the select endpoint."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse
from guardian.shortcuts import assign_perm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from library import services
from library.api.tokens import token_create
from library.models import (
    DEFAULT_NAMESPACE,
    ApiToken,
    AuditEvent,
    Namespace,
    Procedure,
    ProcedureVersion,
    Source,
    Status,
)
from library.services import (
    agent_namespace_set,
    clean_priority,
    clean_roles,
    namespace_create,
    procedure_scope_update,
)
from tests.conftest import _user, make_active

pytestmark = pytest.mark.usefixtures("readonly_shares_default")


@pytest.fixture
def read_token(agent, admin_user):
    return token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]


@pytest.fixture
def active_pair(candidate, other_procedure, admin_user):
    return make_active(candidate, admin_user), make_active(other_procedure.versions.get(number=1), admin_user)


@pytest.fixture
def billing(admin_user):
    return namespace_create(name="team-billing", description="The billing team", user=admin_user)


def _get(client, token, name="active_set", **params):
    return client.get(
        reverse(f"api:{name}", kwargs={"agent": "support_agent"}), params, HTTP_AUTHORIZATION=f"Bearer {token}"
    )


def _scope(procedure, user, **changes):
    current = {
        "namespace": procedure.namespace,
        "roles": list(procedure.roles),
        "priority": procedure.priority,
        "confidence": procedure.confidence,
        "reason": "a test",
    }
    return procedure_scope_update(procedure=procedure, user=user, **{**current, **changes})


# --------------------------------------------------------------------------------------------- the model


def test_existing_and_new_agents_and_procedures_are_in_the_default_namespace(agent, candidate):
    assert agent.namespace.name == DEFAULT_NAMESPACE
    procedure = candidate.procedure
    assert procedure.namespace_id == agent.namespace_id
    assert (procedure.roles, procedure.priority, procedure.confidence) == ([], 0, "medium")
    # bulk-created procedures get their agent's namespace too
    [bulk] = Procedure.objects.bulk_create([Procedure(agent=agent, intent=procedure.intent, key="bulk.one")])
    assert Procedure.objects.get(pk=bulk.pk).namespace_id == agent.namespace_id


# --------------------------------------------------------------------------------------------- the service


def test_scope_update_is_audited_with_before_and_after_and_changes_no_version(candidate, admin_user, billing):
    procedure = candidate.procedure
    updated = _scope(
        procedure,
        admin_user,
        namespace=billing,
        roles=["billing", "Billing ".lower().strip(), "tier-2"],
        priority=5,
        confidence="high",
        reason="billing owns it",
    )
    assert (updated.namespace.name, updated.roles, updated.priority, updated.confidence) == (
        "team-billing",
        ["billing", "tier-2"],
        5,
        "high",
    )
    event = AuditEvent.objects.filter(action=AuditEvent.Action.SCOPE, procedure=procedure).get()
    assert event.actor == admin_user and event.reason == "billing owns it"
    assert event.before == {"namespace": "default", "roles": [], "priority": 0, "confidence": "medium"}
    assert event.after == {
        "namespace": "team-billing",
        "roles": ["billing", "tier-2"],
        "priority": 5,
        "confidence": "high",
    }
    # scope is not content: no new version, no status change (nothing here can make a version ACTIVE)
    assert list(ProcedureVersion.objects.filter(procedure=procedure).values_list("number", "status")) == [
        (1, Status.CANDIDATE)
    ]


@pytest.mark.parametrize(
    "changes,field",
    [
        ({"roles": ["Billing"]}, "roles"),
        ({"roles": ["ok", 3]}, "roles"),
        ({"roles": "a" * 65}, "roles"),
        ({"roles": [f"r{i}" for i in range(21)]}, "roles"),
        ({"priority": 101}, "priority"),
        ({"priority": "high"}, "priority"),
        ({"priority": True}, "priority"),
        ({"confidence": "0.9"}, "confidence"),
        ({"reason": "  "}, "reason"),
        ({}, "__all__"),  # nothing changed
    ],
)
def test_scope_update_refuses_bad_input_saying_where_and_stores_nothing(candidate, admin_user, changes, field):
    procedure = candidate.procedure
    with pytest.raises(ValidationError) as caught:
        _scope(procedure, admin_user, **changes)
    assert field in caught.value.message_dict
    procedure.refresh_from_db()
    assert (procedure.roles, procedure.priority, procedure.confidence) == ([], 0, "medium")
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.SCOPE).exists()


def test_the_database_refuses_a_priority_or_confidence_out_of_range(candidate):
    from django.db import IntegrityError, transaction

    for column, value in (("priority", 500), ("confidence", "sure")):
        with pytest.raises(IntegrityError), transaction.atomic():
            Procedure.objects.filter(pk=candidate.procedure_id).update(**{column: value})


def test_scope_update_needs_the_manage_right_where_the_procedure_is_and_where_it_goes(
    candidate, reviewer, billing, admin_user
):
    procedure = candidate.procedure
    with pytest.raises(PermissionDenied):
        _scope(procedure, reviewer, priority=3)
    # a manager of the procedure's namespace may change it, but not move it into a namespace it does not manage
    default_manager = _user("default_manager")
    assign_perm("library.manage_namespace_procedures", default_manager, procedure.namespace)
    assert _scope(procedure, default_manager, priority=3).priority == 3
    with pytest.raises(PermissionDenied, match="into namespace team-billing"):
        _scope(procedure, default_manager, namespace=billing)
    assign_perm("library.manage_namespace_procedures", default_manager, billing)
    assert _scope(procedure, default_manager, namespace=billing).namespace == billing
    # the manager of another namespace only
    billing_only = _user("billing_only")
    assign_perm("library.manage_namespace_procedures", billing_only, Namespace.objects.get(name=DEFAULT_NAMESPACE))
    other = namespace_create(name="team-other", user=admin_user)
    stranger = _user("stranger")
    assign_perm("library.manage_namespace_procedures", stranger, other)
    with pytest.raises(PermissionDenied):
        _scope(procedure, stranger, priority=9)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.one_of(
        st.text(max_size=80),
        st.lists(st.one_of(st.text(max_size=70), st.integers()), max_size=25),
        st.integers(),
        st.none(),
    )
)
def test_clean_roles_either_returns_role_names_or_says_what_is_wrong(value):
    try:
        roles = clean_roles(value)
    except ValidationError as exc:
        assert "roles" in exc.message_dict
    else:
        assert roles == sorted(set(roles)) and len(roles) <= 20
        assert all(r and r[0].isalpha() and r == r.lower() and len(r) <= 64 for r in roles)


@settings(max_examples=60, deadline=None)
@given(value=st.one_of(st.integers(-1000, 1000), st.text(max_size=8), st.booleans(), st.floats(allow_nan=True)))
def test_clean_priority_either_returns_an_int_in_range_or_says_what_is_wrong(value):
    try:
        number = clean_priority(value)
    except ValidationError as exc:
        assert "priority" in exc.message_dict
    else:
        assert isinstance(number, int) and -100 <= number <= 100


def test_namespace_creation_is_for_library_admins_and_audited(admin_user, reviewer):
    with pytest.raises(PermissionDenied):
        namespace_create(name="team-x", user=reviewer)
    with pytest.raises(ValidationError) as caught:
        namespace_create(name="Team X", user=admin_user)
    assert "name" in caught.value.message_dict
    namespace_create(name="team-x", user=admin_user, reason="new team")
    with pytest.raises(ValidationError, match="exists"):
        namespace_create(name="team-x", user=admin_user)
    assert AuditEvent.objects.filter(action=AuditEvent.Action.NAMESPACE_CREATE, after__namespace="team-x").count() == 1


# --------------------------------------------------------------------------------------------- what agents are served


def test_served_json_carries_the_scope_and_the_set_its_namespace(client, read_token, active_pair, admin_user):
    refund, _ = active_pair
    _scope(refund.procedure, admin_user, roles=["billing"], priority=4, confidence="high")
    body = _get(client, read_token).json()
    assert body["namespace"] == "default" and "role" not in body
    by_id = {p["id"]: p for p in body["procedures"]}
    assert {k: by_id["refund.over_limit"][k] for k in ("namespace", "roles", "priority", "confidence")} == {
        "namespace": "default",
        "roles": ["billing"],
        "priority": 4,
        "confidence": "high",
    }
    assert {k: by_id["order.status"][k] for k in ("roles", "priority", "confidence")} == {
        "roles": [],
        "priority": 0,
        "confidence": "medium",
    }
    # the rendered text is the content only: scope is not rendered
    assert "billing" not in by_id["refund.over_limit"]["rendered"]


def test_role_narrows_the_set_and_procedures_without_roles_are_always_served(
    client, read_token, active_pair, admin_user
):
    refund, _ = active_pair
    _scope(refund.procedure, admin_user, roles=["billing", "supervisor"])
    ids = lambda response: sorted(p["id"] for p in response.json()["procedures"])  # noqa: E731
    everyone = _get(client, read_token)
    assert ids(everyone) == ["order.status", "refund.over_limit"]
    billing = _get(client, read_token, role="billing")
    assert ids(billing) == ["order.status", "refund.over_limit"] and billing.json()["role"] == "billing"
    shipping = _get(client, read_token, role="shipping")
    assert ids(shipping) == ["order.status"]
    # each role's set has its own strong ETag and answers If-None-Match with 304
    etags = {everyone["ETag"], billing["ETag"], shipping["ETag"]}
    assert len(etags) == 3
    again = client.get(
        reverse("api:active_set", kwargs={"agent": "support_agent"}),
        {"role": "shipping"},
        HTTP_AUTHORIZATION=f"Bearer {read_token}",
        HTTP_IF_NONE_MATCH=shipping["ETag"],
    )
    assert again.status_code == 304
    # and selection for a role only ever picks from that role's set
    selected = _get(
        client, read_token, name="select", task="The customer wants a refund above my limit.", role="shipping", k="5"
    ).json()
    assert selected["role"] == "shipping" and {c["id"] for c in selected["ranked"]} == {"order.status"}


@pytest.mark.parametrize("role", ["Billing", "a b", "x" * 65, "-lead", "é"])
def test_a_bad_role_is_a_400_naming_the_parameter(client, read_token, active_pair, role):
    for name, extra in (("active_set", {}), ("select", {"task": "refund"})):
        response = _get(client, read_token, name=name, role=role, **extra)
        assert response.status_code == 400
        assert response.json()["error"]["parameter"] == "role"


def test_the_etag_changes_with_every_part_of_the_scope(client, read_token, active_pair, admin_user, billing):
    refund, _ = active_pair
    seen = [_get(client, read_token)["ETag"]]
    for change in ({"priority": 2}, {"confidence": "low"}, {"roles": ["billing"]}, {"namespace": billing}):
        _scope(Procedure.objects.get(pk=refund.procedure_id), admin_user, **change)
        seen.append(_get(client, read_token)["ETag"])
    assert len(set(seen)) == len(seen)


def test_a_procedure_moved_out_of_the_agents_namespace_is_not_served_and_keeps_its_status(
    client, read_token, active_pair, admin_user, billing
):
    refund, _ = active_pair
    _scope(refund.procedure, admin_user, namespace=billing)
    assert [p["id"] for p in _get(client, read_token).json()["procedures"]] == ["order.status"]
    assert ProcedureVersion.objects.get(pk=refund.pk).status == Status.ACTIVE
    # the agent moved into that namespace takes its procedures of its old namespace along
    agent = refund.procedure.agent
    assert agent_namespace_set(agent=agent, namespace=billing, user=admin_user, reason="billing runs it") == 1
    body = _get(client, read_token).json()
    assert body["namespace"] == "team-billing"
    assert sorted(p["id"] for p in body["procedures"]) == ["order.status", "refund.over_limit"]
    assert AuditEvent.objects.filter(action=AuditEvent.Action.SCOPE, agent=agent, procedure=None).get().after == {
        "agentNamespace": "team-billing",
        "proceduresMoved": ["order.status"],
    }


def test_moving_an_agent_is_for_library_admins(agent, reviewer, billing):
    manager = _user("manager")
    assign_perm("library.manage_agent", manager, agent)
    for user in (reviewer, manager):
        with pytest.raises(PermissionDenied):
            agent_namespace_set(agent=agent, namespace=billing, user=user, reason="x")


# --------------------------------------------------------------------------------------------- selection


def test_select_endpoint_breaks_a_near_tie_by_priority(client, read_token, active_pair, admin_user, intent, proposer):
    # given a second procedure with the same situation and steps as refund.over_limit (equal totals)
    refund, _ = active_pair
    twin = services.procedure_propose(
        agent=refund.procedure.agent,
        intent=intent,
        key="refund.twin",
        applies_when=refund.applies_when,
        steps=list(refund.steps),
        required_tools=list(refund.required_tools),
        forbidden_actions=list(refund.forbidden_actions),
        source=Source.MANUAL,
        proposed_by=proposer,
    )
    make_active(twin, admin_user)
    task = "The customer wants a refund of 900 dollars, above my limit."
    order = lambda: [p["id"] for p in _get(client, read_token, name="select", task=task, k="3").json()["ranked"]]  # noqa: E731
    # when priorities are equal the two lead by score (equal up to float rounding), then id
    first, second = order()[:2]
    assert {first, second} == {"refund.over_limit", "refund.twin"}
    # then a higher priority wins the near-tie, through the same ranker the client uses
    _scope(Procedure.objects.get(key=second), admin_user, priority=10)
    ranked = _get(client, read_token, name="select", task=task, k="3").json()
    assert [p["id"] for p in ranked["ranked"]][:2] == [second, first]
    assert ranked["injected"][0]["id"] == second and ranked["injected"][0]["priority"] == 10
    # a priority does not lift what is not a near-tie: order.status stays last
    assert ranked["ranked"][2]["id"] == "order.status"


def test_role_sets_kept_per_built_set_are_bounded(client, read_token, active_pair, admin_user, monkeypatch):
    from library.serving import active_set as serving

    monkeypatch.setattr(serving, "MAX_CACHED_ROLES", 1)
    refund, _ = active_pair
    _scope(refund.procedure, admin_user, roles=["billing"])
    first = _get(client, read_token, role="billing")
    second = _get(client, read_token, role="shipping")  # built, served, not kept
    assert len(first.json()["procedures"]) == 2 and len(second.json()["procedures"]) == 1
    assert _get(client, read_token, role="shipping")["ETag"] == second["ETag"]
    served = serving.active_set_for_agent(agent=refund.procedure.agent)
    assert list(served._roles) == ["billing"]


# --------------------------------------------------------------------------------------------- moves between namespaces (issue 42)


@pytest.fixture
def tenant_b(admin_user):
    return namespace_create(name="tenant-b", user=admin_user)


def _holder(name: str, *grants):
    """A reviewer-less user holding each (permission, object) in `grants`."""
    user = _user(name)
    for perm, obj in grants:
        assign_perm(f"library.{perm}", user, obj)
    return user


def test_a_move_needs_the_manage_right_on_both_namespaces_and_no_other_right_counts(candidate, agent, tenant_b):
    procedure = candidate.procedure
    default = procedure.namespace
    # the probe's admin: manage on the agent, approve in tenant-b; the agent's right travels with
    # the procedure, so it opens no namespace
    probe = _holder(
        "probe",
        ("manage_agent", agent),
        ("manage_agent_procedures", agent),
        ("manage_procedure", procedure),
        ("approve_namespace_procedures", tenant_b),
    )
    only_source = _holder("only_source", ("manage_namespace_procedures", default))
    only_destination = _holder(
        "only_destination", ("manage_namespace_procedures", tenant_b), ("manage_agent_procedures", agent)
    )
    for user in (probe, only_source, only_destination):
        with pytest.raises(PermissionDenied, match="manage right on both namespaces"):
            _scope(procedure, user, namespace=tenant_b)
    # they may still change what is not a move where they manage the procedure
    assert _scope(procedure, probe, priority=2).priority == 2
    both = _holder("both", ("manage_namespace_procedures", default), ("manage_namespace_procedures", tenant_b))
    assert _scope(procedure, both, namespace=tenant_b).namespace == tenant_b
    # and back: the same two rights, the other way round; a manager of tenant-b only may not
    with pytest.raises(PermissionDenied):
        _scope(Procedure.objects.get(pk=procedure.pk), only_destination, namespace=default)
    assert _scope(Procedure.objects.get(pk=procedure.pk), both, namespace=default).namespace == default
    moves = AuditEvent.objects.filter(action=AuditEvent.Action.SCOPE, procedure=procedure).order_by("id")
    assert [(e.before["namespace"], e.after["namespace"], e.actor) for e in moves if e.actor == both] == [
        ("default", "tenant-b", both),
        ("tenant-b", "default", both),
    ]


def test_a_move_does_not_carry_an_active_version_past_the_gate_of_the_namespace_it_ends_in(
    client, read_token, candidate, agent, tenant_b
):
    # given a tenant admin who manages both namespaces but approves in tenant-b only
    procedure = candidate.procedure
    default = procedure.namespace
    tenant_admin = _holder(
        "tenant_admin",
        ("manage_namespace_procedures", default),
        ("manage_namespace_procedures", tenant_b),
        ("approve_namespace_procedures", tenant_b),
    )
    from tests.conftest import make_passing_eval

    make_passing_eval(candidate)
    with pytest.raises(PermissionDenied):
        services.version_approve(version=candidate, user=tenant_admin, comment="x", acknowledge_conflicts=True)
    # when the procedure goes to tenant-b, is approved there, and is moved back
    _scope(procedure, tenant_admin, namespace=tenant_b)
    approved = services.version_approve(
        version=candidate, user=tenant_admin, comment="ok here", acknowledge_conflicts=True
    )
    assert approved.status == Status.ACTIVE
    with pytest.raises(services.LifecycleError, match=r"v1 is active, approved by tenant_admin.*right in default"):
        _scope(Procedure.objects.get(pk=procedure.pk), tenant_admin, namespace=default)
    # then nothing moved and the agent is not served the version tenant_admin could not approve
    assert Procedure.objects.get(pk=procedure.pk).namespace == tenant_b
    assert _get(client, read_token).json()["procedures"] == []
    # a version whose approver's right holds in the destination moves freely (here the approve
    # right on the agent, which travels with the procedure)
    assign_perm("library.approve_agent_procedures", tenant_admin, agent)
    assert _scope(Procedure.objects.get(pk=procedure.pk), tenant_admin, namespace=default).namespace == default
    assert [p["id"] for p in _get(client, read_token).json()["procedures"]] == ["refund.over_limit"]


def test_an_approved_staged_version_is_gated_like_an_active_one(candidate, agent, tenant_b, admin_user):
    procedure = candidate.procedure
    default = procedure.namespace
    tenant_admin = _holder(
        "tenant_admin",
        ("manage_namespace_procedures", default),
        ("manage_namespace_procedures", tenant_b),
        ("approve_namespace_procedures", tenant_b),
    )
    agent.environments = ["staging"]
    agent.save(update_fields=["environments"])
    _scope(procedure, tenant_admin, namespace=tenant_b)
    from library.demo.seed import record_passing_eval

    record_passing_eval(candidate, runner="test")  # against staging's set: the agent has staging
    staged = services.version_approve(version=candidate, user=tenant_admin, comment="ok", acknowledge_conflicts=True)
    assert staged.status == Status.APPROVED
    with pytest.raises(services.LifecycleError, match="v1 is approved"):
        _scope(Procedure.objects.get(pk=procedure.pk), tenant_admin, namespace=default)


def test_rolling_back_after_a_move_needs_an_approval_that_holds_where_the_procedure_is_now(
    candidate, agent, tenant_b, admin_user
):
    # given v1 approved in tenant-b by its approver, then retired there
    procedure = candidate.procedure
    default = procedure.namespace
    tenant_admin = _holder(
        "tenant_admin",
        ("manage_namespace_procedures", default),
        ("manage_namespace_procedures", tenant_b),
        ("approve_namespace_procedures", tenant_b),
    )
    _scope(procedure, tenant_admin, namespace=tenant_b)
    active = make_active(candidate, tenant_admin)
    retired = services.version_retire(version=active, user=tenant_admin, reason="not now")
    # a rollback where it was approved is allowed
    services.version_rollback(version=retired, user=tenant_admin, reason="needed after all")
    services.version_retire(version=retired, user=tenant_admin, reason="not now")
    # when the retired version's procedure moves into default (nothing served moves along)
    _scope(Procedure.objects.get(pk=procedure.pk), tenant_admin, namespace=default)
    # then rolling back to it there would serve it past default's gate: refused
    with pytest.raises(services.LifecycleError, match="approve right there"):
        services.version_rollback(version=retired, user=tenant_admin, reason="bring it back")
    assert ProcedureVersion.objects.get(pk=retired.pk).status == Status.RETIRED
    # once its approver holds the approve right in default too, the rollback goes through
    assign_perm("library.approve_namespace_procedures", tenant_admin, default)
    assert services.version_rollback(version=retired, user=tenant_admin, reason="ok now").status == Status.ACTIVE
