"""The rules of the agent API's rate limits (docs/operations.md "Limits on the agent API"); the
requests are counted in library/api/limits.py.

Each limited endpoint belongs to a class (select, the active set, ingest, OTLP). Per class an agent
has two limits: one per token and one per client address (REMOTE_ADDR, as the login throttle reads
it), each a `limits` string such as "3000/minute". An agent's own values (`Agent.api_rate_limits`,
changed on its settings page) override the defaults below."""

from __future__ import annotations

from typing import Any

from limits import RateLimitItem, parse

from ..models import Agent

ENDPOINTS: dict[str, str] = {
    "select": "Select",
    "active_set": "Active set",
    "ingest": "Session ingest",
    "otlp": "OTLP traces",
}
WHO: dict[str, str] = {"token": "per token", "ip": "per client address"}
# Generous by default: a fleet of agents sharing one read token selects many times a second. What
# the limits stop is a runaway loop or a leaked token, not normal traffic.
DEFAULT_LIMITS: dict[str, dict[str, str]] = {
    "select": {"token": "6000/minute", "ip": "12000/minute"},
    "active_set": {"token": "3000/minute", "ip": "6000/minute"},
    "ingest": {"token": "600/minute", "ip": "1200/minute"},
    "otlp": {"token": "6000/minute", "ip": "12000/minute"},
}
MAX_LIMIT_TEXT = 40


def parse_limit(text: str) -> RateLimitItem:
    """One limit ("100/minute", "10 per second"); ValueError naming what is wrong."""
    text = (text or "").strip()
    if not text or len(text) > MAX_LIMIT_TEXT:
        raise ValueError(f'must be a rate such as "600/minute" (at most {MAX_LIMIT_TEXT} characters)')
    try:
        item = parse(text)
    except ValueError:
        raise ValueError(f'{text!r} is not a rate; write it as "600/minute", "20/second" or "10000/hour"') from None
    if item.amount < 1:
        raise ValueError(f"{text!r}: the amount must be at least 1")
    return item


def clean_rate_limits(value: Any) -> dict[str, dict[str, str]]:
    """An agent's overrides, validated: {endpoint: {"token"|"ip": "<rate>"}}; empty values mean the
    default. ValueError names the bad entry."""
    if value in (None, ""):
        return {}
    if not isinstance(value, dict):
        raise ValueError(f'must be an object of endpoint → {{"token": rate, "ip": rate}}, got {type(value).__name__}')
    cleaned: dict[str, dict[str, str]] = {}
    for endpoint, limits_of in value.items():
        if endpoint not in ENDPOINTS:
            raise ValueError(f"unknown endpoint {endpoint!r}; use one of {', '.join(ENDPOINTS)}")
        if not isinstance(limits_of, dict):
            raise ValueError(f'{endpoint}: must be an object with "token" and/or "ip"')
        for who, text in limits_of.items():
            if who not in WHO:
                raise ValueError(f'{endpoint}.{who}: use "token" or "ip"')
            if text in (None, ""):
                continue
            if not isinstance(text, str):
                raise ValueError(f'{endpoint}.{who}: must be text such as "600/minute"')
            try:
                parse_limit(text)
            except ValueError as exc:
                raise ValueError(f"{endpoint}.{who}: {exc}") from None
            cleaned.setdefault(endpoint, {})[who] = text.strip()
    return cleaned


def effective_limits(agent: Agent) -> dict[str, dict[str, str]]:
    """Every endpoint's two limits for `agent`: its own where set, else the default."""
    own = agent.api_rate_limits or {}
    return {
        endpoint: {who: (own.get(endpoint) or {}).get(who) or DEFAULT_LIMITS[endpoint][who] for who in WHO}
        for endpoint in ENDPOINTS
    }


def rate_limits_table(agent: Agent) -> list[dict[str, Any]]:
    """The limits in force, a row per endpoint, for the settings page: each with whether it is the
    agent's own value or the default."""
    own = agent.api_rate_limits or {}
    effective = effective_limits(agent)
    return [
        {
            "endpoint": label,
            **{who: effective[endpoint][who] for who in WHO},
            **{f"{who}_own": bool((own.get(endpoint) or {}).get(who)) for who in WHO},
        }
        for endpoint, label in ENDPOINTS.items()
    ]
