"""The procedure page (all versions, a diff between any two, its scope, the audit log), stable
links by agent and key, changing the scope, and writing a procedure by hand."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect

from library import services as library_services
from library.models import AuditEvent, Namespace, Procedure, Source, Status
from library.permissions import readable_namespaces, user_can_manage_procedure

from .. import selectors
from ..access import (
    get_agent_for_user,
    get_procedure_for_user,
    get_sibling_version,
    require_reviewer,
    signed_in,
    visible_agents,
)
from ..diff import compare_versions
from ..forms import AgentChoiceForm, ProposeForm, ScopeForm
from .refusals import add_service_errors, post_action, refusals

AUDIT_LIMIT = 200


@require_GET
@signed_in
@vary_on_headers("HX-Request", "HX-Target")
def procedure_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """All versions with status, approver and time; a diff between any two (?a=&b=, a=none: as a
    new procedure); the audit log."""
    procedure = get_procedure_for_user(request, pk, for_="view")
    versions = selectors.versions_of(procedure)
    by_pk = {v.pk: v for v in versions}
    active = next((v for v in versions if v.status == Status.ACTIVE), None)
    right = (
        by_pk[get_sibling_version(procedure, request.GET["b"]).pk]
        if request.GET.get("b")
        else (versions[0] if versions else None)
    )
    a = request.GET.get("a")
    if a == "none":
        left = None
    elif a:
        left = by_pk[get_sibling_version(procedure, a).pk]
    elif active is not None and right is not None and active.pk != right.pk:
        left = active
    else:
        left = next((v for v in versions if right is not None and v.number < right.number), None)
    audit_events = list(
        AuditEvent.objects.filter(procedure=procedure)
        .select_related("actor", "version")
        .order_by("-at", "-id")[:AUDIT_LIMIT]
    )
    context = {
        "procedure": procedure,
        "agent": procedure.agent,
        "versions": versions,
        "active": active,
        "left": left,
        "right": right,
        "fields": compare_versions(left, right) if right is not None else [],
        "audit_events": audit_events,
        "audit_limit": AUDIT_LIMIT,
        "scope_form": _scope_form(procedure, request.user)
        if user_can_manage_procedure(request.user, procedure)
        else None,
        "served_to_agent": procedure.namespace_id == procedure.agent.namespace_id,
    }
    template = "reviews/procedure_detail.html"
    if request.htmx and request.htmx.target == "diff":
        template += "#diff"
    return render(request, template, context)


def _scope_namespaces(procedure: Procedure, user):
    """The namespaces a scope change offers: those the user may read, and the procedure's own."""
    return Namespace.objects.filter(Q(pk__in=readable_namespaces(user).values("pk")) | Q(pk=procedure.namespace_id))


def _scope_form(procedure: Procedure, user) -> ScopeForm:
    return ScopeForm(
        namespaces=_scope_namespaces(procedure, user),
        initial={
            "namespace": procedure.namespace.name,
            "roles": ", ".join(procedure.roles),
            "priority": procedure.priority,
            "confidence": procedure.confidence,
        },
    )


@post_action
def procedure_scope(request: HttpRequest, pk: int) -> HttpResponse:
    """Changes the procedure's namespace, roles, priority and confidence (its managers: 404 for
    those who may not see its operations, 403 for those who may but do not manage it)."""
    procedure = get_procedure_for_user(request, pk, for_="manage")
    form = ScopeForm(request.POST, namespaces=_scope_namespaces(procedure, request.user))
    if not form.is_valid():
        raise ValidationError("; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items()))
    data = form.cleaned_data
    updated = library_services.procedure_scope_update(
        procedure=procedure,
        user=request.user,
        namespace=data["namespace"],
        roles=data["roles"],
        priority=data["priority"],
        confidence=data["confidence"],
        reason=data["reason"],
    )
    messages.success(
        request,
        f"Scope of {updated.key}: namespace {updated.namespace.name}, roles {', '.join(updated.roles) or 'all'}, "
        f"priority {updated.priority}, confidence {updated.confidence}.",
    )
    return redirect("reviews:procedure", pk=updated.pk)


@require_GET
@signed_in
def procedure_by_key(request: HttpRequest, agent: str, key: str) -> HttpResponse:
    """/procedures/<agent>/<id>/ → the procedure page (stable links for docs and chats)."""
    procedure = get_object_or_404(Procedure, agent=get_agent_for_user(request, agent, for_="view"), key=key)
    return redirect("reviews:procedure", pk=procedure.pk)


# ------------------------------------------------------------------------------------------- writing by hand


@require_http_methods(["GET", "POST"])
@signed_in
@refusals
@vary_on_headers("HX-Request")
def procedure_new(request: HttpRequest) -> HttpResponse:
    """Write a procedure by hand: choose the agent (its tools and intents fill the form), then the
    record. It lands in the queue as a CANDIDATE like a mined one (source: written by hand)."""
    require_reviewer(request)
    agents = visible_agents(request)
    agent = None
    if request.method == "POST":
        agent = agents.filter(name=request.POST.get("agent", "")).first()
        if agent is None:
            raise Http404("No such agent")
        agent_form = AgentChoiceForm({"agent": agent.name}, agents=agents)
    else:
        agent_form = AgentChoiceForm(request.GET if request.GET.get("agent") else None, agents=agents)
        if agent_form.is_bound and agent_form.is_valid():
            agent = agent_form.cleaned_data["agent"]
    form = ProposeForm(request.POST if request.method == "POST" else None, agent=agent) if agent else None
    status = 200
    if request.method == "POST" and form is not None:
        if form.is_valid():
            try:
                version = library_services.procedure_propose(
                    agent=agent,
                    intent=form.cleaned_data["intent"],
                    key=form.cleaned_data["key"],
                    source=Source.MANUAL,
                    proposed_by=request.user,
                    reason="Written by hand",
                    **form.content(),
                )
            except ValidationError as exc:
                add_service_errors(form, exc)
            else:
                flagged = " The policy screen quarantined it: see the lint." if version.quarantined else ""
                messages.success(request, f"Proposed {version}; it waits in the queue for review.{flagged}")
                url = reverse("reviews:version", kwargs={"pk": version.pk})
                return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
        status = 400
    template = "reviews/procedure_new.html"
    if request.htmx and request.method == "GET":
        template += "#record-form"
    return render(request, template, {"agent_form": agent_form, "agent": agent, "form": form}, status=status)
