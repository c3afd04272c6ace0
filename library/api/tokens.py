"""Agent API tokens: bearer tokens scoped to one agent and one capability (read the active set, or
write sessions). Only a sha256 of the token is stored; the raw token is shown once at creation.

`token_required(scope)` is the decorator every agent endpoint uses: it authenticates the bearer
token, checks its scope and agent, and sets `request.agent` and `request.api_token`.
"""

from __future__ import annotations

import functools
import secrets
import threading
import time
from typing import Callable

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone

from ..models import Agent, ApiToken, AuditEvent
from ..permissions import user_can_manage_agent

TOKEN_PREFIX = "pm_"


def api_error(status: int, code: str, message: str, **extra) -> JsonResponse:
    """The one error shape of the agent API: {"error": {"code", "message", ...}}."""
    return JsonResponse({"error": {"code": code, "message": message, **extra}}, status=status)


def token_create(*, agent: Agent, scope: str, name: str, user=None, actor_label: str = "") -> tuple[ApiToken, str]:
    """Creates a token and returns it with the raw secret (shown once, never stored)."""
    from ..services import audit

    if scope not in ApiToken.Scope.values:
        raise ValueError(f"unknown token scope {scope!r}; use one of {', '.join(ApiToken.Scope.values)}")
    if user is not None and not user_can_manage_agent(user, agent):
        raise PermissionDenied(f"You may not create tokens for {agent.name}.")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ApiToken.objects.create(
            agent=agent, scope=scope, name=name or scope, prefix=raw[:10], token_hash=ApiToken.hash(raw),
            created_by=user if user is not None and user.is_authenticated else None,
        )
        audit(
            action=AuditEvent.Action.TOKEN_CREATE, actor=user, actor_label=actor_label, agent=agent,
            after={"token": token.prefix, "scope": scope, "name": token.name},
        )
    return token, raw


def token_revoke(*, token: ApiToken, user=None, actor_label: str = "") -> ApiToken:
    from ..services import audit

    if user is not None and not user_can_manage_agent(user, token.agent):
        raise PermissionDenied(f"You may not revoke tokens of {token.agent.name}.")
    with transaction.atomic():
        locked = ApiToken.objects.select_for_update().get(pk=token.pk)
        if locked.revoked_at is None:
            locked.revoked_at = timezone.now()
            locked.save(update_fields=["revoked_at"])
            audit(
                action=AuditEvent.Action.TOKEN_REVOKE, actor=user, actor_label=actor_label, agent=locked.agent,
                before={"token": locked.prefix, "scope": locked.scope},
            )
    return locked


_recent: dict[str, tuple[ApiToken, float]] = {}  # token hash → (token, time.monotonic() it was read)
_recent_lock = threading.Lock()


def authenticate(raw: str, *, using: str = "default", cache_seconds: float = 0.0) -> ApiToken | None:
    """The live token for `raw`, or None. With `cache_seconds`, a token read that recently is
    reused without a query (a revocation in another process takes effect within that bound; in
    this process at once, see `_forget_tokens`). Unknown tokens are never cached."""
    if not raw or not raw.startswith(TOKEN_PREFIX):
        return None
    token_hash = ApiToken.hash(raw)
    if cache_seconds > 0:
        with _recent_lock:
            hit = _recent.get(token_hash)
        if hit is not None and time.monotonic() - hit[1] < cache_seconds:
            return hit[0]
    read_at = time.monotonic()
    token = (
        ApiToken.objects.using(using)
        .select_related("agent")
        .filter(token_hash=token_hash, revoked_at__isnull=True)
        .first()
    )
    if cache_seconds > 0:
        with _recent_lock:
            if token is None:
                _recent.pop(token_hash, None)
            else:
                if len(_recent) > 10_000:
                    _recent.clear()
                _recent[token_hash] = (token, read_at)
    return token


@receiver(post_save, sender=ApiToken)
def _forget_tokens(sender, instance: ApiToken, **kwargs) -> None:
    with _recent_lock:
        _recent.pop(instance.token_hash, None)


def token_required(scope: str, *, using: str = "default", cache_seconds: Callable[[], float] | None = None) -> Callable:
    """Authenticates `Authorization: Bearer <token>` for `scope` and the agent named in the URL
    (`agent` keyword argument, when the URL has one). 401 without a valid token, 403 for a token of
    the wrong scope or of another agent. `cache_seconds` (a callable, read per request) lets the
    read endpoints reuse a recently read token (see `authenticate`)."""

    def decorator(view: Callable) -> Callable:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs):
            header = request.headers.get("Authorization", "")
            kind, _, raw = header.partition(" ")
            if kind.lower() != "bearer" or not raw.strip():
                response = api_error(401, "unauthorized", "Send Authorization: Bearer <token>.")
                response["WWW-Authenticate"] = 'Bearer realm="procmem"'
                return response
            token = authenticate(raw.strip(), using=using, cache_seconds=cache_seconds() if cache_seconds else 0.0)
            if token is None:
                response = api_error(401, "unauthorized", "The token is unknown or revoked.")
                response["WWW-Authenticate"] = 'Bearer realm="procmem", error="invalid_token"'
                return response
            if token.scope != scope:
                return api_error(403, "wrong_scope", f"This token may {token.get_scope_display().lower()}, not this.")
            agent_name = kwargs.get("agent")
            if agent_name is not None and agent_name != token.agent.name:
                return api_error(403, "wrong_agent", f"This token belongs to agent {token.agent.name!r}.")
            request.agent = token.agent
            request.api_token = token
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def get_agent_or_404(name: str) -> Agent:
    return get_object_or_404(Agent, name=name)
