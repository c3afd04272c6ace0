import pytest
from django.core.exceptions import PermissionDenied

from library.models import ApiToken, AuditEvent
from library.api.tokens import authenticate, token_create, token_revoke

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
