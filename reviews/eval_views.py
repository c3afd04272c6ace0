"""Eval-run pages and actions: the run page, its progress fragment, cancel and resume (a run is
started from the candidate page: reviews.views.version_eval_start) — reviewers only (`library.permissions.user_is_reviewer`); and
an agent's eval settings — the agent's admins only (`manage_agent`).

Access: anonymous → sign-in (an htmx request gets HX-Redirect); signed in without the reviewer
role → 403; a run or version that does not exist → 404.
"""

from __future__ import annotations

from functools import wraps

from django import forms
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from library.evals import runs as evals
from library.evals.configuration import agent_eval_settings_update, eval_settings_snapshot
from library.models import Agent, EvalCaseResult, EvalRun
from library.permissions import user_can_manage_agent, user_is_reviewer
from library.services import LifecycleError


def signed_in(view):
    """login_required that answers an htmx request with HX-Redirect instead of a 302 the fragment
    would swallow."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        if not request.user.is_authenticated:
            if getattr(request, "htmx", False):
                return HttpResponseClientRedirect(f"{reverse('login')}?next={request.get_full_path()}")
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapper


def get_run_for_user(request: HttpRequest, pk: int) -> EvalRun:
    run = get_object_or_404(
        EvalRun.objects.filter(version__procedure__agent__in=Agent.objects.visible_to(request.user)).select_related(
            "version__procedure__agent", "version__procedure__intent", "started_by"
        ),
        pk=pk,
    )
    if not user_is_reviewer(request.user):
        raise PermissionDenied("Eval runs are for reviewers.")
    return run


def _progress_response(request: HttpRequest, run: EvalRun) -> HttpResponse:
    progress = evals.eval_run_progress(run)
    response = render(request, "reviews/evals/_progress.html", {"run": run, "baseline_moved": not progress["baselineCurrent"]})
    if run.is_finished:
        # lets the page around the fragment (the eval panel) refresh itself once
        response["HX-Trigger"] = "evalRunFinished"
    response["Vary"] = "HX-Request"
    return response


@require_GET
@signed_in
def eval_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_run_for_user(request, pk)
    results = (
        EvalCaseResult.objects.filter(run=run)
        .select_related("case__intent")
        .order_by("case__intent__name", "case_id", "arm")
    )
    progress = evals.eval_run_progress(run)
    cases: dict[int, dict] = {}
    for row in results:
        entry = cases.setdefault(row.case_id, {"case": row.case})
        entry[row.arm] = row
    return render(
        request,
        "reviews/evals/detail.html",
        {
            "run": run,
            "version": run.version,
            "cases": list(cases.values()),
            "runner_label": Agent.Runner(run.runner).label if run.runner in Agent.Runner.values else run.runner,
            "progress": progress,
            "baseline_moved": not progress["baselineCurrent"],
        },
    )


@require_GET
@signed_in
def eval_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """The live progress: an htmx fragment that polls itself while the run is unfinished, or JSON
    with `?format=json` / `Accept: application/json`."""
    run = get_run_for_user(request, pk)
    if request.GET.get("format") == "json" or "application/json" in request.headers.get("Accept", ""):
        return JsonResponse(evals.eval_run_progress(run))
    return _progress_response(request, run)


@require_POST
@signed_in
def eval_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_run_for_user(request, pk)
    try:
        run = evals.eval_run_cancel(run=run, user=request.user)
    except LifecycleError as exc:
        messages.error(request, str(exc))
    if request.htmx:
        return _progress_response(request, run)
    return redirect("reviews:eval_detail", pk=run.pk)


@require_POST
@signed_in
def eval_resume(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_run_for_user(request, pk)
    try:
        run = evals.eval_run_resume(run=run, user=request.user)
    except LifecycleError as exc:
        messages.error(request, str(exc))
    if request.htmx:
        return _progress_response(request, run)
    return redirect("reviews:eval_detail", pk=run.pk)


# --------------------------------------------------------------------------------------------- agent eval settings


class AgentEvalSettingsForm(forms.Form):
    eval_runner = forms.ChoiceField(choices=Agent.Runner.choices, label="Runner")
    eval_url = forms.URLField(required=False, label="Eval URL (HTTP runner)", assume_scheme="https")
    eval_python_path = forms.CharField(required=False, max_length=255, label="Python callable (package.module:function)")
    eval_concurrency = forms.IntegerField(min_value=1, max_value=100, label="Concurrent calls to the agent at most")
    eval_timeout_seconds = forms.FloatField(min_value=0.1, max_value=600, label="Timeout per call (seconds)")
    model_base_url = forms.URLField(required=False, label="Model base URL (OpenAI-compatible)", assume_scheme="https")
    model_name = forms.CharField(required=False, max_length=128)
    model_api_key = forms.CharField(
        required=False, max_length=512, widget=forms.PasswordInput(render_value=False), label="Model API key",
        help_text="Write-only: leave empty to keep the stored key.",
    )
    clear_model_api_key = forms.BooleanField(required=False, label="Remove the stored key")
    tool_schemas = forms.JSONField(required=False, widget=forms.Textarea(attrs={"rows": 6}), help_text="Tool name → JSON schema of its parameters")
    base_instruction = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}))


@signed_in
def agent_eval_settings(request: HttpRequest, agent_name: str) -> HttpResponse:
    """The agent's eval-replay settings (holders of manage_agent). The API key is never shown back."""
    agent = get_object_or_404(Agent.objects.visible_to(request.user), name=agent_name)
    if not user_can_manage_agent(request.user, agent):
        raise PermissionDenied("Only the agent's admins change its eval settings.")
    initial = eval_settings_snapshot(agent)
    form = AgentEvalSettingsForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        key = data.pop("model_api_key")
        clear = data.pop("clear_model_api_key")
        data["tool_schemas"] = data.get("tool_schemas") or {}
        key_change = {"model_api_key": ""} if clear else ({"model_api_key": key} if key else {})
        try:
            agent_eval_settings_update(agent=agent, user=request.user, **data, **key_change)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            messages.success(request, f"Eval settings of {agent.name} saved.")
            return redirect("reviews:agent_eval_settings", agent_name=agent.name)
    return render(
        request, "reviews/evals/settings.html", {"agent": agent, "form": form, "key_set": bool(agent.model_api_key)}
    )
