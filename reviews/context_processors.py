"""Navigation: the signed-in user's role and what waits for them."""

from __future__ import annotations

from django.http import HttpRequest


def navigation(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    from reviews.navigation import navigation_for

    return {"nav": navigation_for(user)}
