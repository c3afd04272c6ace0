"""The agent-facing JSON API (v1). Agents read; they never write procedures."""

from __future__ import annotations

from django.db import connections
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET


@require_GET
def health(request: HttpRequest) -> JsonResponse:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok", "apiVersion": "v1"})
