"""The CSRF check's refusal (settings.CSRF_FAILURE_VIEW). Under /api/ it says why in the API's
error shape: the one session-authenticated API call, PUT /api/v1|v2/agents/<agent>/tools, refused
by the check answered only "You may not do this." (ApiErrorsMiddleware's generic 403), so an admin
could not tell a missing X-CSRFToken from a missing right. Pages keep Django's own page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views import csrf

from .middleware import api_error_response, is_api


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    if not is_api(request):
        return csrf.csrf_failure(request, reason=reason)
    return api_error_response(
        403,
        "forbidden",
        f"The CSRF check refused this {request.method}: {reason.rstrip('.')}. This call takes a signed-in "
        "admin's session cookie with the csrftoken cookie's value in X-CSRFToken (and a Referer of this "
        "site over HTTPS); agents' bearer-token endpoints need no CSRF token.",
    )
