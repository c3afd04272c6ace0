"""The rulebook (library/permissions.py) is the one place a right is decided: the reading rules
moved there from the models (agents_visible_to, operable_agents), the page-wide manage check
(manage_checker) and the page-wide approve scope (approve_scope, the queue's "may approve") answer
as user_can_manage_procedure and user_can_approve do for every role, the agents a user administers
and the recipients of notifications come from it, no module outside it asks guardian, `has_perm` or
the object-permission tables itself, and the four-eyes rule is decided once, in the approval
service, whose reasons the approve page shows."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from guardian.shortcuts import assign_perm

from library import permissions, services
from library.models import Agent, Namespace, Procedure, ProcedureVersion, Status
from tests.conftest import _user, make_passing_eval
from tests.reviews.conftest import client_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def team_b(admin_user):
    return services.namespace_create(name="team-b", user=admin_user)


@pytest.fixture
def holders(candidate, other_procedure, agent, team_b, reviewer, admin_user):
    """One user per way of managing (or not) the candidate's procedure; order.status lives in team-b."""
    Procedure.objects.filter(pk=other_procedure.pk).update(namespace=team_b)
    default = Namespace.objects.get(name="default")
    people = {
        "procedure": _user("by_procedure"),
        "agent": _user("by_agent"),
        "namespace": _user("by_namespace"),
        "other_namespace": _user("by_other_namespace"),
        "deactivated": _user("deactivated"),
        "reviewer": reviewer,
        "superuser": admin_user,
    }
    assign_perm("library.manage_procedure", people["procedure"], candidate.procedure)
    assign_perm("library.manage_agent_procedures", people["agent"], agent)
    assign_perm("library.manage_namespace_procedures", people["namespace"], default)
    assign_perm("library.manage_namespace_procedures", people["other_namespace"], team_b)
    assign_perm("library.manage_agent_procedures", people["deactivated"], agent)
    people["deactivated"].is_active = False
    people["deactivated"].save()
    return people


def test_the_page_wide_manage_check_answers_as_the_single_rule_for_every_role(holders, agent):
    procedures = list(Procedure.objects.filter(agent=agent).select_related("agent", "namespace"))
    assert len(procedures) == 2
    for name, user in holders.items():
        may_manage = permissions.manage_checker(user, procedures)
        for procedure in procedures:
            assert may_manage(procedure) == permissions.user_can_manage_procedure(user, procedure), (name, procedure)
    # the namespace's right counts (the operations page used to leave it out)
    by_key = {p.key: p for p in procedures}
    assert permissions.manage_checker(holders["namespace"], procedures)(by_key["refund.over_limit"])
    assert not permissions.manage_checker(holders["namespace"], procedures)(by_key["order.status"])
    assert permissions.manage_checker(holders["other_namespace"], procedures)(by_key["order.status"])


def test_the_operations_page_offers_managing_to_a_namespace_manager(holders, agent):
    page = client_for(holders["namespace"]).get(reverse("reviews:ops_agent", args=[agent.name]))
    assert page.status_code == 200
    can = {row["procedure"].key: row["can_manage"] for row in page.context["rows"]}
    assert can == {"refund.over_limit": True, "order.status": False}


def test_agents_managed_by(agent, admin_user, reviewer):
    admin_of_agent = _user("admin_of_agent")
    assign_perm("library.manage_agent", admin_of_agent, agent)
    assert list(permissions.agents_managed_by(admin_of_agent)) == [agent]
    assert list(permissions.agents_managed_by(admin_user)) == [agent]
    assert not permissions.agents_managed_by(reviewer).exists()
    admin_of_agent.is_active = False
    assert not permissions.agents_managed_by(admin_of_agent).exists()


def test_who_reads_what_is_the_rulebooks_not_the_models(agent, outsider, settings):
    # the models hold the tables; the queryset method that decided visibility is gone
    assert not hasattr(Agent.objects, "visible_to")
    assert list(permissions.agents_visible_to(outsider)) == [agent]
    settings.NAMESPACE_READ_ISOLATION = True
    assert not permissions.agents_visible_to(outsider).exists()
    assert not permissions.operable_agents(outsider).exists()


# asking for a right (guardian, Django's permission API) and reading who holds one (the
# object-permission tables guardian writes)
ASKS = {"has_perm", "has_perms", "get_objects_for_user", "ObjectPermissionChecker", "with_perm"}
HOLDER_TABLES = ("UserObjectPermission", "GroupObjectPermission")
# where rights are defined (the models), granted (reviews/rights.py, and the groups an SSO login
# maps to) and shown to admins (library/admin.py): none of them decides who may
GRANTING = {
    "library/models/__init__.py",
    "library/models/agents.py",
    "reviews/rights.py",
    "reviews/sso.py",
    "library/admin.py",
}


def _asks_for_rights(path: Path, relative: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ASKS:
                found.append(f"{relative}:{node.lineno}: {name}")
        elif isinstance(node, ast.Name) and node.id.endswith(HOLDER_TABLES) and relative not in GRANTING:
            found.append(f"{relative}:{node.lineno}: {node.id}")
    return found


def test_no_module_outside_the_rulebook_decides_a_right_itself():
    offences = []
    for top in ("library", "reviews", "procmem_site"):
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = str(path.relative_to(ROOT))
            if relative == "library/permissions.py" or "migrations" in path.parts:
                continue
            offences += _asks_for_rights(path, relative)
    assert offences == [], "\n".join(offences)


# ---------------------------------------------------------------------------------------------- many at once


@pytest.fixture
def people(candidate, other_procedure, agent, team_b, reviewer, proposer, outsider, admin_user):
    """One user per way of holding (or not) a right on the candidate's procedure, refund.over_limit
    (namespace default); order.status lives in team-b."""
    Procedure.objects.filter(pk=other_procedure.pk).update(namespace=team_b)
    default = Namespace.objects.get(name="default")
    approvers_of_agent = Group.objects.create(name="approvers-of-the-agent")
    admins_of_agent = Group.objects.create(name="admins-of-the-agent")
    named = {
        name: _user(name)
        for name in (
            "approves_procedure",
            "approves_other_procedure",
            "approves_agent",
            "approves_through_group",
            "approves_namespace",
            "approves_other_namespace",
            "manages_agent",
            "manages_agent_procedures",
            "manages_procedure",
            "manages_other_procedure",
            "manages_through_group",
            "manages_namespace",
            "deactivated",
        )
    }
    assign_perm("library.approve_procedure", named["approves_procedure"], candidate.procedure)
    assign_perm("library.approve_procedure", named["approves_other_procedure"], other_procedure)
    assign_perm("library.approve_agent_procedures", named["approves_agent"], agent)
    assign_perm("library.approve_agent_procedures", approvers_of_agent, agent)
    named["approves_through_group"].groups.add(approvers_of_agent)
    assign_perm("library.approve_namespace_procedures", named["approves_namespace"], default)
    assign_perm("library.approve_namespace_procedures", named["approves_other_namespace"], team_b)
    assign_perm("library.manage_agent", named["manages_agent"], agent)
    assign_perm("library.manage_agent_procedures", named["manages_agent_procedures"], agent)
    assign_perm("library.manage_procedure", named["manages_procedure"], candidate.procedure)
    assign_perm("library.manage_procedure", named["manages_other_procedure"], other_procedure)
    assign_perm("library.manage_agent", admins_of_agent, agent)
    named["manages_through_group"].groups.add(admins_of_agent)
    assign_perm("library.manage_namespace_procedures", named["manages_namespace"], default)
    for perm in ("library.approve_agent_procedures", "library.manage_agent"):
        assign_perm(perm, named["deactivated"], agent)
    named["deactivated"].is_active = False
    named["deactivated"].save()
    return {**named, "reviewer": reviewer, "proposer": proposer, "outsider": outsider, "superuser": admin_user}


def test_the_approve_scope_answers_as_the_single_rule_for_every_role(people, agent):
    procedures = list(Procedure.objects.filter(agent=agent).select_related("agent", "namespace"))
    assert len(procedures) == 2
    for name, user in people.items():
        scope = permissions.approve_scope(user)
        may = {p.pk for p in procedures if permissions.user_can_approve(user, p)}
        assert {p.pk for p in procedures if scope.covers(p)} == may, name
        versions = ProcedureVersion.objects.filter(procedure__agent=agent).filter(scope.as_q())
        assert set(versions.values_list("procedure_id", flat=True)) == may, name
        assert permissions.holds_any_approve_right(user) == bool(may), name
    # the namespace's right holds in its namespace only; a manager is no approver
    by_key = {p.key: p for p in procedures}
    assert permissions.approve_scope(people["approves_namespace"]).covers(by_key["refund.over_limit"])
    assert not permissions.approve_scope(people["approves_namespace"]).covers(by_key["order.status"])
    assert not permissions.holds_any_approve_right(people["manages_agent"])


def _names(users) -> set[str]:
    return {user.username for user in users}


def test_who_is_told_is_the_rulebooks(people, agent, candidate, settings):
    procedure_id = candidate.procedure_id
    # new candidates, finished eval runs, mentions: the active reviewers (superusers among them)
    assert _names(permissions.active_reviewers()) == {"reviewer", "proposer", "admin"}
    # a refusal at load: the agent's admins and the procedure's managers, not a namespace's
    assert _names(permissions.agent_admins(agent, procedure_id)) == {
        "admin",
        "manages_agent",
        "manages_agent_procedures",
        "manages_procedure",
        "manages_through_group",
    }
    assert "manages_procedure" not in _names(permissions.agent_admins(agent))
    # a metric warning: those admins and the procedure's approvers, not a namespace's
    assert _names(permissions.procedure_approvers(agent, procedure_id)) == {
        "admin",
        "approves_procedure",
        "approves_agent",
        "approves_through_group",
    }
    # and only those who may read about the agent: everyone signed in; with read isolation on, the
    # holders of a right on it, its procedures or its namespaces, and the global reviewers
    assert all(permissions.user_can_read_agent(user, agent) for user in people.values())
    settings.NAMESPACE_READ_ISOLATION = True
    readers = {name for name, user in people.items() if permissions.user_can_read_agent(user, agent)}
    assert readers == set(people) - {"outsider"}


# ---------------------------------------------------------------------------------------------- four eyes


def test_the_four_eyes_rule_is_decided_once_and_the_page_shows_the_services_reason(candidate, proposer):
    # given the proposer also holds the approve right and the eval passed
    assign_perm("library.approve_procedure", proposer, candidate.procedure)
    make_passing_eval(candidate)
    reasons = services.four_eyes_blockers(candidate, proposer)
    assert reasons and all("four-eyes" in r for r in reasons)
    # the service refuses with those reasons
    with pytest.raises(services.LifecycleError) as refused:
        services.version_approve(version=candidate, user=proposer, comment="mine", acknowledge_conflicts=True)
    assert all(r in str(refused.value) for r in reasons)
    # and the page answers 403 with exactly the service's text
    response = client_for(proposer).post(
        reverse("reviews:version_approve", args=[candidate.pk]), {"comment": "mine", "confirm": "on"}
    )
    assert response.status_code == 403
    assert " ".join(reasons) in response.content.decode()
    candidate.refresh_from_db()
    assert candidate.status == Status.CANDIDATE


def test_the_approve_view_does_not_write_the_rule_again():
    source = (ROOT / "reviews" / "views" / "versions.py").read_text()
    assert "proposed_by_id" not in source and "authored_since_active" not in source
