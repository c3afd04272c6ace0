"""Eval-run pages and actions: start (from a candidate), the run page, the progress fragment the
eval panel polls, cancel and resume. Reviewers only (`library.permissions.user_is_reviewer`).

Access: anonymous → sign-in (an htmx request gets HX-Redirect); signed in without the reviewer
role → 403; a run or version that does not exist → 404.
"""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from library.models import Agent, EvalCaseResult, EvalRun, ProcedureVersion
from library.permissions import user_is_reviewer
from library.services import LifecycleError

from . import evals


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
    response = render(request, "reviews/evals/_progress.html", {"run": run})
    if run.is_finished:
        # lets the page around the fragment (the eval panel) refresh itself once
        response["HX-Trigger"] = "evalRunFinished"
    response["Vary"] = "HX-Request"
    return response


@require_POST
@signed_in
def eval_start(request: HttpRequest, version_pk: int) -> HttpResponse:
    version = get_object_or_404(
        ProcedureVersion.objects.filter(procedure__agent__in=Agent.objects.visible_to(request.user)), pk=version_pk
    )
    if not user_is_reviewer(request.user):
        raise PermissionDenied("Only reviewers may start eval runs.")
    try:
        run = evals.eval_run_start(version=version, user=request.user)
    except LifecycleError as exc:
        if request.htmx:
            return HttpResponse(format_html("<p class=\"error\">{}</p>", str(exc)), status=409)
        messages.error(request, str(exc))
        return redirect(request.POST.get("next") or reverse("reviews:queue"))
    if request.htmx:
        return _progress_response(request, run)
    return redirect("reviews:eval_detail", pk=run.pk)


@require_GET
@signed_in
def eval_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_run_for_user(request, pk)
    results = (
        EvalCaseResult.objects.filter(run=run)
        .select_related("case__intent")
        .order_by("case__intent__name", "case_id", "arm")
    )
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
            "progress": evals.eval_run_progress(run),
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
