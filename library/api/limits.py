"""Counting the agent API's requests against its rate limits (the rules: library/agents/rate_limits.py).

Counting is the maintained `limits` library's moving window. Its counters live in the storage
PROCMEM_RATE_LIMIT_STORAGE names: Redis when the deployment has it (one count for every process and
machine; keys prefixed with PROCMEM_RATE_LIMIT_KEY_PREFIX), else this process's memory (each gunicorn
worker counts for itself). The client address is REMOTE_ADDR, as the login throttle reads it.

Failed authentication (no token, or one unknown, revoked or expired) is counted per client address
on every agent endpoint against PROCMEM_RATE_LIMIT_AUTH_FAILURES, site-wide: each costs a token
lookup, and no agent's limit can count it because there is no agent. Over it, the address gets 429
before any lookup, whatever token it sends, until the window has room again."""

from __future__ import annotations

import math
import threading
import time

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from limits import RateLimitItem, storage, strategies

from ..agents.rate_limits import ENDPOINTS, WHO, effective_limits, parse_limit
from ..models import ApiToken

_limiter: strategies.MovingWindowRateLimiter | None = None
_limiter_url: tuple[str, str] | None = None
_limiter_lock = threading.Lock()


def _get_limiter() -> strategies.MovingWindowRateLimiter:
    global _limiter, _limiter_url
    url, prefix = settings.PROCMEM_RATE_LIMIT_STORAGE, settings.PROCMEM_RATE_LIMIT_KEY_PREFIX
    with _limiter_lock:
        if _limiter is None or _limiter_url != (url, prefix):
            options = {"key_prefix": prefix} if url.startswith("redis") else {}
            _limiter = strategies.MovingWindowRateLimiter(storage.storage_from_string(url, **options))
            _limiter_url = (url, prefix)
        return _limiter


def reset() -> None:
    """Forgets every count (tests, and `manage.py` after changing storage)."""
    global _limiter
    with _limiter_lock:
        if _limiter is not None:
            _limiter.storage.reset()
        _limiter = None


def rate_limited(request: HttpRequest, *, token: ApiToken, endpoint: str) -> JsonResponse | None:
    """Counts this request against the token's and the client address's limit of `endpoint`; the
    429 answer when either is exceeded, else None. Both are counted only when both admit the
    request, so refused requests do not push the other window further."""
    if not settings.PROCMEM_RATE_LIMITS:
        return None
    limiter = _get_limiter()
    own = effective_limits(token.agent)[endpoint]
    address = _address(request)
    checks = (
        ("token", parse_limit(own["token"]), ("procmem", endpoint, "token", token.token_hash[:24])),
        ("ip", parse_limit(own["ip"]), ("procmem", endpoint, "ip", str(token.agent_id), address)),
    )
    for who, item, keys in checks:
        if not limiter.test(item, *keys):
            return _too_many(limiter, item, keys, endpoint=endpoint, who=who, limit=own[who])
    for who, item, keys in checks:
        if not limiter.hit(item, *keys):  # lost a race with another request between test and hit
            return _too_many(limiter, item, keys, endpoint=endpoint, who=who, limit=own[who])
    return None


AUTH_FAILURE_KEYS = ("procmem", "auth_failures", "ip")


def _auth_failure_item() -> RateLimitItem:
    return parse_limit(settings.PROCMEM_RATE_LIMIT_AUTH_FAILURES)


def _address(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR") or "unknown"


def auth_failures_exceeded(request: HttpRequest) -> int | None:
    """Retry-After seconds when the client address has used up its failed authentications, else
    None. Asked before the token lookup, so a flood of bad tokens stops costing lookups."""
    return _auth_failures(request, count=False)


def auth_failure_counted(request: HttpRequest) -> int | None:
    """Counts one failed authentication of the client address; Retry-After seconds when it was over
    the limit (the caller answers 429 instead of 401: concurrent requests that all passed
    `auth_failures_exceeded` still get exactly the limit's number of 401s), else None."""
    return _auth_failures(request, count=True)


def _auth_failures(request: HttpRequest, *, count: bool) -> int | None:
    if not settings.PROCMEM_RATE_LIMITS:
        return None
    limiter, item = _get_limiter(), _auth_failure_item()
    keys = (*AUTH_FAILURE_KEYS, _address(request))
    if (limiter.hit if count else limiter.test)(item, *keys):
        return None
    return _retry_after(limiter, item, keys)


def auth_failures_refused(retry_after: int) -> JsonResponse:
    """The JSON 429 of an address over the failed-authentication limit."""
    limit = settings.PROCMEM_RATE_LIMIT_AUTH_FAILURES
    response = JsonResponse(
        {
            "error": {
                "code": "rate_limited",
                "message": f"More than {limit} failed authentications from this address; retry after {retry_after} s.",
                "limit": limit,
                "scope": "auth_failures",
                "retryAfter": retry_after,
            }
        },
        status=429,
    )
    response["Retry-After"] = str(retry_after)
    return response


def _retry_after(limiter, item: RateLimitItem, keys: tuple[str, ...]) -> int:
    reset_at = limiter.get_window_stats(item, *keys).reset_time
    return max(1, math.ceil(reset_at - time.time()))


def _too_many(
    limiter, item: RateLimitItem, keys: tuple[str, ...], *, endpoint: str, who: str, limit: str
) -> JsonResponse:
    retry_after = _retry_after(limiter, item, keys)
    response = JsonResponse(
        {
            "error": {
                "code": "rate_limited",
                "message": f"{ENDPOINTS[endpoint]}: more than {limit} {WHO[who]}; retry after {retry_after} s.",
                "limit": limit,
                "scope": who,
                "retryAfter": retry_after,
            }
        },
        status=429,
    )
    response["Retry-After"] = str(retry_after)
    return response
