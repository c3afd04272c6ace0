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
from collections.abc import Callable
from datetime import datetime, timedelta

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone

from ..models import Agent, ApiToken, AuditEvent
from ..permissions import user_can_manage_agent
from ..services import audit
from .limits import auth_failure_counted, auth_failures_exceeded, auth_failures_refused, rate_limited

TOKEN_PREFIX = "pm_"


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def api_error(status: int, code: str, message: str, **extra) -> JsonResponse:
    """The one error shape of the agent API: {"error": {"code", "message", ...}}."""
    return JsonResponse({"error": {"code": code, "message": message, **extra}}, status=status)


# last_used_at is written at most this often per token (a conditional UPDATE, so several processes
# do not all write it): cheap enough for every request, precise enough to spot an unused token.
LAST_USED_RESOLUTION = timedelta(minutes=1)
MAX_TOKEN_NAME = 100


def token_create(
    *, agent: Agent, scope: str, name: str, user=None, actor_label: str = "", expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """Creates a token and returns it with the raw secret (shown once, never stored). With
    `expires_at` the token is refused from that moment on."""

    if scope not in ApiToken.Scope.values:
        raise ValidationError(
            {"scope": f"unknown token scope {scope!r}; use one of {', '.join(ApiToken.Scope.values)}"}
        )
    name = " ".join((name or "").split())
    if len(name) > MAX_TOKEN_NAME or "\x00" in name:
        raise ValidationError({"name": f"at most {MAX_TOKEN_NAME} characters, no NUL"})
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError({"expires_at": "must lie in the future"})
    if user is not None and not user_can_manage_agent(user, agent):
        raise PermissionDenied(f"You may not create tokens for {agent.name}.")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ApiToken.objects.create(
            agent=agent,
            scope=scope,
            name=name or scope,
            prefix=raw[:10],
            token_hash=ApiToken.hash(raw),
            created_by=user if user is not None and user.is_authenticated else None,
            expires_at=expires_at,
        )
        audit(
            action=AuditEvent.Action.TOKEN_CREATE,
            actor=user,
            actor_label=actor_label,
            agent=agent,
            after={
                "token": token.prefix,
                "scope": scope,
                "name": token.name,
                "expiresAt": expires_at.isoformat() if expires_at else None,
            },
        )
    return token, raw


def token_touch(token: ApiToken, *, now: datetime | None = None) -> None:
    """Records that `token` was used: at most one UPDATE per LAST_USED_RESOLUTION, and only when
    the stored time is older (so concurrent processes write it once)."""
    now = now or timezone.now()
    if token.last_used_at is not None and now - token.last_used_at < LAST_USED_RESOLUTION:
        return
    ApiToken.objects.using("default").filter(pk=token.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
    ).update(last_used_at=now)
    token.last_used_at = now  # also on the cached instance: this process will not ask again for a minute


def token_is_live(token: ApiToken, *, now: datetime | None = None) -> bool:
    return token.revoked_at is None and (token.expires_at is None or token.expires_at > (now or timezone.now()))


def token_revoke(*, token: ApiToken, user=None, actor_label: str = "") -> ApiToken:
    if user is not None and not user_can_manage_agent(user, token.agent):
        raise PermissionDenied(f"You may not revoke tokens of {token.agent.name}.")
    with transaction.atomic():
        locked = ApiToken.objects.select_for_update().get(pk=token.pk)
        if locked.revoked_at is None:
            locked.revoked_at = timezone.now()
            locked.save(update_fields=["revoked_at"])
            audit(
                action=AuditEvent.Action.TOKEN_REVOKE,
                actor=user,
                actor_label=actor_label,
                agent=locked.agent,
                before={"token": locked.prefix, "scope": locked.scope},
            )
    return locked


_recent: dict[str, tuple[ApiToken, float]] = {}  # token hash → (token, time.monotonic() it was read)
_recent_lock = threading.Lock()


def authenticate(
    raw: str, *, cache_seconds: float = 0.0, cache_scopes: tuple[str, ...] | None = None
) -> ApiToken | None:
    """The live (not revoked, not expired) token for `raw`, or None. With `cache_seconds`, a token
    read that recently is reused without a query (a revocation in another process takes effect
    within that bound; in this process at once, see `_forget_tokens`; expiry at once everywhere).
    Unknown tokens are never cached; with `cache_scopes`, only tokens of those scopes are (an
    endpoint that also takes ingest tokens keeps reading those every time, as the ingest API does).

    The lookup reads through the default connection, also for the read endpoints: the read-only
    role of the agent API is granted no access to token hashes (manage.py create_readonly_role),
    and the same connection records `last_used_at`."""
    if not raw or not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    token_hash = ApiToken.hash(raw)
    now = timezone.now()
    if cache_seconds > 0:
        with _recent_lock:
            hit = _recent.get(token_hash)
        if (
            hit is not None
            and time.monotonic() - hit[1] < cache_seconds
            and (cache_scopes is None or hit[0].scope in cache_scopes)
        ):
            return hit[0] if token_is_live(hit[0], now=now) else None
    read_at = time.monotonic()
    token = (
        ApiToken.objects.using("default")
        .select_related("agent")
        .filter(token_hash=token_hash, revoked_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .first()
    )
    if cache_seconds > 0:
        with _recent_lock:
            if token is None or (cache_scopes is not None and token.scope not in cache_scopes):
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


def token_required(
    scope: str | tuple[str, ...],
    *,
    cache_seconds: Callable[[], float] | None = None,
    cache_scopes: tuple[str, ...] | None = None,
    limit: str | None = None,
) -> Callable:
    """Authenticates `Authorization: Bearer <token>` for `scope` (or any of several) and the agent named in the URL
        (`agent` keyword argument, when the URL has one). 401 without a valid token, 403 for a token of
        the wrong scope or of another agent; 429 for a client address over its failed authentications
    (PROCMEM_RATE_LIMIT_AUTH_FAILURES). `cache_seconds` (a callable, read per request) lets the
        read endpoints reuse a recently read token (see `authenticate`; `cache_scopes`: only tokens of
        these scopes). `limit` names the endpoint's
        class in the agent's rate limits (library/api/limits.py): over it, 429 with Retry-After."""

    scopes = (scope,) if isinstance(scope, str) else scope

    def decorator(view: Callable) -> Callable:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs):
            retry_after = auth_failures_exceeded(request)  # before the lookup: a flood of bad tokens costs none
            if retry_after is not None:
                return auth_failures_refused(retry_after)
            header = request.headers.get("Authorization", "")
            kind, _, raw = header.partition(" ")
            if kind.lower() != "bearer" or not raw.strip():
                return _unauthorized(request, _malformed_authorization(header), 'Bearer realm="procmem"')
            token = authenticate(
                raw.strip(), cache_seconds=cache_seconds() if cache_seconds else 0.0, cache_scopes=cache_scopes
            )
            if token is None:
                return _unauthorized(
                    request,
                    "The token is unknown, revoked or expired.",
                    'Bearer realm="procmem", error="invalid_token"',
                )
            if token.scope not in scopes:
                # say what the token may do and which token this request needs (was: "…, not this.")
                needed = " or ".join(scopes)
                return api_error(
                    403,
                    "wrong_scope",
                    f"This is {_article(token.scope)} {token.scope} token: it may {token.get_scope_display().lower()}. "
                    f"{request.method} {request.path} needs {_article(needed)} {needed} token.",
                )
            agent_name = kwargs.get("agent")
            if agent_name is not None and agent_name != token.agent.name:
                return api_error(
                    403, "wrong_agent", f"This token belongs to agent {token.agent.name!r}, not {agent_name!r}."
                )
            if limit is not None:
                refused = rate_limited(request, token=token, endpoint=limit)
                if refused is not None:
                    return refused
            token_touch(token)
            request.agent = token.agent
            request.api_token = token
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def _malformed_authorization(header: str) -> str:
    """What is wrong with an Authorization header that is not `Bearer <token>`, without echoing a
    secret: the commonest slips are the bare token and another scheme (`Token`, `Basic`)."""
    kind = header.strip().partition(" ")[0]
    if not kind:
        return "Send Authorization: Bearer <token>."
    if kind.startswith(TOKEN_PREFIX):
        return f"Send Authorization: Bearer <token>; the Authorization header holds a {TOKEN_PREFIX}… token without 'Bearer '."
    if kind.lower() == "bearer":
        return "Send Authorization: Bearer <token>; the Authorization header has 'Bearer' but no token after it."
    return f"Send Authorization: Bearer <token>; the Authorization header uses the {kind[:20]!r} scheme."


def _unauthorized(request: HttpRequest, message: str, challenge: str) -> JsonResponse:
    """401, counted against the client address's failed authentications (429 once over them)."""
    retry_after = auth_failure_counted(request)
    if retry_after is not None:
        return auth_failures_refused(retry_after)
    response = api_error(401, "unauthorized", message)
    response["WWW-Authenticate"] = challenge
    return response


def get_agent_or_404(name: str) -> Agent:
    return get_object_or_404(Agent, name=name)
