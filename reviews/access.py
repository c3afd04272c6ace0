"""Access helpers: one per object kind, plus the sign-in guard that understands htmx.

What a user may not see is a 404; what a user may see but not change is a 403.

"Hidden" here means: a primary key that does not exist, or an object of an agent that
`Agent.objects.visible_to(user)` does not return (today: every agent is hidden from anonymous users
and visible to every signed-in member of the library; the queryset is the one place to narrow it).
A version addressed through the wrong procedure (a diff against a version of another procedure) is
hidden too. Seeing is not changing: edit, comment, reject, evals and writing procedures need the
reviewer permission, approval the object permission of `library.permissions.user_can_approve`.
"""

from __future__ import annotations

from functools import wraps
from typing import Callable

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, resolve_url
from django_htmx.http import HttpResponseClientRedirect

from library.models import Agent, Procedure, ProcedureVersion
from library.permissions import user_can_approve, user_is_reviewer


def login_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Like Django's, but an htmx request gets an HX-Redirect to the sign-in page (a plain 302
    would be followed by htmx and the sign-in form swapped into a fragment)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.user.is_authenticated:
            return view(request, *args, **kwargs)
        if getattr(request, "htmx", False):
            # Come back to the page the fragment was on, not to the fragment's own URL.
            current = request.htmx.current_url_abs_path or request.get_full_path()
            return HttpResponseClientRedirect(redirect_to_login(current, resolve_url("login"))["Location"])
        return redirect_to_login(request.get_full_path())

    return wrapper


def require_reviewer(request: HttpRequest) -> None:
    if not user_is_reviewer(request.user):
        raise PermissionDenied("Only reviewers may do this.")


def visible_agents(request: HttpRequest):
    return Agent.objects.visible_to(request.user)


def visible_versions(request: HttpRequest):
    return ProcedureVersion.objects.filter(procedure__agent__in=visible_agents(request))


def get_version_for_user(request: HttpRequest, pk: int) -> tuple[ProcedureVersion, bool]:
    """The version (with procedure, agent, intent and people selected) and whether the user holds
    the approve permission for its procedure. 404 when hidden. Whether approval is possible *now*
    is `approval_blockers`; this only says whether the user is an approver of this procedure."""
    version = get_object_or_404(
        visible_versions(request).select_related(
            "procedure__agent", "procedure__intent", "proposed_by", "edited_by", "approved_by", "mining_run"
        ),
        pk=pk,
    )
    return version, user_can_approve(request.user, version.procedure)


def get_procedure_for_user(request: HttpRequest, pk: int) -> tuple[Procedure, bool]:
    procedure = get_object_or_404(
        Procedure.objects.filter(agent__in=visible_agents(request)).select_related("agent", "intent"), pk=pk
    )
    return procedure, user_can_approve(request.user, procedure)


def get_sibling_version(request: HttpRequest, procedure: Procedure, pk) -> ProcedureVersion:
    """Another version of the same procedure, for a diff. A version of another procedure is hidden."""
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        from django.http import Http404

        raise Http404("No such version") from None
    return get_object_or_404(ProcedureVersion.objects.filter(procedure=procedure).select_related("approved_by"), pk=pk)
