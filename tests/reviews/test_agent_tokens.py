"""The API-token page of an agent: its admins create a token (shown once), list and revoke them;
nobody else may."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from library.api.tokens import authenticate
from library.models import ApiToken, AuditEvent

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_agent_admin_creates_sees_it_once_lists_and_revokes(agent, admin_user):
    client = _client(admin_user)
    url = reverse("reviews:agent_tokens", args=[agent.name])
    response = client.post(url, {"action": "create", "name": "prod reader", "scope": "read", "expires_in_days": "30"})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    raw = re.search(r'data-testid="raw-token">(pm_[^<]+)<', response.content.decode()).group(1)
    # the scope by the name the page's introduction and the API use ("read"), then what it may do
    assert "New <em>read</em> token “prod reader”" in response.content.decode()
    assert "It may read the active set." in response.content.decode()
    token = authenticate(raw)
    assert token is not None and token.name == "prod reader" and token.expires_at is not None
    # shown once: the list shows the prefix only
    page = client.get(url).content.decode()
    assert raw not in page and token.prefix in page and "live" in page
    assert '<em>read</em> <span class="muted small">(read the active set)</span>' in page
    response = client.post(url, {"action": "revoke", "token": str(token.pk)})
    assert response.status_code == 302
    assert authenticate(raw) is None
    assert "revoked" in client.get(url).content.decode()
    assert AuditEvent.objects.filter(agent=agent, action=AuditEvent.Action.TOKEN_REVOKE, actor=admin_user).exists()


def test_bad_input_is_refused_without_a_token(agent, admin_user):
    client = _client(admin_user)
    url = reverse("reviews:agent_tokens", args=[agent.name])
    assert client.post(url, {"action": "create", "name": "", "scope": "write"}).status_code == 400
    assert (
        client.post(url, {"action": "create", "name": "x", "scope": "read", "expires_in_days": "0"}).status_code == 400
    )
    assert client.post(url, {"action": "revoke", "token": "99999999999999999999999"}).status_code == 404
    assert client.post(url, {"action": "dance"}).status_code == 400
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize("who, status", [("reviewer", 403), ("outsider", 404)])
def test_only_agent_admins_may_use_the_page(request, agent, admin_user, who, status):
    from library.api.tokens import token_create

    token, raw = token_create(agent=agent, scope="read", name="kept")
    client = _client(request.getfixturevalue(who))
    url = reverse("reviews:agent_tokens", args=[agent.name])
    assert client.get(url).status_code == status
    assert client.post(url, {"action": "create", "name": "x", "scope": "read"}).status_code == status
    assert client.post(url, {"action": "revoke", "token": str(token.pk)}).status_code == status
    assert authenticate(raw) is not None and ApiToken.objects.count() == 1


def test_the_page_says_where_a_read_token_reads(agent, admin_user):
    """An integrator lands on this page first: it named the active set only in passing and not the
    Agent Skills index nor `procmem skills sync` (they were in docs/api.md only)."""
    page = _client(admin_user).get(reverse("reviews:agent_tokens", args=[agent.name])).content.decode()
    uses = page[page.index('id="token-uses"') :]
    uses = uses[: uses.index("</p>")]
    assert "http://testserver/api/v1/agents/support_agent/procedures" in uses
    assert "http://testserver/.well-known/agent-skills/index.json" in uses
    assert "procmem skills sync .claude/skills --url http://testserver --agent support_agent" in uses
