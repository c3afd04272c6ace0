"""Single sign-on without a provider: the mapping rules (parsed at start, bad ones named), the
rights they give and take away at each sign-in (audited), local passwords switched off, the sign-in
page and the operations page (library admins; reviewers 403, others 404). The flow against a real
OpenID Connect provider: tests/e2e/test_sso_provider.py."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from library.models import Agent, AuditEvent, Namespace
from library.permissions import user_can_approve, user_is_reviewer
from reviews.sso import SSO_ACTOR, parse_sso_rules, sso_rights_sync

pytestmark = pytest.mark.django_db

RULES = "procmem-reviewers -> group:reviewers; payments -> namespace:payments:review\nrefund-leads -> agent:support_agent:approve"


def test_rules_are_parsed_in_order():
    rules = parse_sso_rules(RULES)
    assert [r.grant for r in rules] == ["group:reviewers", "namespace:payments:review", "agent:support_agent:approve"]
    assert [r.claim_value for r in rules] == ["procmem-reviewers", "payments", "refund-leads"]
    # a claim value may itself hold '=' and ':' (an LDAP DN): the last '->' splits
    assert parse_sso_rules("cn=ops,ou=groups -> group:reviewers")[0].claim_value == "cn=ops,ou=groups"


@pytest.mark.parametrize(
    "text, names",
    [
        ("procmem-reviewers group:reviewers", "rule 1"),
        ("a -> group:reviewers; b -> namespace:payments:own", "rule 2"),
        ("a -> agent:support_agent:review", "agent:<name>:approve|manage"),
        (" -> group:reviewers", "claim value"),
    ],
)
def test_a_bad_rule_stops_the_start_naming_the_variable_and_the_rule(text, names):
    with pytest.raises(ImproperlyConfigured) as refused:
        parse_sso_rules(text)
    assert "PROCMEM_OIDC_RULES" in str(refused.value) and names in str(refused.value)


@pytest.fixture
def sso_rules(settings):
    settings.PROCMEM_OIDC_RULES_TEXT = RULES
    settings.PROCMEM_OIDC_GROUPS_CLAIM = "groups"


def test_claims_give_and_take_the_rights_the_rules_name(sso_rules, agent, reviewers_group):
    # given: a user the provider puts in all three groups
    Namespace.objects.create(name="payments")
    user = get_user_model().objects.create_user("sso-user")
    # when
    granted = sso_rights_sync(
        user=user, claims={"sub": "1", "groups": ["procmem-reviewers", "payments", "refund-leads", "other"]}
    )
    # then
    user = get_user_model().objects.get(pk=user.pk)
    assert len(granted) == 3 and all(change.startswith("granted") for change in granted)
    assert user_is_reviewer(user)
    assert user.has_perm("library.review_namespace_procedures", Namespace.objects.get(name="payments"))
    assert user.has_perm("library.approve_agent_procedures", agent)
    events = AuditEvent.objects.filter(actor_label=SSO_ACTOR, action=AuditEvent.Action.GRANT)
    assert events.count() == 3
    assert {e.reason for e in events} >= {"groups claim has 'procmem-reviewers'"}
    assert all(e.after["user"] == "sso-user" and not e.before for e in events)  # a grant records the right it gave
    # when: the next sign-in has only one of them; a second sync with the same claims changes nothing
    revoked = sso_rights_sync(user=user, claims={"sub": "1", "groups": "payments"})
    assert sso_rights_sync(user=user, claims={"sub": "1", "groups": "payments"}) == []
    # then
    user = get_user_model().objects.get(pk=user.pk)
    assert len(revoked) == 2 and not user_is_reviewer(user)
    assert not user.has_perm("library.approve_agent_procedures", Agent.objects.get(pk=agent.pk))
    assert user.has_perm("library.review_namespace_procedures", Namespace.objects.get(name="payments"))
    revocations = AuditEvent.objects.filter(actor_label=SSO_ACTOR, action=AuditEvent.Action.REVOKE)
    assert revocations.count() == 2
    assert all(e.before["user"] == "sso-user" and not e.after for e in revocations)  # a revocation the right it took
    assert {e.reason for e in revocations} >= {"groups claim no longer has 'procmem-reviewers'"}


def test_rights_no_rule_names_are_left_alone(sso_rules, agent, candidate):
    from guardian.shortcuts import assign_perm

    user = get_user_model().objects.create_user("manual")
    assign_perm("library.approve_procedure", user, candidate.procedure)  # granted on the approver-rights page
    sso_rights_sync(user=user, claims={"sub": "2", "groups": []})
    assert user_can_approve(get_user_model().objects.get(pk=user.pk), candidate.procedure)


def test_a_rule_naming_what_does_not_exist_is_skipped(sso_rules, reviewers_group):
    user = get_user_model().objects.create_user("nobody-yet")
    changes = sso_rights_sync(user=user, claims={"sub": "3", "groups": ["payments", "procmem-reviewers"]})
    assert changes == ["granted: member of the group reviewers (groups claim has 'procmem-reviewers')"]


# ------------------------------------------------------------------------------------------ the pages


def test_the_sign_in_page_offers_the_provider_when_configured(client, settings):
    assert "Sign in with" not in client.get(reverse("login")).content.decode()
    assert client.get("/oidc/authenticate/").status_code == 404  # not configured: no such page
    settings.PROCMEM_SSO_ENABLED = True
    settings.PROCMEM_OIDC_PROVIDER_NAME = "Okta"
    page = client.get(reverse("login")).content.decode()
    assert "Sign in with Okta" in page and 'id="id_password"' in page


def test_without_local_passwords_a_password_signs_nobody_in(client, settings, reviewer):
    settings.PROCMEM_SSO_ENABLED = True
    settings.PROCMEM_LOCAL_PASSWORDS = False
    settings.AUTHENTICATION_BACKENDS = [
        "axes.backends.AxesStandaloneBackend",
        "reviews.sso.PermissionsOnlyBackend",
        "guardian.backends.ObjectPermissionBackend",
    ]
    page = client.get(reverse("login")).content.decode()
    assert 'id="id_password"' not in page and "Passwords are switched off" in page
    response = client.post(reverse("login"), {"username": "reviewer", "password": "pw-reviewer"})
    assert response.status_code == 403
    assert "_auth_user_id" not in client.session
    # nor through Django's admin, whose staff sign in with passwords otherwise
    reviewer.is_staff = True
    reviewer.save(update_fields=["is_staff"])
    client.post("/django-admin/login/", {"username": "reviewer", "password": "pw-reviewer", "next": "/django-admin/"})
    assert "_auth_user_id" not in client.session
    # the permissions of groups still count for a user signed in another way
    assert user_is_reviewer(get_user_model().objects.get(pk=reviewer.pk))


@pytest.mark.parametrize("who, expected", [("admin", 200), ("reviewer", 403), ("outsider", 404)])
def test_the_operations_page_shows_the_rules_to_library_admins(
    client, sso_rules, admin_user, reviewer, outsider, who, expected
):
    client.force_login({"admin": admin_user, "reviewer": reviewer, "outsider": outsider}[who])
    response = client.get(reverse("reviews:ops_sso"))
    assert response.status_code == expected
    if expected == 200:
        page = response.content.decode()
        assert "procmem-reviewers" in page and "member of the group reviewers" in page
        assert "the namespace payments does not exist" in page
