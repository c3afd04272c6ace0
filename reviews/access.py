"""Access to the review workspace: the one sign-in guard, and one helper per object kind.

Every helper takes the request, the object's key and what the user wants to do with it (`for_`):

- "view":    see it. Hidden — a primary key that does not exist, or an object of an agent that
             `library.permissions.agents_visible_to(user)` does not return — is a 404. Every agent is hidden
             from anonymous users. By default every signed-in member of the library sees every
             agent; with read isolation by namespace on (PROCMEM_NAMESPACE_READ_ISOLATION), a user
             who is neither a superuser nor a global reviewer sees only the agents of the
             namespaces they hold a right in. That queryset is the one place visibility narrows.
- "operate": see its operations pages (the active set, approver rights, metrics). Those exist only
             for superusers, reviewers and holders of an object permission on the agent, one of
             its procedures or a namespace it or one of its procedures is in (the rulebook's
             `operable_agents`);
             for everyone else they are a 404.
- "review":  view, and hold the reviewer role (edit, comment, reject, evals, regression cases), or
             for a procedure the review right on its namespace (`user_can_review`): 403.
- "approve": view, and hold the approve object permission on the procedure, its agent or its
             namespace (`library.permissions.user_can_approve`): 403.
- "manage":  operate, and hold the manage permission (retire and roll back a procedure's versions;
             change an agent's tools, eval settings and approver rights): 403.
- "promote": operate, and hold the promote permission (move an approved version between
             environments, start, complete or roll back its rollout): 403.

The rules are the rulebook's (library/permissions.py); this module turns them into 404 and 403.
What a user may not see is a 404; what a user may see but not do is a 403. Whether an action is
possible *now* (the state) is for the services to say, under their row locks.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Literal

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django_htmx.http import HttpResponseClientRedirect

from library import permissions
from library.models import Agent, EvalRun, Procedure, ProcedureVersion, RegressionCase
from library.permissions import (
    operable_agents,
    user_can_approve,
    user_can_manage_agent,
    user_can_manage_procedure,
    user_can_promote,
    user_can_review,
    user_is_reviewer,
)

from .models import Thread, Webhook

if TYPE_CHECKING:
    from reviews.models import Webhook

Purpose = Literal["view", "operate", "review", "approve", "manage", "promote"]

# ---------------------------------------------------------------------------------------------- sign-in


def signed_in(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Django's login_required, except that an htmx request gets HX-Redirect to the sign-in page (a
    plain 302 would be followed by htmx and the sign-in form swapped into a fragment). Either way
    `?next=` is URL-encoded, and for htmx it is the page the fragment was on, not the fragment."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.user.is_authenticated:
            return view(request, *args, **kwargs)
        if getattr(request, "htmx", False):
            current = request.htmx.current_url_abs_path or request.get_full_path()
            return HttpResponseClientRedirect(redirect_to_login(current)["Location"])
        return redirect_to_login(request.get_full_path())

    return wrapper


def require_reviewer(request: HttpRequest) -> None:
    """For actions on no one object (bulk reject, writing a procedure): 403 without the role."""
    if not user_is_reviewer(request.user):
        raise PermissionDenied("Only reviewers may do this.")


# ---------------------------------------------------------------------------------------------- what is visible


def visible_agents(request: HttpRequest) -> QuerySet[Agent]:
    # read through the module: the rulebook's agents_visible_to is the one place visibility narrows
    return permissions.agents_visible_to(request.user)


def every_agent(agents: QuerySet[Agent]) -> bool:
    """Whether `agents` is the whole table, unfiltered (what `agents_visible_to` gives every
    signed-in user by default, and superusers and global reviewers under read isolation by
    namespace; anything it narrows, slices or empties is not)."""
    query = agents.query
    return not (query.where or query.is_sliced or query.combinator or query.distinct)


def of_agents(queryset: QuerySet, agents: QuerySet[Agent], *, through: str = "procedure__agent") -> QuerySet:
    """`queryset` restricted to rows of `agents` (`<through>__in`), except when `agents` is every
    agent: then the condition holds for every row (a non-null foreign key), and leaving it out
    spares PostgreSQL a join to the procedures that, on a search matching thousands of versions,
    cost a scan of every procedure and carried each match's search document through a hash."""
    if every_agent(agents):
        return queryset
    return queryset.filter(**{f"{through}__in": agents})


def visible_versions(request: HttpRequest) -> QuerySet[ProcedureVersion]:
    return of_agents(ProcedureVersion.objects.all(), visible_agents(request))


def _agents_for(request: HttpRequest, for_: Purpose) -> QuerySet[Agent]:
    if for_ not in ("view", "operate", "review", "approve", "manage", "promote"):
        raise ValueError(f"unknown purpose {for_!r}")
    return operable_agents(request.user) if for_ in ("operate", "manage", "promote") else visible_agents(request)


def _refuse_review(request: HttpRequest, what: str) -> None:
    if not user_is_reviewer(request.user):
        raise PermissionDenied(f"{what} are for reviewers." if what else "Only reviewers may do this.")


def _refuse_approve(request: HttpRequest, procedure: Procedure) -> None:
    if not user_can_approve(request.user, procedure):
        raise PermissionDenied(f"You do not hold the approve permission for {procedure.key}.")


def _refuse_manage(request: HttpRequest, procedure: Procedure) -> None:
    if not user_can_manage_procedure(request.user, procedure):
        raise PermissionDenied(
            f"You do not manage {procedure.key}: retiring, rolling back, erasing and changing its scope need the "
            "manage permission on the procedure or its agent."
        )


# ---------------------------------------------------------------------------------------------- one helper per kind


def get_agent_for_user(request: HttpRequest, name: str, *, for_: Purpose) -> Agent:
    agent = get_object_or_404(_agents_for(request, for_), name=name)
    if for_ == "review":
        _refuse_review(request, "Regression cases")
    elif for_ == "approve":
        raise ValueError("approval is per procedure: use get_procedure_for_user or get_version_for_user")
    elif for_ == "manage" and not user_can_manage_agent(request.user, agent):
        raise PermissionDenied(f"Only the admins of {agent.name} may change this.")
    return agent


def get_procedure_for_user(request: HttpRequest, pk: int, *, for_: Purpose) -> Procedure:
    procedure = get_object_or_404(
        Procedure.objects.filter(agent__in=_agents_for(request, for_)).select_related(
            "agent__namespace", "intent", "namespace"
        ),
        pk=pk,
    )
    _check_procedure(request, procedure, for_)
    return procedure


def get_version_for_user(request: HttpRequest, pk: int, *, for_: Purpose) -> ProcedureVersion:
    """The version with its procedure, agent, intent and people selected. Whether approval is
    possible *now* is `library.services.approval_blockers`, not this."""
    version = get_object_or_404(
        ProcedureVersion.objects.filter(procedure__agent__in=_agents_for(request, for_)).select_related(
            "procedure__agent",
            "procedure__intent",
            "procedure__namespace",
            "proposed_by",
            "edited_by",
            "approved_by",
            "mining_run",
        ),
        pk=pk,
    )
    _check_procedure(request, version.procedure, for_)
    return version


def get_sibling_version(procedure: Procedure, pk) -> ProcedureVersion:
    """Another version of the same procedure, for a diff. A version of another procedure is hidden."""
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        raise Http404("No such version") from None
    return get_object_or_404(ProcedureVersion.objects.filter(procedure=procedure).select_related("approved_by"), pk=pk)


def get_eval_run_for_user(request: HttpRequest, pk: int, *, for_: Purpose) -> EvalRun:
    run = get_object_or_404(
        EvalRun.objects.filter(version__procedure__agent__in=_agents_for(request, for_)).select_related(
            "version__procedure__agent", "version__procedure__intent", "version__procedure__namespace", "started_by"
        ),
        pk=pk,
    )
    _check_procedure(request, run.version.procedure, for_)
    return run


def get_case_for_user(request: HttpRequest, pk: int, *, for_: Purpose) -> RegressionCase:
    case = get_object_or_404(
        RegressionCase.objects.filter(agent__in=_agents_for(request, for_)).select_related("agent", "intent"), pk=pk
    )
    if for_ == "review":
        _refuse_review(request, "Regression cases")
    elif for_ in ("approve", "manage"):
        raise ValueError(f"a regression case has no {for_!r}: reviewers edit it")
    return case


def get_thread_for_user(request: HttpRequest, pk: int, *, for_: Purpose):
    """A discussion thread, visible when its version is; "review" (reply, resolve) needs the role."""

    if for_ not in ("view", "review"):
        raise ValueError(f"a thread has no {for_!r}: reviewers discuss")
    thread = get_object_or_404(
        Thread.objects.filter(version__procedure__agent__in=_agents_for(request, for_)).select_related(
            "version__procedure__agent", "version__procedure__intent", "version__procedure__namespace"
        ),
        pk=pk,
    )
    if for_ == "review":
        _check_procedure(request, thread.version.procedure, for_)
    return thread


def _check_procedure(request: HttpRequest, procedure: Procedure, for_: Purpose) -> None:
    if for_ == "review":
        if not user_can_review(request.user, procedure):
            raise PermissionDenied(f"Only reviewers of {procedure.key} may do this.")
    elif for_ == "approve":
        _refuse_approve(request, procedure)
    elif for_ == "manage":
        _refuse_manage(request, procedure)
    elif for_ == "promote" and not user_can_promote(request.user, procedure):
        raise PermissionDenied(
            f"You may not promote versions of {procedure.key} or run its rollouts (the promote permission)."
        )


def get_webhook_for_user(request: HttpRequest, agent: str, pk: int) -> Webhook:
    """A webhook of the agent, for its admins only (webhooks carry the agent's secrets): 404 for
    those who may not see the agent's operations pages, 403 for those who may but do not manage it,
    404 for a webhook of another agent."""

    target = get_agent_for_user(request, agent, for_="manage")
    return get_object_or_404(Webhook.objects.select_related("agent"), agent=target, pk=pk)
