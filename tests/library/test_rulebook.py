"""The rulebook (library/permissions.py) is the one place a right is decided: the reading rules
moved there from the models (agents_visible_to, operable_agents), the page-wide manage check
(manage_checker) answers as user_can_manage_procedure does for every role, the agents a user
administers come from it, no module outside it asks guardian or `has_perm` itself, and the
four-eyes rule is decided once, in the approval service, whose reasons the approve page shows."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.urls import reverse
from guardian.shortcuts import assign_perm

from library import permissions, services
from library.models import Agent, Namespace, Procedure, Status
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


def _asks_for_rights(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in {"has_perm", "has_perms", "get_objects_for_user", "ObjectPermissionChecker"}:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    return found


# Queries that list people or rows by right, kept beside their readers for speed, each saying which
# rule it mirrors: the reviewers to notify, the queue's one-statement approve scope.
MIRRORS = {"reviews/notifications.py", "reviews/selectors.py"}


def test_no_module_outside_the_rulebook_decides_a_right_itself():
    offences = []
    for top in ("library", "reviews", "procmem_site"):
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = str(path.relative_to(ROOT))
            if relative == "library/permissions.py" or "migrations" in path.parts or relative in MIRRORS:
                continue
            offences += _asks_for_rights(path)
    assert offences == [], "\n".join(offences)


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
