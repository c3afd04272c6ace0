"""Navigation: the signed-in user's role and what waits for them."""

from __future__ import annotations

from django.http import HttpRequest

from reviews.navigation import navigation_for


def navigation(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"nav": navigation_for(user)}
