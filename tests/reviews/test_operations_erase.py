"""Erasing a version from the operations pages: the permission matrix (anonymous → sign in,
outsider → 404, reviewer and approver → 403, the procedure's manager erases), a ground and a reason
are required, and the versions page shows the tombstone instead of the content."""

from __future__ import annotations

import pytest
from django.urls import reverse

from library.models import AuditEvent, Status, VersionTombstone
from tests.reviews.operations_helpers import activate, procedure_manager

pytestmark = pytest.mark.django_db


@pytest.fixture
def active(candidate, approver):
    return activate(candidate, approver)


def test_erase_permission_matrix(client, active, reviewer, approver, outsider, admin_user):
    url = reverse("reviews:ops_erase", args=[active.pk])
    data = {"ground": "personal_data", "reason": "request 7"}
    response = client.post(url, data)
    assert response.status_code == 302 and reverse("login") in response["Location"]
    client.force_login(outsider)
    assert client.post(url, data).status_code == 404
    client.force_login(admin_user)
    assert client.post(reverse("reviews:ops_erase", args=[999999]), data).status_code == 404
    for user in (reviewer, approver):
        client.force_login(user)
        assert client.get(url).status_code == 403
        assert client.post(url, data).status_code == 403
    active.refresh_from_db()
    assert active.status == Status.ACTIVE and not VersionTombstone.objects.exists()
    manager = procedure_manager(active.procedure)
    client.force_login(manager)
    assert client.get(url).status_code == 200
    response = client.post(url, data)
    assert response.status_code == 302
    active.refresh_from_db()
    assert active.status == Status.ERASED
    assert AuditEvent.objects.get(action=AuditEvent.Action.ERASE).actor == manager


def test_erase_needs_a_ground_and_a_reason(client, active, admin_user):
    client.force_login(admin_user)
    url = reverse("reviews:ops_erase", args=[active.pk])
    assert client.post(url, {"ground": "", "reason": "x"}).status_code == 400
    assert client.post(url, {"ground": "poisoned", "reason": " "}).status_code == 400
    active.refresh_from_db()
    assert active.status == Status.ACTIVE


def test_versions_page_shows_the_tombstone_not_the_content(client, active, admin_user):
    client.force_login(admin_user)
    client.post(reverse("reviews:ops_erase", args=[active.pk]), {"ground": "poisoned", "reason": "prompt injection"})
    page = client.get(reverse("reviews:ops_procedure", args=[active.procedure.agent.name, active.procedure.key]))
    body = page.content.decode()
    assert page.status_code == 200
    assert "prompt injection" in body and "Poisoned" in body
    assert "lookupOrder({{order_id}})" not in body
    # the version page and a second erase attempt do not fail
    assert client.get(reverse("reviews:version", args=[active.pk])).status_code == 200
    assert (
        client.post(
            reverse("reviews:ops_erase", args=[active.pk]), {"ground": "poisoned", "reason": "again"}
        ).status_code
        == 409
    )


def test_an_erased_version_cannot_be_edited(active, reviewer, admin_user):
    from library import services

    services.version_erase(version=active, user=admin_user, ground="poisoned", reason="x")
    active.refresh_from_db()
    with pytest.raises(services.LifecycleError, match="erased"):
        services.version_revise(
            version=active, user=reviewer, applies_when="a", steps=["b"], required_tools=[], forbidden_actions=[]
        )
