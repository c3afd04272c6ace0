"""The agent's sessions for reviewers: a filtered, paginated list and one session's page (redacted
excerpt, tool names, outcome history, what it supports). Read-only; reads in reviews/sessions.py."""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from library.models import AgentSession

from ..access import get_agent_for_user, signed_in
from ..panels import excerpt_lines
from ..sessions import (
    SESSION_PAGE_SIZE,
    SessionFilterForm,
    outcome_history,
    session_list,
    versions_supported_by,
)


@require_GET
@signed_in
def sessions_list(request: HttpRequest, agent: str) -> HttpResponse:
    agent_obj = get_agent_for_user(request, agent, for_="review")
    form = SessionFilterForm(request.GET or None, agent=agent_obj)
    filters = form.filters() if request.GET else {}
    page = Paginator(session_list(agent=agent_obj, filters=filters), SESSION_PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    query = urlencode({key: request.GET[key] for key in form.fields if request.GET.get(key)})
    return render(
        request,
        "reviews/sessions/list.html",
        {"agent": agent_obj, "form": form, "page": page, "query": query, "tab": "sessions"},
    )


@require_GET
@signed_in
def session_detail(request: HttpRequest, agent: str, pk: int) -> HttpResponse:
    agent_obj = get_agent_for_user(request, agent, for_="review")
    session = get_object_or_404(AgentSession.objects.select_related("intent"), agent=agent_obj, pk=pk)
    return render(
        request,
        "reviews/sessions/detail.html",
        {
            "agent": agent_obj,
            "session": session,
            "lines": excerpt_lines(session.redacted_excerpt),
            "tools": [
                (call.get("name") or call.get("tool") or "?", call.get("ok", True))
                for call in (session.tool_calls or [])
                if isinstance(call, dict)
            ],
            "labels": outcome_history(session),
            "supported": versions_supported_by(session),
            "tab": "sessions",
        },
    )
