"""Operations pages: the active set as the agent sees it, retire and roll back with their
permission matrix, approver rights (grant/revoke matrix, named approvers)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from guardian.shortcuts import assign_perm

from library import services
from library.models import AuditEvent, Status
from tests.reviews.operations_helpers import activate, agent_manager, make_user, procedure_manager, revise_and_activate

pytestmark = pytest.mark.django_db


@pytest.fixture
def active(candidate, approver):
    return activate(candidate, approver)


@pytest.fixture
def rolled_pair(active, reviewer, approver):
    """v1 RETIRED, v2 ACTIVE."""
    v2 = revise_and_activate(active, reviewer, approver, step="Log the refund request with replyTemplates('logged').")
    active.refresh_from_db()
    return active, v2


def _login(client, user):
    client.force_login(user)
    return client


# ---------------------------------------------------------------------------------------------- active set


def test_active_set_page_lists_served_and_refused_with_the_missing_tool(
    client, admin_user, agent, active, other_procedure, approver, other_approver
):
    # given: order.status active, then the agent loses createApproval which refund.over_limit needs
    activate(other_procedure.versions.get(), other_approver)
    services.agent_set_tools(
        agent=agent, tools=["lookupOrder", "checkReturnWindow", "replyTemplates"], user=admin_user, reason="test"
    )
    # when
    response = _login(client, admin_user).get(reverse("reviews:ops_agent", args=[agent.name]))
    # then
    assert response.status_code == 200
    served_keys = [v.procedure.key for v in response.context["served"]]
    refused = [(v.procedure.key, missing) for v, missing, _ in response.context["refused"]]
    assert served_keys == ["order.status"]
    assert refused == [("refund.over_limit", ["createApproval"])]
    assert "The agent no longer has createApproval." in response.content.decode()


def test_active_set_page_is_hidden_from_an_outsider_and_needs_login(client, outsider, agent):
    url = reverse("reviews:ops_agent", args=[agent.name])
    assert client.get(url).status_code == 302
    assert _login(client, outsider).get(url).status_code == 404


def test_agent_page_shows_manage_rights_from_prefetched_object_permissions(
    client, agent, active, other_procedure, django_assert_max_num_queries
):
    manager = procedure_manager(active.procedure)
    _login(client, manager)
    # the manager holds a per-procedure right only; the page is still visible to them. The budget
    # includes one query each for open conflicts, demotion proposals, versions due for re-review
    # and the scan right, and two each (the user's and the groups') for the rights held on the
    # agent and on the procedures' namespaces (the rulebook's manage_checker: a namespace's manage
    # right counts); none grows with the number of procedures.
    with django_assert_max_num_queries(28):
        response = client.get(reverse("reviews:ops_agent", args=[agent.name]))
    rights = {row["procedure"].key: row["can_manage"] for row in response.context["rows"]}
    assert rights == {"order.status": False, "refund.over_limit": True}


# ---------------------------------------------------------------------------------------------- retire


def test_retire_permission_matrix(client, agent, active, reviewer, outsider, admin_user):
    url = reverse("reviews:ops_retire", args=[active.pk])
    # anonymous → login
    response = client.post(url, {"reason": "x"})
    assert response.status_code == 302 and reverse("login") in response["Location"]
    # outsider cannot see the agent's operations → 404; a version that does not exist → 404
    assert _login(client, outsider).post(url, {"reason": "x"}).status_code == 404
    assert (
        _login(client, admin_user).post(reverse("reviews:ops_retire", args=[999999]), {"reason": "x"}).status_code
        == 404
    )
    # a reviewer sees it but may not retire → 403, on the confirmation page too
    _login(client, reviewer)
    assert client.get(url).status_code == 403
    assert client.post(url, {"reason": "x"}).status_code == 403
    # an approver of the procedure may approve, not retire
    active.refresh_from_db()
    assert active.status == Status.ACTIVE
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.RETIRE).exists()
    # the procedure's manager retires it, and it is audited with the reason
    manager = procedure_manager(active.procedure)
    _login(client, manager)
    assert client.get(url).status_code == 200
    response = client.post(url, {"reason": "promised refund dates"})
    assert response.status_code == 302
    active.refresh_from_db()
    assert active.status == Status.RETIRED
    event = AuditEvent.objects.get(action=AuditEvent.Action.RETIRE, version=active)
    assert (event.actor, event.reason, event.before["status"], event.after["status"]) == (
        manager,
        "promised refund dates",
        "ACTIVE",
        "RETIRED",
    )


def test_approver_without_manage_right_gets_403_on_retire(client, active, approver):
    assert (
        _login(client, approver).post(reverse("reviews:ops_retire", args=[active.pk]), {"reason": "x"}).status_code
        == 403
    )


def test_retire_needs_a_reason_and_changes_nothing_without_one(client, active, agent):
    manager = agent_manager(agent)
    response = _login(client, manager).post(reverse("reviews:ops_retire", args=[active.pk]), {"reason": "   "})
    assert response.status_code == 400
    assert "needs a reason" in response.content.decode()
    active.refresh_from_db()
    assert active.status == Status.ACTIVE


def test_retire_of_a_version_that_is_no_longer_active_is_a_conflict(client, admin_user, rolled_pair):
    v1, _v2 = rolled_pair
    response = _login(client, admin_user).post(reverse("reviews:ops_retire", args=[v1.pk]), {"reason": "stale form"})
    assert response.status_code == 409
    assert "Only the active version can be retired" in response.content.decode()


def test_agent_wide_manager_and_superuser_may_retire(
    client, agent, active, admin_user, other_procedure, other_approver
):
    manager = agent_manager(agent)
    _login(client, manager).post(reverse("reviews:ops_retire", args=[active.pk]), {"reason": "agent-wide"})
    active.refresh_from_db()
    assert active.status == Status.RETIRED
    order = activate(other_procedure.versions.get(), other_approver)
    _login(client, admin_user).post(reverse("reviews:ops_retire", args=[order.pk]), {"reason": "superuser"})
    order.refresh_from_db()
    assert order.status == Status.RETIRED


# ---------------------------------------------------------------------------------------------- roll back


def test_rollback_permission_matrix(client, rolled_pair, reviewer, outsider, approver):
    v1, v2 = rolled_pair
    url = reverse("reviews:ops_rollback", args=[v1.pk])
    assert client.post(url, {"reason": "x"}).status_code == 302
    assert _login(client, outsider).post(url, {"reason": "x"}).status_code == 404
    assert _login(client, reviewer).post(url, {"reason": "x"}).status_code == 403
    assert _login(client, approver).post(url, {"reason": "x"}).status_code == 403
    v1.refresh_from_db()
    assert v1.status == Status.RETIRED
    manager = procedure_manager(v1.procedure)
    _login(client, manager)
    page = client.get(url)
    assert page.status_code == 200 and page.context["current"] == v2
    response = client.post(url, {"reason": "v2 lowered the resolution rate"})
    assert response.status_code == 302
    v1.refresh_from_db()
    v2.refresh_from_db()
    assert (v1.status, v2.status) == (Status.ACTIVE, Status.RETIRED)
    rollback = AuditEvent.objects.get(action=AuditEvent.Action.ROLLBACK)
    auto = AuditEvent.objects.filter(action=AuditEvent.Action.AUTO_RETIRE, version=v2).latest("id")
    assert (rollback.actor, rollback.version, rollback.reason) == (manager, v1, "v2 lowered the resolution rate")
    assert auto.actor == manager and "Rolled back to v1" in auto.reason


def test_rollback_confirmation_warns_when_the_version_misses_a_current_tool(client, admin_user, agent, rolled_pair):
    v1, _v2 = rolled_pair
    services.agent_set_tools(
        agent=agent, tools=["lookupOrder", "checkReturnWindow", "replyTemplates"], user=admin_user, reason="test"
    )
    _login(client, admin_user)
    page = client.get(reverse("reviews:ops_rollback", args=[v1.pk]))
    assert page.context["missing_tools"] == ["createApproval"]
    assert "refused at load" in page.content.decode()
    # the roll-back still happens; the agent's view of the set then refuses the version
    client.post(reverse("reviews:ops_rollback", args=[v1.pk]), {"reason": "back to v1"})
    active_set = client.get(reverse("reviews:ops_agent", args=[agent.name]))
    assert [(v.number, missing) for v, missing, _ in active_set.context["refused"]] == [(1, ["createApproval"])]
    assert active_set.context["served"] == []


def test_rollback_to_a_candidate_is_refused(client, admin_user, candidate):
    response = _login(client, admin_user).post(reverse("reviews:ops_rollback", args=[candidate.pk]), {"reason": "x"})
    assert response.status_code == 409
    candidate.refresh_from_db()
    assert candidate.status == Status.CANDIDATE


def test_procedure_page_offers_retire_and_rollback_only_to_managers(client, rolled_pair, reviewer, admin_user, agent):
    v1, v2 = rolled_pair
    url = reverse("reviews:ops_procedure", args=[agent.name, v1.procedure.key])
    reviewer_page = _login(client, reviewer).get(url).content.decode()
    assert reverse("reviews:ops_retire", args=[v2.pk]) not in reviewer_page
    admin_page = _login(client, admin_user).get(url).content.decode()
    assert reverse("reviews:ops_retire", args=[v2.pk]) in admin_page
    assert reverse("reviews:ops_rollback", args=[v1.pk]) in admin_page


# ---------------------------------------------------------------------------------------------- approver rights


def _grant(client, agent, **data):
    return client.post(reverse("reviews:ops_grant", args=[agent.name]), data)


def _revoke(client, agent, **data):
    return client.post(reverse("reviews:ops_revoke", args=[agent.name]), data)


def test_grant_permission_matrix(client, agent, candidate, reviewer, outsider, approver):
    grantee = make_user("newcomer")
    data = {"scope": candidate.procedure.key, "grantee_kind": "user", "grantee": "newcomer"}
    assert _grant(client, agent, **data).status_code == 302 and not grantee.has_perm(
        "library.approve_procedure", candidate.procedure
    )
    assert _login(client, outsider).post(reverse("reviews:ops_grant", args=[agent.name]), data).status_code == 404
    assert _login(client, reviewer).post(reverse("reviews:ops_grant", args=[agent.name]), data).status_code == 403
    # holding approve rights, or manage rights on procedures, does not let one hand out approve rights
    assert _login(client, approver).post(reverse("reviews:ops_grant", args=[agent.name]), data).status_code == 403
    assert (
        _login(client, procedure_manager(candidate.procedure))
        .post(reverse("reviews:ops_grant", args=[agent.name]), data)
        .status_code
        == 403
    )
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.GRANT).exists()
    manager = make_user("owner")
    assign_perm("library.manage_agent", manager, agent)
    response = _login(client, manager).post(
        reverse("reviews:ops_grant", args=[agent.name]), {**data, "reason": "new team lead"}
    )
    assert response.status_code == 302
    grantee = type(grantee).objects.get(pk=grantee.pk)  # fresh permission cache
    assert grantee.has_perm("library.approve_procedure", candidate.procedure)
    event = AuditEvent.objects.get(action=AuditEvent.Action.GRANT)
    assert (event.actor, event.procedure, event.reason) == (manager, candidate.procedure, "new team lead")
    assert event.after == {"permission": "approve_procedure", "on": "procedure refund.over_limit", "user": "newcomer"}


def test_revoke_permission_matrix(client, agent, candidate, approver, reviewer, outsider, admin_user):
    data = {"scope": candidate.procedure.key, "grantee_kind": "user", "grantee": "approver"}
    assert _revoke(client, agent, **data).status_code == 302
    assert _login(client, outsider).post(reverse("reviews:ops_revoke", args=[agent.name]), data).status_code == 404
    assert _login(client, reviewer).post(reverse("reviews:ops_revoke", args=[agent.name]), data).status_code == 403
    assert _login(client, approver).post(reverse("reviews:ops_revoke", args=[agent.name]), data).status_code == 403
    assert type(approver).objects.get(pk=approver.pk).has_perm("library.approve_procedure", candidate.procedure)
    response = _login(client, admin_user).post(reverse("reviews:ops_revoke", args=[agent.name]), data)
    assert response.status_code == 302
    assert not type(approver).objects.get(pk=approver.pk).has_perm("library.approve_procedure", candidate.procedure)
    event = AuditEvent.objects.get(action=AuditEvent.Action.REVOKE)
    assert event.actor == admin_user and event.before["user"] == "approver"


def test_grant_and_revoke_to_a_group_for_the_whole_agent(client, agent, candidate, admin_user):
    group = Group.objects.create(name="refund-leads")
    member = make_user("lead", group=group)
    _login(client, admin_user)
    _grant(client, agent, scope="agent", grantee_kind="group", grantee="refund-leads")
    assert type(member).objects.get(pk=member.pk).has_perm("library.approve_agent_procedures", agent)
    page = client.get(reverse("reviews:ops_approvers", args=[agent.name]))
    agent_wide = {a.user.get_username(): a.via for a in page.context["agent_approvers"]}
    assert agent_wide["lead"] == ["group refund-leads"]
    assert agent_wide["admin"] == ["superuser"]
    _revoke(client, agent, scope="agent", grantee_kind="group", grantee="refund-leads")
    assert not type(member).objects.get(pk=member.pk).has_perm("library.approve_agent_procedures", agent)
    actions = list(
        AuditEvent.objects.filter(agent=agent, action__in=["grant", "revoke"])
        .order_by("id")
        .values_list("action", "after", "before")
    )
    assert actions == [
        ("grant", {"permission": "approve_agent_procedures", "on": "agent support_agent", "group": "refund-leads"}, {}),
        (
            "revoke",
            {},
            {"permission": "approve_agent_procedures", "on": "agent support_agent", "group": "refund-leads"},
        ),
    ]


def test_granting_a_held_right_or_to_an_unknown_user_is_refused_without_audit(
    client, agent, candidate, approver, admin_user
):
    _login(client, admin_user)
    response = _grant(client, agent, scope=candidate.procedure.key, grantee_kind="user", grantee="approver")
    assert response.status_code == 302
    response = client.get(response["Location"])
    assert "already holds this right" in response.content.decode()
    response = client.get(_grant(client, agent, scope="agent", grantee_kind="user", grantee="nobody")["Location"])
    assert "no user named" in response.content.decode()
    response = client.get(_grant(client, agent, scope="no.such", grantee_kind="user", grantee="approver")["Location"])
    assert "has no procedure" in response.content.decode()
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.GRANT).exists()


def test_approvers_page_names_who_approved_each_active_version(
    client, agent, active, approver, reviewer, django_assert_max_num_queries
):
    _login(client, reviewer)
    with django_assert_max_num_queries(20):
        page = client.get(reverse("reviews:ops_approvers", args=[agent.name]))
    assert page.status_code == 200
    assert [(v.procedure.key, v.approved_by) for v in page.context["approvals"]] == [("refund.over_limit", approver)]
    per_procedure = {
        p.key: [a.user.get_username() for a in approvers] for p, approvers in page.context["procedure_approvers"]
    }
    assert per_procedure == {"refund.over_limit": ["approver"]}
    assert page.context["can_manage"] is False
    assert reverse("reviews:ops_grant", args=[agent.name]) not in page.content.decode()


def test_a_stale_retire_or_rollback_link_says_why_and_offers_no_button(client, admin_user, rolled_pair):
    v1, v2 = rolled_pair
    _login(client, admin_user)
    retire_v1 = client.get(reverse("reviews:ops_retire", args=[v1.pk]))
    assert "v1 is retired; only the active version can be retired." in retire_v1.content.decode()
    assert '<form method="post">' not in retire_v1.content.decode()
    rollback_v2 = client.get(reverse("reviews:ops_rollback", args=[v2.pk])).content.decode()
    assert "v2 is active; only a retired version can be rolled back to." in rollback_v2


def test_granting_without_choosing_a_scope_is_refused(client, admin_user, agent):
    make_user("someone")
    _login(client, admin_user)
    response = client.get(_grant(client, agent, scope="", grantee_kind="user", grantee="someone")["Location"])
    assert "choose the whole agent or one procedure" in response.content.decode()
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.GRANT).exists()


def test_index_counts_active_and_refused_versions_per_agent(client, admin_user, agent, active, outsider):
    services.agent_set_tools(agent=agent, tools=["lookupOrder"], user=admin_user, reason="test")
    page = _login(client, admin_user).get(reverse("reviews:ops_index"))
    (row,) = page.context["agents"]
    assert (row.active, row.refused_count, row.candidates) == (1, 1, 0)
    assert _login(client, outsider).get(reverse("reviews:ops_index")).status_code == 404


def test_a_per_procedure_manager_sees_the_agent_with_true_counts(
    client, agent, active, other_procedure, other_approver
):
    activate(other_procedure.versions.get(), other_approver)
    manager = procedure_manager(active.procedure)
    page = _login(client, manager).get(reverse("reviews:ops_index"))
    (row,) = page.context["agents"]
    assert (row.name, row.active) == ("support_agent", 2)  # both ACTIVE versions, not only the managed one


def test_a_version_never_approved_nor_moved_says_so_in_words(client, candidate, admin_user, agent):
    """The versions table read "—" under Approved and Last status change for a candidate; as the
    metrics pages do, the page says what is missing."""
    url = reverse("reviews:ops_procedure", args=[agent.name, candidate.procedure.key])
    page = _login(client, admin_user).get(url).content.decode()
    row = page[page.index(f'<tr id="v{candidate.number}">') :]
    row = row[: row.index("</tr>")]
    assert "—" not in row
    assert '<span class="muted none">not approved</span>' in row
    assert '<span class="muted none">none since it was proposed</span>' in row


def test_the_agent_page_offers_only_what_applies_to_each_procedure(
    client, rolled_pair, other_procedure, admin_user, agent
):
    """ "You may: retire, roll back" stood beside a procedure whose only version is a candidate,
    which has nothing to retire nor to roll back to; each row names what applies to it now."""
    # given: rolled_pair's procedure has an ACTIVE and a RETIRED version; other_procedure only a candidate
    page = _login(client, admin_user).get(reverse("reviews:ops_agent", args=[agent.name])).content.decode()

    def you_may(key: str) -> str:
        row = page[page.index(f">{key}</a></td>") :]
        return row[: row.index("</tr>")].rsplit("<td>", 1)[1]

    assert you_may(rolled_pair[0].procedure.key).startswith("retire, roll back")
    assert other_procedure.versions.get().status == "CANDIDATE"
    assert you_may(other_procedure.key).startswith('<span class="muted none">nothing to retire or roll back yet')
