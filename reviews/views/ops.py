"""Operating the library (admins): the active set as each agent sees it, each procedure's versions,
retire and roll back, approver rights, and the audit log with its CSV export. (Metrics and
notifications have their own modules beside this one.)

Access (reviews.access, for_="operate"): the operations pages of an agent are visible to superusers,
reviewers and anyone holding an object permission on the agent or one of its procedures; to everyone
else they do not exist (404). Who may see but not change gets 403 from the action views
(for_="manage"). Every change goes through a service (library.services for status changes,
reviews.rights for approver rights), which checks the object permission again under its row lock.
"""

from __future__ import annotations

import csv
from typing import Literal
from urllib.parse import urlencode

from django.apps import apps
from django.contrib import messages
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from library import formatting, services
from library import selectors as library_selectors
from library.coding import graph as coding_graph
from library.conflicts import conflicts_scan
from library.evals import eval_runs as evals
from library.models import (
    Agent,
    AuditEvent,
    ErasureSweep,
    EvalRun,
    LoadRefusal,
    Procedure,
    ProcedureVersion,
    Status,
    VersionConflict,
    VersionTombstone,
)
from library.permissions import manage_checker, user_can_manage_agent, user_can_manage_procedure, user_is_reviewer

from .. import rights, selectors
from ..access import get_agent_for_user, get_version_for_user, operable_agents, signed_in
from ..audit import AUDIT_FILTERS, audit_changes, audit_csv_rows, audit_events, fold_changes
from ..forms import approver_right_from_post
from ..models import DemotionProposal
from ..services import demotion_confirm, demotion_dismiss
from .otlp import otlp_panel
from .refusals import decision_status
from .releases import environments_panel

AUDIT_PAGE_SIZE = 25  # a page a reviewer reads without scrolling through screens of rows


# ---------------------------------------------------------------------------------------------- the active set


@require_GET
@signed_in
def ops_index(request: HttpRequest) -> HttpResponse:
    agents = selectors.agents_overview(operable_agents(request.user))
    if not (request.user.is_superuser or user_is_reviewer(request.user)) and not agents:
        raise Http404("No agent to operate")
    return render(request, "reviews/ops/index.html", {"agents": agents})


@require_GET
@signed_in
def ops_agent(request: HttpRequest, agent: str) -> HttpResponse:
    agent_obj = get_agent_for_user(request, agent, for_="operate")
    served, refused = selectors.served_and_refused(agent_obj)
    procedures = list(
        Procedure.objects.filter(agent=agent_obj)
        .select_related("intent", "agent", "namespace")
        .prefetch_related(Prefetch("versions", queryset=ProcedureVersion.objects.order_by("number")))
    )
    may_manage = manage_checker(request.user, procedures)
    rows = []
    for p in procedures:
        versions = list(p.versions.all())
        statuses = {v.status for v in versions}
        # what a manager can do to it now: retire needs an ACTIVE version, roll back a RETIRED one
        actions = [
            name for name, status in (("retire", Status.ACTIVE), ("roll back", Status.RETIRED)) if status in statuses
        ]
        rows.append({"procedure": p, "versions": versions, "can_manage": may_manage(p), "actions": actions})
    by_pk = {p.pk: p for p in procedures}
    refusals = {
        r.version_id: r for r in LoadRefusal.objects.filter(version__procedure__agent=agent_obj).order_by("created_at")
    }
    demotions = list(
        DemotionProposal.objects.filter(version__procedure__agent=agent_obj, state=DemotionProposal.State.OPEN)
        .select_related("version__procedure")
        .order_by("created_at")
    )
    for proposal in demotions:
        proposal.can_decide = may_manage(by_pk.get(proposal.version.procedure_id, proposal.version.procedure))
    conflicts = list(
        VersionConflict.objects.filter(agent=agent_obj, cleared_at__isnull=True)
        .select_related("version_a__procedure", "version_b__procedure")
        .order_by("found_at")
    )
    due = list(
        ProcedureVersion.objects.for_agent(agent_obj)
        .due_for_review(timezone.localdate())
        .select_related("procedure")
        .order_by("review_by")
    )
    return render(
        request,
        "reviews/ops/agent.html",
        {
            "agent": agent_obj,
            "served": served,
            "refused": [(v, missing, refusals.get(v.pk)) for v, missing in refused],
            "rows": rows,
            "demotions": demotions,
            "conflicts": conflicts,
            "can_scan": user_can_manage_agent(request.user, agent_obj),
            "due": due,
            "tab": "active",
            "graph": _coding_graph_drawing(agent_obj),
            "otlp": otlp_panel(agent_obj, request.user),
        },
    )


def _coding_graph_drawing(agent: Agent):
    """The server-drawn producer → consumer picture of a coding agent's procedures (None otherwise)."""
    if agent.kind != Agent.Kind.CODING:
        return None
    graph = library_selectors.coding_graph_for_agent(agent)
    return {"graph": graph, "drawing": coding_graph.layout(graph)}


@require_GET
@signed_in
def ops_procedure(request: HttpRequest, agent: str, key: str) -> HttpResponse:
    agent_obj = get_agent_for_user(request, agent, for_="operate")
    procedure = get_object_or_404(Procedure.objects.select_related("intent"), agent=agent_obj, key=key)
    versions = list(
        procedure.versions.select_related("approved_by", "approval_eval_run", "tombstone__erased_by").order_by(
            "-number"
        )
    )
    for version in versions:
        version.missing_tools = selectors.version_missing_tools(version, agent_obj)
    events = (
        AuditEvent.objects.filter(procedure=procedure).select_related("actor", "version").order_by("-at", "-id")[:30]
    )
    return render(
        request,
        "reviews/ops/procedure.html",
        {
            "agent": agent_obj,
            "procedure": procedure,
            "versions": versions,
            "active": next((v for v in versions if v.status == Status.ACTIVE), None),
            "can_manage": user_can_manage_procedure(request.user, procedure),
            "events": events,
            **environments_panel(procedure, request.user),
            "tab": "active",
        },
    )


# ---------------------------------------------------------------------------------------------- retire / roll back


def _status_change(request: HttpRequest, pk: int, *, action: str) -> HttpResponse:
    version = get_version_for_user(request, pk, for_="manage")
    agent = version.procedure.agent
    current = selectors.active_version_of(version.procedure)
    context = {
        "agent": agent,
        "version": version,
        "current": current,
        "missing_tools": selectors.version_missing_tools(version, agent),
        "reason": "",
        "error": "",
        "tab": "active",
        "confirm": (
            {
                "button": f"Retire v{version.number}",
                "button_class": "danger",
                "placeholder": "e.g. agents promised refund dates before approval",
            }
            if action == "retire"
            else {
                "button": f"Roll back to v{version.number}",
                "button_class": "primary",
                "placeholder": f"e.g. v{current.number if current else '…'} lowered the resolution rate",
            }
        ),
    }
    context.update(_change_eval_context(version, current, action=action))
    template = "reviews/ops/confirm_retire.html" if action == "retire" else "reviews/ops/confirm_rollback.html"
    status = 200
    expected = Status.ACTIVE if action == "retire" else Status.RETIRED
    if request.method == "GET" and version.status != expected:
        # a stale link: say so instead of offering a button that can only fail
        context["error"] = (
            f"v{version.number} is {version.get_status_display().lower()}; only "
            f"{'the active version can be retired' if action == 'retire' else 'a retired version can be rolled back to'}."
        )
        context["stale"] = True
    if request.method == "POST":
        reason = request.POST.get("reason", "")
        context["reason"] = reason
        service = services.version_retire if action == "retire" else services.version_rollback
        status = decision_status(context, lambda: service(version=version, user=request.user, reason=reason))
        if status == 200:
            if action == "retire":
                messages.success(
                    request, f"Retired {version.procedure.key} v{version.number}. Agents no longer receive it."
                )
            else:
                note = (
                    f" It is refused at load: the agent lacks {', '.join(context['missing_tools'])}."
                    if context["missing_tools"]
                    else " Agents receive it from their next fetch."
                )
                messages.success(request, f"Rolled back {version.procedure.key} to v{version.number}.{note}")
            return redirect("reviews:ops_procedure", agent.name, version.procedure.key)
    return render(request, template, context, status=status)


def _change(
    version: ProcedureVersion, current: ProcedureVersion | None, action: str
) -> tuple[ProcedureVersion | None, str, ProcedureVersion | None]:
    """(the ACTIVE version the change removes, the eval kind, the version that replaces it)."""
    if action == "retire":
        return version, EvalRun.Kind.RETIRE, None
    return current, EvalRun.Kind.ROLLBACK, version


def _change_eval_context(version: ProcedureVersion, current: ProcedureVersion | None, *, action: str) -> dict:
    """The eval of this retirement or rollback for its confirm page: the newest run of exactly this
    change (with its verdict, per-intent numbers and selection), whether it is still on the current
    active set, and whether an eval is needed at all (a retirement forced by a removed tool is not)."""
    removed, kind, replacement = _change(version, current, action)
    if removed is None or removed.status != Status.ACTIVE:
        return {"change_eval": None, "change_eval_possible": False}
    run = services.change_eval_for(removed, kind=kind, replacement=replacement)
    note = services.change_eval_note(removed, kind=kind, replacement=replacement)
    return {
        "change_eval": run,
        "change_eval_possible": True,
        "change_eval_kind": kind,
        "change_eval_forced": note.get("eval") == "not needed",
        "change_eval_counts": bool(isinstance(note.get("eval"), dict)),
        "change_eval_note": note,
    }


def _start_change_eval(request: HttpRequest, pk: int, *, action: str) -> HttpResponse:
    version = get_version_for_user(request, pk, for_="manage")
    current = selectors.active_version_of(version.procedure)
    removed, kind, replacement = _change(version, current, action)
    target = "reviews:ops_retire" if action == "retire" else "reviews:ops_rollback"
    if removed is None:
        messages.error(request, f"{version.procedure.key} has no active version to change.")
        return redirect(target, version.pk)
    try:
        run = evals.eval_run_start_change(version=removed, user=request.user, kind=kind, replacement=replacement)
    except services.LifecycleError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Eval run {run.pk} of this change started.")
    return redirect(reverse(target, args=[version.pk]) + "#change-eval")


@require_POST
@signed_in
def ops_retire_eval(request: HttpRequest, pk: int) -> HttpResponse:
    """Starts the replay with the ACTIVE version removed; its verdict shows on the confirm page."""
    return _start_change_eval(request, pk, action="retire")


@require_POST
@signed_in
def ops_rollback_eval(request: HttpRequest, pk: int) -> HttpResponse:
    """Starts the replay with the ACTIVE version replaced by this retired one (pk)."""
    return _start_change_eval(request, pk, action="roll_back")


@require_http_methods(["GET", "POST"])
@signed_in
def ops_retire(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks for the reason and confirmation; POST retires through version_retire."""
    return _status_change(request, pk, action="retire")


@require_http_methods(["GET", "POST"])
@signed_in
def ops_rollback(request: HttpRequest, pk: int) -> HttpResponse:
    """GET shows what changes (current ACTIVE → this version, and the tool check); POST rolls back."""
    return _status_change(request, pk, action="roll_back")


@require_http_methods(["GET", "POST"])
@signed_in
def ops_erase(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks for the ground, the reason and confirmation; POST erases through version_erase.
    Whoever may see but not manage the procedure gets 403; whoever may not see it, 404."""
    version = get_version_for_user(request, pk, for_="manage")
    agent = version.procedure.agent
    context = {
        "agent": agent,
        "version": version,
        "grounds": VersionTombstone.Ground.choices,
        "ground": request.POST.get("ground", ""),
        "reason": request.POST.get("reason", ""),
        "error": "",
        "stale": version.status == Status.ERASED,
        "tab": "active",
        "confirm": {
            "button": f"Erase v{version.number}",
            "button_class": "danger",
            "placeholder": "e.g. data-subject request 2026-114",
            "reason_hint": "required, kept in the tombstone and the audit log — do not repeat the personal data here",
        },
    }
    if version.status == Status.ERASED:
        # the page of an erased version reports what the erasure did to the copies of its text
        context["sweep"] = erasure_result(version)
        if request.method == "POST" or context["sweep"] is None:
            context["error"] = f"v{version.number} was already erased."
    status = 200
    if request.method == "POST":
        status = decision_status(
            context,
            lambda: services.version_erase(
                version=version, user=request.user, ground=context["ground"], reason=context["reason"]
            ),
        )
        if status == 200:
            result = erasure_result(version)
            copies = sum(count for _label, count in result["rewritten"]) if result else 0
            remaining = len(result["remaining"]) if result else 0
            messages.success(
                request,
                f"Erased {version.procedure.key} v{version.number}: content and evidence wiped, tombstone kept. "
                f"Agents no longer receive it. {copies} stored cop{'y' if copies == 1 else 'ies'} of its text rewritten"
                + (
                    f", {formatting.count(len(result['flagged']), 'later versions')} flagged for review"
                    if result and result["flagged"]
                    else ""
                )
                + (f"; {remaining} still found (see the erase page)." if remaining else "; checked: 0 copies left."),
            )
            return redirect("reviews:ops_procedure", agent.name, version.procedure.key)
    return render(request, "reviews/ops/confirm_erase.html", context, status=status)


def erasure_result(version) -> dict | None:
    """What the erasure sweep of an erased version did, in the words of the erase page."""
    sweep = ErasureSweep.objects.filter(tombstone__version=version).select_related("tombstone").first()
    if sweep is None:
        return None
    models_by_label = {f"{m._meta.app_label}.{m.__name__}": m._meta for m in apps.get_models()}

    def words(label: str, count: int) -> str:
        meta = models_by_label.get(label)
        return label if meta is None else str(meta.verbose_name if count == 1 else meta.verbose_name_plural)

    rewritten = [(words(label, len(pks)), len(pks)) for label, pks in sorted((sweep.rewritten or {}).items())]
    flagged = (
        ProcedureVersion.objects.filter(pk__in=sweep.flagged_versions or [])
        .select_related("procedure")
        .order_by("number")
    )
    return {
        "sweep": sweep,
        "reference": sweep.tombstone.reference,
        "rewritten": rewritten,
        "flagged": flagged,
        "remaining": sweep.remaining or [],
    }


# ---------------------------------------------------------------------------------------------- conflicts


@require_POST
@signed_in
def ops_conflicts_scan(request: HttpRequest, agent: str) -> HttpResponse:
    """The on-demand conflict scan (the scheduled one is library.conflicts_scan_all): the agent's
    admins (manage_agent) only; who may see the agent but not manage it gets 403."""
    agent_obj = get_agent_for_user(request, agent, for_="manage")
    counts = conflicts_scan(agent=agent_obj, user=request.user)
    messages.success(
        request, f"Conflict scan: {counts['open']} open ({counts['opened']} new, {counts['cleared']} cleared)."
    )
    return redirect("reviews:ops_agent", agent_obj.name)


# ---------------------------------------------------------------------------------------------- demotion


@require_POST
@signed_in
def ops_demotion_decide(request: HttpRequest, pk: int, decision: Literal["confirm", "dismiss"]) -> HttpResponse:
    """Confirm (the version is retired through version_retire) or dismiss (it stays ACTIVE) a
    demotion proposal, with a reason; `decision` comes from the URL. Who may not see the agent gets 404; who may see but not manage the procedure, 403."""
    proposal = get_object_or_404(DemotionProposal, pk=pk)
    version = get_version_for_user(request, proposal.version_id, for_="manage")
    service = demotion_confirm if decision == "confirm" else demotion_dismiss
    try:
        service(proposal=proposal, user=request.user, reason=request.POST.get("reason", ""))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("reviews:ops_agent", version.procedure.agent.name)
    except services.LifecycleError as exc:
        messages.error(request, str(exc))
        return redirect("reviews:ops_agent", version.procedure.agent.name)
    verb = "retired" if decision == "confirm" else "kept ACTIVE (proposal dismissed)"
    messages.success(request, f"{version.procedure.key} v{version.number} {verb}.")
    return redirect("reviews:ops_agent", version.procedure.agent.name)


# ---------------------------------------------------------------------------------------------- approver rights


@require_GET
@signed_in
def ops_approvers(request: HttpRequest, agent: str) -> HttpResponse:
    agent_obj = get_agent_for_user(request, agent, for_="operate")
    held = rights.approver_rights(agent_obj)
    named = rights.named_approvers(agent_obj, held)
    procedures = list(Procedure.objects.filter(agent=agent_obj).order_by("key"))
    return render(
        request,
        "reviews/ops/approvers.html",
        {
            "agent": agent_obj,
            "rights": held,
            "agent_approvers": named.get(None, []),
            "procedure_approvers": [(p, named.get(p.key, [])) for p in procedures],
            "approvals": rights.active_approvals(agent_obj),
            "procedures": procedures,
            "can_manage": user_can_manage_agent(request.user, agent_obj),
            "tab": "approvers",
        },
    )


def _rights_change(request: HttpRequest, agent: str, *, grant: bool) -> HttpResponse:
    agent_obj = get_agent_for_user(request, agent, for_="manage")
    try:
        procedure, grantee, reason = approver_right_from_post(request.POST, agent=agent_obj)
        service = rights.approver_right_grant if grant else rights.approver_right_revoke
        service(agent=agent_obj, procedure=procedure, grantee=grantee, by=request.user, reason=reason)
    except ValidationError as exc:
        messages.error(request, "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items()))
        return redirect("reviews:ops_approvers", agent_obj.name)
    target = procedure.key if procedure else f"every procedure of {agent_obj.name}"
    who = f"group {grantee.name}" if isinstance(grantee, Group) else grantee.get_username()
    messages.success(
        request, f"{'Granted' if grant else 'Revoked'}: {who} {'may' if grant else 'may no longer'} approve {target}."
    )
    return redirect("reviews:ops_approvers", agent_obj.name)


@require_POST
@signed_in
def ops_grant(request: HttpRequest, agent: str) -> HttpResponse:
    return _rights_change(request, agent, grant=True)


@require_POST
@signed_in
def ops_revoke(request: HttpRequest, agent: str) -> HttpResponse:
    return _rights_change(request, agent, grant=False)


# ---------------------------------------------------------------------------------------------- audit log


@require_GET
@signed_in
def ops_audit(request: HttpRequest) -> HttpResponse:
    visible = operable_agents(request.user)
    if not request.user.is_superuser and not visible.exists():
        raise Http404("No audit log to show")
    filters = {k: request.GET.get(k, "").strip() for k in AUDIT_FILTERS}
    events = audit_events(request.user, filters)
    page = Paginator(events, AUDIT_PAGE_SIZE).get_page(request.GET.get("page"))
    for event in page:
        event.changes = audit_changes(event)
        event.folded = fold_changes(event.changes)
    query = urlencode({k: v for k, v in filters.items() if v})
    context = {
        "page": page,
        "filters": filters,
        "query": query,
        "agents": visible.values_list("name", flat=True),
        "actions": AuditEvent.Action.choices,
        "tab": "audit",
    }
    template = "reviews/ops/audit.html"
    if getattr(request, "htmx", False) and request.htmx.target == "audit-results":
        template += "#results"
    response = render(request, template, context)
    response["Vary"] = "HX-Request"
    return response


class _Echo:
    """A file-like object csv.writer writes to, returning each row for the streaming response."""

    def write(self, value: str) -> str:
        return value


@require_GET
@signed_in
def ops_audit_csv(request: HttpRequest) -> StreamingHttpResponse:
    if not request.user.is_superuser and not operable_agents(request.user).exists():
        raise Http404("No audit log to export")
    events = audit_events(request.user, {k: request.GET.get(k, "").strip() for k in AUDIT_FILTERS})
    writer = csv.writer(_Echo())
    response = StreamingHttpResponse(
        (writer.writerow(row) for row in audit_csv_rows(events)), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="procmem-audit-{timezone.now():%Y%m%d-%H%M%S}.csv"'
    return response
