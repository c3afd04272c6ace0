"""Counting the agent API's requests against its rate limits (the rules: library/rate_limits.py).

Counting is the maintained `limits` library's moving window. Its counters live in the storage
PROCMEM_RATE_LIMIT_STORAGE names: Redis when the deployment has it (one count for every process and
machine; keys prefixed with PROCMEM_RATE_LIMIT_KEY_PREFIX), else this process's memory (each gunicorn
worker counts for itself). The client address is REMOTE_ADDR, as the login throttle reads it."""

from __future__ import annotations

import math
import threading
import time

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from limits import RateLimitItem, storage, strategies

from ..models import ApiToken
from ..rate_limits import ENDPOINTS, WHO, effective_limits, parse_limit

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
    address = request.META.get("REMOTE_ADDR") or "unknown"
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


def _too_many(limiter, item: RateLimitItem, keys: tuple[str, ...], *, endpoint: str, who: str, limit: str) -> JsonResponse:
    reset_at = limiter.get_window_stats(item, *keys).reset_time
    retry_after = max(1, math.ceil(reset_at - time.time()))
    response = JsonResponse(
        {"error": {
            "code": "rate_limited",
            "message": f"{ENDPOINTS[endpoint]}: more than {limit} {WHO[who]}; retry after {retry_after} s.",
            "limit": limit, "scope": who, "retryAfter": retry_after,
        }},
        status=429,
    )
    response["Retry-After"] = str(retry_after)
    return response
