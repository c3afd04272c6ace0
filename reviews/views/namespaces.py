"""Namespaces on the operations pages: every namespace with its agents, procedures and rights
(with read isolation by namespace on: only those the user holds a right in, unless a library admin);
creating one and granting or revoking `review` / `approve` / `manage` on it (library admins).

Access: the page exists for whoever may see the operations pages (superusers, reviewers, holders
of an object permission) and for library admins; for everyone else it is a 404. Creating needs
`library.add_namespace`, granting `library.change_namespace` (403 otherwise); the services check
again under their row locks and write the audit rows.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from library.models import Agent, Namespace
from library.permissions import (
    agents_visible_to,
    readable_namespaces,
    user_can_create_namespaces,
    user_can_grant_namespace_rights,
    user_is_reviewer,
)
from library.services import agent_namespace_set, namespace_create

from .. import rights
from ..access import operable_agents, signed_in
from ..forms import NamespaceForm, grantee_from_post
from .refusals import post_action


def _require_page(request: HttpRequest) -> None:
    user = request.user
    if (
        user.is_superuser
        or user_is_reviewer(user)
        or user_can_create_namespaces(user)
        or user_can_grant_namespace_rights(user)
    ):
        return
    if not operable_agents(user).exists():
        raise Http404("No namespaces to show")


@require_GET
@signed_in
def ops_namespaces(request: HttpRequest) -> HttpResponse:
    _require_page(request)
    user = request.user
    admin = user_can_create_namespaces(user) or user_can_grant_namespace_rights(user)
    # library admins see every namespace (they create them and grant their rights); with read
    # isolation on, everyone else sees only the namespaces they hold a right in, and their agents
    # only as far as they may read them
    shown = Namespace.objects.all() if admin else readable_namespaces(user)
    agents = Agent.objects.all() if admin else agents_visible_to(user)
    namespaces = list(
        shown.annotate(procedure_count=Count("procedures", distinct=True))
        .prefetch_related(Prefetch("agents", queryset=agents.order_by("name")))
        .order_by("name")
    )
    rights_by_namespace: dict[int, list] = {}
    for right in rights.namespace_rights():
        rights_by_namespace.setdefault(right.namespace.pk, []).append(right)
    return render(
        request,
        "reviews/ops/namespaces.html",
        {
            "rows": [(n, rights_by_namespace.get(n.pk, [])) for n in namespaces],
            "can_create": user_can_create_namespaces(request.user),
            "can_grant": user_can_grant_namespace_rights(request.user),
            "rights": list(rights.NAMESPACE_PERMS),
            "form": NamespaceForm(),
            "agents": Agent.objects.select_related("namespace").order_by("name")
            if user_can_grant_namespace_rights(request.user)
            else [],
        },
    )


@post_action
def ops_namespace_create(request: HttpRequest) -> HttpResponse:
    _require_page(request)
    namespace = namespace_create(
        name=request.POST.get("name", ""),
        description=request.POST.get("description", ""),
        user=request.user,
        reason=request.POST.get("reason", "").strip(),
    )
    messages.success(request, f"Namespace {namespace.name} created.")
    return redirect("reviews:ops_namespaces")


def _right_change(request: HttpRequest, *, grant: bool) -> HttpResponse:
    _require_page(request)
    namespace = get_object_or_404(Namespace, name=request.POST.get("namespace", "").strip()[:64])
    if not user_can_grant_namespace_rights(request.user, namespace):
        raise PermissionDenied("Only library admins may grant or revoke rights on namespaces.")
    grantee = grantee_from_post(request.POST)
    right = request.POST.get("right", "")
    service = rights.namespace_right_grant if grant else rights.namespace_right_revoke
    service(
        namespace=namespace,
        grantee=grantee,
        right=right,
        by=request.user,
        reason=request.POST.get("reason", "").strip(),
    )
    who = f"group {grantee.name}" if isinstance(grantee, Group) else grantee.get_username()
    verb = "now holds" if grant else "no longer holds"
    messages.success(request, f"{who} {verb} {right} on every procedure in {namespace.name}.")
    return redirect("reviews:ops_namespaces")


@post_action
def ops_namespace_grant(request: HttpRequest) -> HttpResponse:
    return _right_change(request, grant=True)


@post_action
def ops_namespace_revoke(request: HttpRequest) -> HttpResponse:
    return _right_change(request, grant=False)


@post_action
def ops_agent_namespace(request: HttpRequest) -> HttpResponse:
    """Moves an agent (and its procedures in its old namespace) into another namespace."""
    _require_page(request)
    if not user_can_grant_namespace_rights(request.user):
        raise PermissionDenied("Only library admins may move an agent into another namespace.")
    agent = get_object_or_404(Agent, name=request.POST.get("agent", "").strip()[:64])
    namespace = get_object_or_404(Namespace, name=request.POST.get("namespace", "").strip()[:64])
    moved = agent_namespace_set(
        agent=agent, namespace=namespace, user=request.user, reason=request.POST.get("reason", "")
    )
    messages.success(
        request, f"{agent.name} is now in {namespace.name}, with {moved} procedure{'s' if moved != 1 else ''}."
    )
    return redirect("reviews:ops_namespaces")
