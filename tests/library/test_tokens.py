import pytest
from django.core.exceptions import PermissionDenied

from library.api.tokens import authenticate, token_create, token_revoke
from library.models import ApiToken, AuditEvent

pytestmark = pytest.mark.django_db


def test_token_stored_hashed_and_revocable(agent, admin_user):
    token, raw = token_create(agent=agent, scope=ApiToken.Scope.READ, name="prod", user=admin_user)
    assert raw.startswith("pm_") and raw not in token.token_hash and token.token_hash == ApiToken.hash(raw)
    assert authenticate(raw) == token
    token_revoke(token=token, user=admin_user)
    assert authenticate(raw) is None
    actions = set(AuditEvent.objects.filter(agent=agent).values_list("action", flat=True))
    assert {AuditEvent.Action.TOKEN_CREATE, AuditEvent.Action.TOKEN_REVOKE} <= actions


def test_only_agent_managers_create_tokens(agent, reviewer):
    with pytest.raises(PermissionDenied):
        token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="x", user=reviewer)


# ----------------------------------------------------------------------------- expiry, last use, the command

from datetime import timedelta  # noqa: E402

from django.core.exceptions import ValidationError  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.management.base import CommandError  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402
from django.utils import timezone  # noqa: E402


def _fetch(raw: str, agent):
    return Client().get(reverse("api:active_set", args=[agent.name]), headers={"Authorization": f"Bearer {raw}"})


@pytest.mark.django_db(transaction=True, databases=["default", "readonly"])
def test_an_expired_token_is_refused(agent):
    token, raw = token_create(
        agent=agent, scope=ApiToken.Scope.READ, name="short", expires_at=timezone.now() + timedelta(hours=1)
    )
    assert _fetch(raw, agent).status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = _fetch(raw, agent)
    assert response.status_code == 401 and "expired" in response.json()["error"]["message"]
    assert authenticate(raw) is None


def test_a_token_cannot_be_created_already_expired(agent):
    with pytest.raises(ValidationError, match="future"):
        token_create(agent=agent, scope=ApiToken.Scope.READ, name="x", expires_at=timezone.now() - timedelta(days=1))


@pytest.mark.django_db(transaction=True, databases=["default", "readonly"])
def test_last_used_at_is_written_at_most_once_a_minute(agent, django_assert_max_num_queries):
    token, raw = token_create(agent=agent, scope=ApiToken.Scope.READ, name="reader")
    assert token.last_used_at is None
    assert _fetch(raw, agent).status_code == 200
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    assert _fetch(raw, agent).status_code == 200
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first  # within the minute: not written again
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=2))
    assert _fetch(raw, agent).status_code == 200
    assert ApiToken.objects.get(pk=token.pk).last_used_at > first


def test_the_tokens_command_creates_lists_and_revokes(agent, capsys):
    call_command("tokens", "create", agent.name, "--scope", "read", "--name", "ci reader", "--expires-in-days", "30")
    out, err = capsys.readouterr()
    raw = out.strip()
    token = authenticate(raw)
    assert token is not None and token.name == "ci reader"
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)
    assert "shown only this once" in err
    call_command("tokens", "list", agent.name)
    listing = capsys.readouterr().out
    assert token.prefix in listing and "live" in listing and raw not in listing
    call_command("tokens", "revoke", token.prefix)
    assert "Revoked" in capsys.readouterr().out
    assert authenticate(raw) is None
    call_command("tokens", "list")
    assert token.prefix not in capsys.readouterr().out
    call_command("tokens", "list", "--all")
    assert "revoked" in capsys.readouterr().out
    with pytest.raises(CommandError, match="No token matches"):
        call_command("tokens", "revoke", "pm_nothing")
    with pytest.raises(CommandError, match="No agent"):
        call_command("tokens", "create", "nobody", "--scope", "read")


def test_a_recently_read_token_is_reused_only_for_the_scopes_named(agent, admin_user, django_assert_num_queries):
    from library.api import tokens

    read = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read")[1]
    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest")[1]
    reads_only = {"cache_seconds": 60, "cache_scopes": (ApiToken.Scope.READ,)}
    try:
        # given: each read once by an endpoint that reuses read tokens only (the MCP endpoint)
        assert authenticate(read, **reads_only).scope == ApiToken.Scope.READ
        assert authenticate(ingest, **reads_only).scope == ApiToken.Scope.INGEST
        # then: the read token is reused, the ingest token read again
        with django_assert_num_queries(0):
            assert authenticate(read, **reads_only).scope == ApiToken.Scope.READ
        with django_assert_num_queries(1):
            assert authenticate(ingest, **reads_only).scope == ApiToken.Scope.INGEST
        # also when an endpoint that reuses every scope has just read it
        authenticate(ingest, cache_seconds=60)
        with django_assert_num_queries(1):
            assert authenticate(ingest, **reads_only).scope == ApiToken.Scope.INGEST
    finally:
        tokens._recent.clear()
