"""Template helpers of the review workspace."""

from __future__ import annotations

from urllib.parse import urlencode

from django import template

from library.permissions import user_can_manage_agent

register = template.Library()


@register.simple_tag(takes_context=True)
def manages_agent(context, agent) -> bool:
    """Whether the signed-in user may open the agent's admin pages (tokens, settings, webhooks): the
    tabs leave out what would answer 403."""
    request = context.get("request")
    return bool(request) and user_can_manage_agent(request.user, agent)


@register.simple_tag
def querystring_for(filters, **override) -> str:
    """The queue's query string with some filters replaced (empty string: drop the filter)."""
    return urlencode(filters.as_query(**override))


@register.filter
def status_sign(status: str) -> str:
    """A sign per status, shown next to the coloured label so that colour is never the only cue."""
    return {"CANDIDATE": "◇", "APPROVED": "◐", "ACTIVE": "●", "RETIRED": "○", "REJECTED": "✕", "ERASED": "⌫"}.get(
        status, ""
    )


@register.filter
def get_item(mapping, key):
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def contrast_sentence(item) -> str:
    from reviews.panels import contrast_sentence as sentence

    return sentence(item)


@register.filter
def get_step(steps, number):
    """Step `number` (1-based) of a list of steps, or "" when there is no such step."""
    try:
        return steps[int(number) - 1] if int(number) >= 1 else ""
    except (IndexError, TypeError, ValueError):
        return ""


@register.filter
def count_label(count: int) -> str:
    """A count that stops at the queue's cap, for people: "1,000+" past it (reviews.selectors)."""
    from reviews.selectors import count_label as label

    return label(count)
