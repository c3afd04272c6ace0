"""A right is never granted by its own grantee (issue 32 part 3; PROCMEM_NO_SELF_GRANT, on unless
DEBUG): an agent admin who grants themselves the approve right is refused with the reason and can
still not approve; a second admin's grant works and the audit log shows both people."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from guardian.shortcuts import assign_perm

from library.models import AuditEvent, Namespace
from library.permissions import user_can_approve
from reviews.rights import approver_right_grant, namespace_right_grant
from tests.reviews.operations_helpers import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def admins(agent):
    first, second = make_user("first-admin"), make_user("second-admin")
    for admin in (first, second):
        assign_perm("library.manage_agent", admin, agent)
    return first, second


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _grant(client, agent, grantee: str, kind: str = "user"):
    return client.post(
        reverse("reviews:ops_grant", args=[agent.name]),
        {"scope": "agent", "grantee_kind": kind, "grantee": grantee, "reason": "covering the holidays"},
        follow=True,
    )


@pytest.fixture(autouse=True)
def _no_self_grant(settings):
    settings.PROCMEM_NO_SELF_GRANT = True  # production's default, whatever DEBUG this run's environment has


@pytest.mark.slow
def test_the_setting_is_on_in_production_and_off_with_debug():
    from tests.test_settings_env import PRODUCTION, run_manage

    code = "from django.conf import settings; print(settings.PROCMEM_NO_SELF_GRANT)"
    assert run_manage("shell", "-c", code, env=PRODUCTION).stdout.split()[-1] == "True"
    assert run_manage("shell", "-c", code, env={**PRODUCTION, "DEBUG": "1"}).stdout.split()[-1] == "False"
    assert (
        run_manage("shell", "-c", code, env={**PRODUCTION, "DEBUG": "1", "PROCMEM_NO_SELF_GRANT": "1"}).stdout.split()[
            -1
        ]
        == "True"
    )


def test_an_admin_granting_themselves_approver_rights_is_refused_with_the_reason(agent, candidate, admins):
    first, _second = admins
    response = _grant(_client(first), agent, "first-admin")
    assert response.status_code == 200
    assert (
        "A right is never granted by its own grantee: another admin of support_agent must grant it to you"
        in response.content.decode()
    )
    first = type(first).objects.get(pk=first.pk)  # fresh permission cache
    assert not user_can_approve(first, candidate.procedure)
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.GRANT).exists()
    # their approve request is refused by the permission check
    approve = _client(first).post(reverse("reviews:version_approve", args=[candidate.pk]), {"comment": "mine now"})
    assert approve.status_code == 403


def test_a_second_admins_grant_works_and_the_audit_log_shows_both(agent, candidate, admins, admin_user):
    first, second = admins
    response = _grant(_client(second), agent, "first-admin")
    assert "Granted: first-admin may approve every procedure of support_agent." in response.content.decode()
    assert user_can_approve(type(first).objects.get(pk=first.pk), candidate.procedure)
    event = AuditEvent.objects.get(action=AuditEvent.Action.GRANT)
    assert event.actor == second and event.after["user"] == "first-admin" and event.reason == "covering the holidays"
    # the audit log page's row names the admin who granted and the one who received
    page = _client(admin_user).get(reverse("reviews:ops_audit") + "?action=grant").content.decode()
    row = page[page.index("covering the holidays") - 2000 : page.index("covering the holidays") + 2000]
    assert "second-admin" in row and "first-admin" in row


def test_a_grant_to_a_group_one_belongs_to_is_a_grant_to_oneself(agent, admins):
    first, second = admins
    leads = Group.objects.create(name="refund-leads")
    first.groups.add(leads)
    with pytest.raises(ValidationError, match="You belong to group refund-leads"):
        approver_right_grant(agent=agent, grantee=leads, by=first)
    approver_right_grant(agent=agent, grantee=leads, by=second)
    assert AuditEvent.objects.get(action=AuditEvent.Action.GRANT).actor == second


def test_a_library_admin_does_not_grant_themselves_a_namespace_right(admin_user):
    other = make_user("other-admin", is_superuser=True, is_staff=True)
    billing = Namespace.objects.create(name="team-billing")
    with pytest.raises(ValidationError, match="never granted by its own grantee"):
        namespace_right_grant(namespace=billing, grantee=admin_user, right="approve", by=admin_user)
    namespace_right_grant(namespace=billing, grantee=admin_user, right="approve", by=other)
    assert AuditEvent.objects.get(action=AuditEvent.Action.GRANT).actor == other


def test_with_the_setting_off_a_grant_to_oneself_passes(agent, candidate, admins, settings):
    settings.PROCMEM_NO_SELF_GRANT = False
    first, _ = admins
    approver_right_grant(agent=agent, grantee=first, by=first)
    assert user_can_approve(type(first).objects.get(pk=first.pk), candidate.procedure)
