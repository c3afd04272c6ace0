"""Eval-run pages and actions: the run page, its progress fragment, cancel and resume (a run is
started from the candidate page: reviews.views.versions.version_eval_start) — reviewers only. An
agent's eval settings are with its other settings (reviews.views.agents).

Access (reviews.access): anonymous → sign-in (an htmx request gets HX-Redirect); signed in without
the reviewer role → 403; a run or agent that does not exist or is hidden → 404.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from library.evals import eval_runs as evals
from library.models import Agent, EvalCaseResult, EvalRun, Status
from library.services import LifecycleError, selection_reach_blocker

from ..access import get_eval_run_for_user, signed_in
from .refusals import safe_next
from .versions import eval_panel_context


def _baseline_moved(run: EvalRun, progress: dict) -> bool:
    """Whether to warn that the active set moved since the run started: only while its version
    waits for approval (as on the candidate page). Once approved, the run is history, and the set
    moved precisely because of that approval."""
    return run.version.status == Status.CANDIDATE and not progress["baselineCurrent"]


def _progress_response(request: HttpRequest, run: EvalRun) -> HttpResponse:
    progress = evals.eval_run_progress(run)
    response = render(
        request, "reviews/evals/_progress.html", {"run": run, "baseline_moved": _baseline_moved(run, progress)}
    )
    if run.is_finished:
        # lets the page around the fragment (the eval panel) refresh itself once
        response["HX-Trigger"] = "evalRunFinished"
    response["Vary"] = "HX-Request"
    return response


@require_GET
@signed_in
def eval_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_eval_run_for_user(request, pk, for_="review")
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
            "baseline_moved": _baseline_moved(run, progress),
            "reach_blocker": selection_reach_blocker(run) if run.state == EvalRun.State.DONE else "",
        },
    )


@require_GET
@signed_in
def eval_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """The live progress: an htmx fragment that polls itself while the run is unfinished, or JSON
    with `?format=json` / `Accept: application/json`."""
    run = get_eval_run_for_user(request, pk, for_="review")
    if request.GET.get("format") == "json" or "application/json" in request.headers.get("Accept", ""):
        return JsonResponse(evals.eval_run_progress(run))
    return _progress_response(request, run)


@require_POST
@signed_in
def eval_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Cancels a run, from its own page (the progress fragment answers) or from the candidate page
    (htmx target #eval: the eval panel answers; otherwise back to `next`)."""
    run = get_eval_run_for_user(request, pk, for_="review")
    try:
        run = evals.eval_run_cancel(run=run, user=request.user)
    except LifecycleError as exc:
        messages.error(request, str(exc))
    else:
        if not request.htmx:
            messages.info(request, f"Eval run {run.pk} cancelled.")
    if request.htmx and request.htmx.target == "eval":
        return render(request, "reviews/version_detail.html#eval-panel", eval_panel_context(request, run.version))
    if request.htmx:
        return _progress_response(request, run)
    return redirect(safe_next(request, reverse("reviews:eval_detail", kwargs={"pk": run.pk})))


@require_POST
@signed_in
def eval_resume(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_eval_run_for_user(request, pk, for_="review")
    try:
        run = evals.eval_run_resume(run=run, user=request.user)
    except LifecycleError as exc:
        messages.error(request, str(exc))
    if request.htmx:
        return _progress_response(request, run)
    return redirect("reviews:eval_detail", pk=run.pk)
