"""Environments and rollouts on the operations pages: what each environment of an agent serves for a
procedure, promoting an approved version (to another environment, to production, or to a share of
production) with the eval production needs first (the promotion eval: production's set with the
version in place of the active one), withdrawing it from an environment, and a rollout's page — its
two arms compared — where it is completed or rolled back.

Access: the pages exist for those who may operate the agent (404 otherwise); the actions need the
promote permission on the procedure or its agent (403 otherwise), and the services check it again
under their row locks (library/services/releases.py)."""

from __future__ import annotations

from typing import Literal

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from library import services
from library.environments import PRODUCTION, environment_names
from library.evals import eval_runs as evals
from library.models import Procedure, ProcedureRelease, ProcedureVersion, Rollout, Status
from library.permissions import user_can_promote

from ..access import get_version_for_user, signed_in
from ..metrics.arms import interval_drawing, rollout_arms
from .refusals import decision_status, post_action

ROLLOUT_SHARES = (5, 10, 20, 50)


def environments_panel(procedure: Procedure, user) -> dict:
    """For the procedure's operations page: per environment the version it serves, the running
    rollout, the approved versions waiting for production, the past rollouts."""
    versions = {v.pk: v for v in procedure.versions.all()}
    active = next((v for v in versions.values() if v.status == Status.ACTIVE), None)
    released = {r.environment: versions.get(r.version_id) for r in ProcedureRelease.objects.filter(procedure=procedure)}
    rows = [{"name": PRODUCTION, "version": active, "released": False}]
    for name in environment_names(procedure.agent)[1:]:
        rows.append({"name": name, "version": released.get(name) or active, "released": name in released})
    rollouts = list(
        Rollout.objects.filter(procedure=procedure).select_related(
            "version", "control_version", "started_by", "ended_by"
        )[:20]
    )
    return {
        "environments": rows,
        "rollout": next((r for r in rollouts if r.state == Rollout.State.RUNNING), None),
        "rollouts": rollouts,
        "approved": sorted((v for v in versions.values() if v.status == Status.APPROVED), key=lambda v: -v.number),
        "can_promote": user_can_promote(user, procedure),
    }


def _share(raw: str) -> int | None:
    raw = (raw or "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValidationError({"share": f"must be a whole percentage from 1 to 99, got {raw[:20]!r}"}) from None


@require_http_methods(["GET", "POST"])
@signed_in
def ops_promote(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: where an approved version may go (production outright or as a rollout to a share of the
    sessions, or another non-production environment); POST promotes through version_promote."""
    version = get_version_for_user(request, pk, for_="promote")
    agent = version.procedure.agent
    in_environments = set(ProcedureRelease.objects.filter(version=version).values_list("environment", flat=True))
    context = {
        "agent": agent,
        "version": version,
        "current": ProcedureVersion.objects.filter(procedure=version.procedure, status=Status.ACTIVE).first(),
        "environments": [name for name in environment_names(agent) if name not in in_environments],
        "in_environments": sorted(in_environments),
        "shares": ROLLOUT_SHARES,
        "environment": request.POST.get("environment", PRODUCTION),
        "share": request.POST.get("share", ""),
        "reason": request.POST.get("reason", ""),
        "error": "",
        "stale": version.status != Status.APPROVED,
        "tab": "active",
        "confirm": {
            "button": f"Promote v{version.number}",
            "button_class": "primary",
            "placeholder": "e.g. a week in staging without escalations",
        },
        **promotion_eval_context(version),
    }
    if context["stale"]:
        context["error"] = (
            f"v{version.number} is {version.get_status_display().lower()}; only an approved version waiting for production is promoted."
        )
    status = 200
    if request.method == "POST":
        status = decision_status(
            context,
            lambda: services.version_promote(
                version=version,
                user=request.user,
                environment=context["environment"],
                reason=context["reason"],
                share=_share(context["share"]),
            ),
        )
        if status == 200:
            where = context["environment"]
            share = _share(context["share"])
            if where == PRODUCTION and share not in (None, 100):
                messages.success(
                    request,
                    f"Rollout started: {share} % of production sessions get {version.procedure.key} v{version.number}.",
                )
                rollout = Rollout.objects.get(procedure=version.procedure, state=Rollout.State.RUNNING)
                return redirect("reviews:ops_rollout", rollout.pk)
            messages.success(request, f"Promoted {version.procedure.key} v{version.number} to {where}.")
            return redirect("reviews:ops_procedure", agent.name, version.procedure.key)
    return render(request, "reviews/ops/confirm_promote.html", context, status=status)


def promotion_eval_context(version: ProcedureVersion) -> dict:
    """The promote page's eval section: the newest promotion eval of this exact content (its state,
    verdict, per-intent numbers and selection), the eval production would rest on now, and why
    production is not possible yet (services.promotion_blockers)."""
    if version.status != Status.APPROVED:
        return {"promotion_eval": None, "promotion_eval_possible": False}
    run = services.latest_promotion_eval(version)
    return {
        "promotion_eval": run,
        "promotion_eval_possible": True,
        "promotion_eval_reach": services.selection_reach_blocker(run)
        if run is not None and run.state == "done"
        else "",
        "production_eval": services.production_eval_for(version),
        "promotion_blockers": services.promotion_blockers(version),
    }


@require_POST
@signed_in
def ops_promote_eval(request: HttpRequest, pk: int) -> HttpResponse:
    """Starts the promotion eval of an approved version (promoters: 403 for who may see but not
    promote, 404 for who may not see); its verdict shows on the promote page."""
    version = get_version_for_user(request, pk, for_="promote")
    try:
        run = evals.eval_run_start_promotion(version=version, user=request.user)
    except services.LifecycleError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Eval run {run.pk} of promoting v{version.number} to production started.")
    return redirect(reverse("reviews:ops_promote", args=[version.pk]) + "#promotion-eval")


@require_http_methods(["GET", "POST"])
@signed_in
def ops_withdraw(request: HttpRequest, pk: int) -> HttpResponse:
    """Rollback in a non-production environment: it serves the production version again."""
    version = get_version_for_user(request, pk, for_="promote")
    agent = version.procedure.agent
    environment = request.POST.get("environment") or request.GET.get("environment") or ""
    context = {
        "agent": agent,
        "version": version,
        "environment": environment,
        "reason": request.POST.get("reason", ""),
        "current": ProcedureVersion.objects.filter(procedure=version.procedure, status=Status.ACTIVE).first(),
        "error": "",
        "stale": not ProcedureRelease.objects.filter(version=version, environment=environment).exists(),
        "tab": "active",
        "confirm": {
            "button": f"Withdraw v{version.number} from {environment}",
            "button_class": "danger",
            "placeholder": "e.g. the staging agent escalates more with it",
        },
    }
    if context["stale"]:
        context["error"] = f"v{version.number} is not in {environment or 'that environment'}."
    status = 200
    if request.method == "POST":
        status = decision_status(
            context,
            lambda: services.version_withdraw(
                version=version, user=request.user, environment=environment, reason=context["reason"]
            ),
        )
        if status == 200:
            messages.success(
                request,
                f"Withdrew {version.procedure.key} v{version.number} from {environment}; it serves the production version again.",
            )
            return redirect("reviews:ops_procedure", agent.name, version.procedure.key)
    return render(request, "reviews/ops/confirm_withdraw.html", context, status=status)


def _rollout_for_user(request: HttpRequest, pk: int, for_: str) -> Rollout:
    rollout = get_object_or_404(Rollout.objects.select_related("version", "control_version", "procedure__agent"), pk=pk)
    get_version_for_user(request, rollout.version_id, for_=for_)  # 404 for who may not see, 403 for who may not promote
    return rollout


@require_GET
@signed_in
def ops_rollout(request: HttpRequest, pk: int) -> HttpResponse:
    """A rollout's metrics: the two arms' sessions and resolution rates with 95 % Wilson intervals
    and Fisher's exact test; complete or roll back while it runs."""
    rollout = _rollout_for_user(request, pk, "operate")
    comparison = rollout_arms(rollout)
    return render(
        request,
        "reviews/ops/rollout.html",
        {
            "agent": rollout.procedure.agent,
            "procedure": rollout.procedure,
            "rollout": rollout,
            "comparison": comparison,
            "drawing": interval_drawing(comparison),
            "can_promote": user_can_promote(request.user, rollout.procedure),
            "tab": "metrics",
        },
    )


@post_action
def ops_rollout_end(request: HttpRequest, pk: int, decision: Literal["complete", "rollback"]) -> HttpResponse:
    """Complete a running rollout (its version becomes ACTIVE) or roll it back; `decision` comes from the URL."""
    rollout = _rollout_for_user(request, pk, "promote")
    service = services.rollout_complete if decision == "complete" else services.rollout_rollback
    service(rollout=rollout, user=request.user, reason=request.POST.get("reason", ""))
    if decision == "complete":
        messages.success(
            request,
            f"Rollout completed: {rollout.procedure.key} v{rollout.version.number} is ACTIVE for every session.",
        )
    else:
        messages.success(
            request,
            f"Rollout rolled back: production serves {'v' + str(rollout.control_version.number) if rollout.control_version else 'no version'} to every session.",
        )
    return redirect("reviews:ops_rollout", rollout.pk)
