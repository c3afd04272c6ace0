"""Regression-case pages: the list per agent, create and edit, JSONL import, and "turn this session
into a regression case". Reviewers only: cases hold task texts and recorded tool results.

Access: anonymous → sign-in; signed in without the reviewer role → 403; an agent, case or session
the user cannot see (or that does not exist) → 404.
"""

from __future__ import annotations

import io
import json

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from library.evals.cases import (
    CaseImportError,
    import_cases,
    parse_jsonl,
    regression_case_create,
    regression_case_from_session,
    regression_case_update,
)
from library.models import Agent, AgentSession, RegressionCase
from library.permissions import user_is_reviewer

MAX_IMPORT_BYTES = 5 * 1024 * 1024
CASES_PER_PAGE = 100


def get_agent_for_user(request: HttpRequest, name: str) -> Agent:
    """The agent if the user may see it (404 otherwise); cases also need the reviewer role (403)."""
    agent = get_object_or_404(Agent.objects.visible_to(request.user), name=name)
    if not user_is_reviewer(request.user):
        raise PermissionDenied("Regression cases are for reviewers.")
    return agent


def get_case_for_user(request: HttpRequest, pk: int) -> tuple[RegressionCase, bool]:
    """(case, can_edit). 404 when hidden; every reviewer may edit, so others get 403."""
    case = get_object_or_404(
        RegressionCase.objects.filter(agent__in=Agent.objects.visible_to(request.user)).select_related("agent", "intent"),
        pk=pk,
    )
    if not user_is_reviewer(request.user):
        raise PermissionDenied("Regression cases are for reviewers.")
    return case, True


# --------------------------------------------------------------------------------------------- form


def _lines(value: str) -> list[str]:
    return [line.strip() for line in (value or "").splitlines() if line.strip()]


def _calls_from_text(value: str, field: str) -> list:
    """One call a line: a tool name, or a JSON object such as {"name": "x", "args": {...}}."""
    calls: list = []
    for number, line in enumerate(_lines(value), start=1):
        if line.startswith("{"):
            try:
                calls.append(json.loads(line))
            except ValueError as exc:
                raise forms.ValidationError(f"line {number} is not a JSON object ({exc})") from None
        else:
            calls.append(line)
    return calls


def _calls_to_text(calls: list) -> str:
    return "\n".join(c if isinstance(c, str) else json.dumps(c, ensure_ascii=False) for c in calls or [])


class RegressionCaseForm(forms.Form):
    intent = forms.ModelChoiceField(queryset=None, empty_label=None)
    name = forms.CharField(max_length=200, required=False)
    task = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), help_text="What the customer asks; the agent replays it.")
    context = forms.JSONField(required=False, initial=dict, widget=forms.Textarea(attrs={"rows": 3}), help_text='A JSON object, e.g. {"order_id": "ORD-1"}')
    expected_tools = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 4}),
        help_text='Expected calls in order, one a line: a tool name, or {"name": "createApproval", "args": {"order_id": "ORD-1"}}',
    )
    forbidden_tools = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text='Forbidden calls, one a line: a tool name, or {"name": "...", "args": {...}, "before": "createApproval"}',
    )
    reply_must_match = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="Regular expressions, one a line")
    reply_must_not_match = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="Regular expressions, one a line")
    tool_results = forms.JSONField(
        required=False, initial=dict, widget=forms.Textarea(attrs={"rows": 4}),
        help_text='For model replay: {"lookupOrder": [result of the 1st call, of the 2nd, …]}',
    )
    is_active = forms.BooleanField(required=False, initial=True, label="Active (replayed by eval runs)")

    def __init__(self, *args, agent: Agent, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["intent"].queryset = agent.intents.order_by("name")

    def clean_expected_tools(self):
        return _calls_from_text(self.cleaned_data["expected_tools"], "expected_tools")

    def clean_forbidden_tools(self):
        return _calls_from_text(self.cleaned_data["forbidden_tools"], "forbidden_tools")

    def clean_reply_must_match(self):
        return _lines(self.cleaned_data["reply_must_match"])

    def clean_reply_must_not_match(self):
        return _lines(self.cleaned_data["reply_must_not_match"])

    def service_fields(self) -> dict:
        data = dict(self.cleaned_data)
        data.pop("intent")
        data["context"] = data.get("context") or {}
        data["tool_results"] = data.get("tool_results") or {}
        return data

    def add_service_errors(self, exc: ValidationError) -> None:
        for field, errors in exc.message_dict.items():
            self.add_error(field if field in self.fields else None, errors)

    @staticmethod
    def initial_for(case: RegressionCase) -> dict:
        return {
            "intent": case.intent_id,
            "name": case.name,
            "task": case.task,
            "context": case.context,
            "expected_tools": _calls_to_text(case.expected_tools),
            "forbidden_tools": _calls_to_text(case.forbidden_tools),
            "reply_must_match": "\n".join(case.reply_must_match),
            "reply_must_not_match": "\n".join(case.reply_must_not_match),
            "tool_results": case.tool_results,
            "is_active": case.is_active,
        }


# --------------------------------------------------------------------------------------------- views


@login_required
def case_list(request: HttpRequest, agent_name: str) -> HttpResponse:
    agent = get_agent_for_user(request, agent_name)
    cases = RegressionCase.objects.filter(agent=agent).select_related("intent", "source_session").order_by("intent__name", "pk")
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


@login_required
def case_create(request: HttpRequest, agent_name: str) -> HttpResponse:
    agent = get_agent_for_user(request, agent_name)
    form = RegressionCaseForm(request.POST or None, agent=agent)
    if request.method == "POST" and form.is_valid():
        try:
            case = regression_case_create(agent=agent, intent=form.cleaned_data["intent"], user=request.user, **form.service_fields())
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            messages.success(request, f"Regression case {case.pk} created.")
            return redirect("reviews:case_list", agent_name=agent.name)
    return render(request, "reviews/cases/form.html", {"agent": agent, "form": form, "case": None})


@login_required
def case_edit(request: HttpRequest, pk: int) -> HttpResponse:
    case, _can_edit = get_case_for_user(request, pk)
    agent = case.agent
    form = RegressionCaseForm(request.POST or None, agent=agent, initial=RegressionCaseForm.initial_for(case))
    if request.method == "POST" and form.is_valid():
        try:
            regression_case_update(case=case, user=request.user, intent=form.cleaned_data["intent"], **form.service_fields())
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            messages.success(request, f"Regression case {case.pk} saved.")
            return redirect("reviews:case_list", agent_name=agent.name)
    return render(request, "reviews/cases/form.html", {"agent": agent, "form": form, "case": case})


class CaseImportForm(forms.Form):
    file = forms.FileField(help_text="JSONL: one case a line (see the README)")
    create_intents = forms.BooleanField(required=False, label="Create intents the agent does not have yet")


@login_required
def case_import(request: HttpRequest, agent_name: str) -> HttpResponse:
    agent = get_agent_for_user(request, agent_name)
    form = CaseImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        if upload.size > MAX_IMPORT_BYTES:
            form.add_error("file", f"The file is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MB.")
        else:
            try:
                text = io.TextIOWrapper(upload.file, encoding="utf-8")
                items = parse_jsonl(text, source=upload.name)
                report = import_cases(items, agent=agent, user=request.user, create_intents=form.cleaned_data["create_intents"])
            except UnicodeDecodeError:
                form.add_error("file", "The file is not UTF-8 text.")
            except CaseImportError as exc:
                form.add_error("file", f"Nothing was imported. {exc}")
            else:
                messages.success(
                    request, f"Imported {len(report.created)} regression cases; {len(report.skipped)} already present were skipped."
                )
                return redirect("reviews:case_list", agent_name=agent.name)
    return render(request, "reviews/cases/import.html", {"agent": agent, "form": form})


@require_POST
@login_required
def case_from_session(request: HttpRequest, agent_name: str) -> HttpResponse:
    """Makes a case from a stored session (by its session id or primary key), then opens it for
    editing: the reviewer checks the task text for personal data and the expected calls."""
    agent = get_agent_for_user(request, agent_name)
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
        return redirect("reviews:case_list", agent_name=agent.name)
    messages.success(
        request, f"Regression case {case.pk} made from session {session.session_id}. Check the task text for personal data and the checks."
    )
    return redirect(reverse("reviews:case_edit", args=[case.pk]))
