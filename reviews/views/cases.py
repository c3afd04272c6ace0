"""Regression-case pages: the list per agent, create and edit, JSONL import, and "turn this session
into a regression case". Reviewers only: cases hold task texts and recorded tool results.

Access: anonymous → sign-in; signed in without the reviewer role → 403; an agent, case or session
the user cannot see (or that does not exist) → 404.
"""

from __future__ import annotations

import io

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from library.evals.cases import (
    CaseImportError,
    import_cases,
    parse_jsonl,
    regression_case_create,
    regression_case_from_session,
    regression_case_update,
)
from library.models import Agent, AgentSession, RegressionCase

from ..access import get_agent_for_user, get_case_for_user, signed_in
from ..forms import CaseImportForm, RegressionCaseForm

MAX_IMPORT_BYTES = 5 * 1024 * 1024
CASES_PER_PAGE = 100


@require_http_methods(["GET"])
@signed_in
def case_list(request: HttpRequest, agent: str) -> HttpResponse:
    agent = get_agent_for_user(request, agent, for_="review")
    cases = (
        RegressionCase.objects.filter(agent=agent)
        .select_related("intent", "source_session")
        .order_by("intent__name", "pk")
    )
    intent_name = request.GET.get("intent", "")
    if intent_name:
        cases = cases.filter(intent__name=intent_name)
    counts = agent.regression_cases.values("intent__name").annotate(n=Count("id")).order_by("intent__name")
    page = Paginator(cases, CASES_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "reviews/cases/list.html",
        {"agent": agent, "page": page, "counts": counts, "intent_name": intent_name},
    )


@require_http_methods(["GET", "POST"])
@signed_in
def case_create(request: HttpRequest, agent: str) -> HttpResponse:
    return _case_form_page(request, get_agent_for_user(request, agent, for_="review"), None)


@require_http_methods(["GET", "POST"])
@signed_in
def case_edit(request: HttpRequest, pk: int) -> HttpResponse:
    case = get_case_for_user(request, pk, for_="review")
    return _case_form_page(request, case.agent, case)


def _case_form_page(request: HttpRequest, agent: Agent, case: RegressionCase | None) -> HttpResponse:
    """Create (case None) or edit a case; back to the agent's case list once saved."""
    form = RegressionCaseForm(
        request.POST or None, agent=agent, initial=RegressionCaseForm.initial_for(case) if case else None
    )
    if request.method == "POST" and form.is_valid():
        fields = {"intent": form.cleaned_data["intent"], "user": request.user, **form.service_fields()}
        try:
            if case is None:
                created = regression_case_create(agent=agent, **fields)
            else:
                regression_case_update(case=case, **fields)
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            done = f"{created.pk} created" if case is None else f"{case.pk} saved"
            messages.success(request, f"Regression case {done}.")
            return redirect("reviews:case_list", agent=agent.name)
    # reached on a POST only when the form or the service refused it
    status = 400 if request.method == "POST" else 200
    return render(request, "reviews/cases/form.html", {"agent": agent, "form": form, "case": case}, status=status)


@require_http_methods(["GET", "POST"])
@signed_in
def case_import(request: HttpRequest, agent: str) -> HttpResponse:
    agent = get_agent_for_user(request, agent, for_="review")
    form = CaseImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        if upload.size > MAX_IMPORT_BYTES:
            form.add_error("file", f"The file is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MB.")
        else:
            try:
                text = io.TextIOWrapper(upload.file, encoding="utf-8")
                items = parse_jsonl(text, source=upload.name)
                report = import_cases(
                    items, agent=agent, user=request.user, create_intents=form.cleaned_data["create_intents"]
                )
            except UnicodeDecodeError:
                form.add_error("file", "The file is not UTF-8 text.")
            except CaseImportError as exc:
                form.add_error("file", f"Nothing was imported. {exc}")
            else:
                messages.success(
                    request,
                    f"Imported {len(report.created)} regression cases; {len(report.skipped)} already present were skipped.",
                )
                return redirect("reviews:case_list", agent=agent.name)
    status = 400 if request.method == "POST" else 200
    return render(request, "reviews/cases/import.html", {"agent": agent, "form": form}, status=status)


@require_POST
@signed_in
def case_from_session(request: HttpRequest, agent: str) -> HttpResponse:
    """Makes a case from a stored session (by its session id or primary key), then opens it for
    editing: the reviewer checks the task text for personal data and the expected calls."""
    agent = get_agent_for_user(request, agent, for_="review")
    reference = (request.POST.get("session") or "").strip()
    sessions = AgentSession.objects.filter(agent=agent).select_related("agent", "intent")
    session = sessions.filter(session_id=reference).first()
    if session is None and reference.isdigit():
        session = sessions.filter(pk=int(reference)).first()
    if session is None:
        raise Http404("No such session for this agent.")
    try:
        case = regression_case_from_session(session=session, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("reviews:case_list", agent=agent.name)
    messages.success(
        request,
        f"Regression case {case.pk} made from session {session.session_id}. Check the task text for personal data and the checks.",
    )
    return redirect(reverse("reviews:case_edit", args=[case.pk]))
