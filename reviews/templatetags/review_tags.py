"""Template helpers of the review workspace."""

from __future__ import annotations

from urllib.parse import urlencode

from django import template

from library import formatting
from library.permissions import user_can_manage_agent
from reviews.panels import contrast_sentence as sentence
from reviews.selectors import count_label as label

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

    return label(count)


# numbers as library/formatting.py writes them, so a page and a stored sentence read alike


@register.filter
def p_value(value, label: str = "p") -> str:
    """ "p = 0.039", "p < 0.001"."""
    return formatting.p_value(value, label)


@register.filter
def p_number(value) -> str:
    """ "0.039", "< 0.001"."""
    return formatting.p_number(value)


@register.filter
def score(value) -> str:
    """ "0.442" (a retriever's score, rounded once from the raw value)."""
    return formatting.score(value)


@register.filter
def signed(value, sign: str = "+") -> str:
    """ "+3", "−2", "0" (zero has no sign)."""
    return formatting.signed(value, sign)


@register.filter
def counted(value, noun: str) -> str:
    """ "1 candidate", "2 candidates"."""
    return formatting.count(value, noun)
