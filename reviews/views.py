"""The review workspace: the queue, the candidate page (diff, evidence, eval, lint, edit, comments,
reject, approve), the procedure page and writing a procedure by hand.

Patterns (see STYLE.md): function views; every write is a POST with CSRF that calls a service;
an htmx request gets the page's own fragment (`template + "#partial"`), any other request the full
page (or a redirect after a successful write); every hx-get has an href. Refusals: 404 for what the
user may not see (reviews.access), 403 for what they may see but not change, 409 when the state
does not allow it, 400 for invalid input — for htmx requests as a message retargeted to #flash.
"""

from __future__ import annotations

from functools import wraps
from typing import Callable
from urllib.parse import urlencode, urlsplit

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget

from library import services as library_services
from library.models import AuditEvent, EvalRun, Procedure, ProcedureVersion, Source, Status
from library.permissions import user_is_reviewer
from library.selectors import active_set_hash
from library.services import LifecycleError, approval_blockers

from . import lint as lint_module
from . import selectors
from .access import (
    get_procedure_for_user,
    get_sibling_version,
    get_version_for_user,
    login_required,
    require_reviewer,
    visible_agents,
    visible_versions,
)
from .diff import compare_versions
from .forms import AgentChoiceForm, ApproveForm, BulkRejectForm, CommentForm, ProposeForm, RejectForm, ReviseForm
from .models import Comment
from .panels import build_eval_panel, build_evidence
from .services import comment_create, versions_bulk_reject

QUEUE_PAGE_SIZE = 50
AUDIT_LIMIT = 200
# The services name the record's fields; the forms use Python names.
_FORM_FIELD = {"appliesWhen": "applies_when", "requiredTools": "required_tools", "forbiddenActions": "forbidden_actions"}


# ------------------------------------------------------------------------------------------- refusals


def _error_text(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        if hasattr(exc, "error_dict"):
            return " ".join(f"{field}: {' '.join(msgs)}" for field, msgs in exc.message_dict.items())
        return " ".join(exc.messages)
    return str(exc) or exc.__class__.__name__


def refuse(request: HttpRequest, status: int, message: str) -> HttpResponse:
    """A refusal the user can read: for htmx a message swapped into #flash (so that it does not
    replace the fragment the request targeted), otherwise a page."""
    if request.htmx:
        response = render(request, "reviews/_flash.html", {"level": "error", "text": message}, status=status)
        return reswap(retarget(response, "#flash"), "innerHTML")
    return render(request, "reviews/refused.html", {"status": status, "text": message}, status=status)


def refusals(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Turns the services' refusals into responses: PermissionDenied → 403, LifecycleError → 409,
    ValidationError → 400. Http404 passes through (hidden stays hidden)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except PermissionDenied as exc:
            return refuse(request, 403, str(exc) or "You may not do this.")
        except LifecycleError as exc:
            return refuse(request, 409, _error_text(exc))
        except ValidationError as exc:
            return refuse(request, 400, _error_text(exc))

    return wrapper


def _add_service_errors(form, exc: ValidationError) -> None:
    errors = exc.message_dict if hasattr(exc, "error_dict") else {"__all__": exc.messages}
    for field, messages_ in errors.items():
        target = _FORM_FIELD.get(field, field)
        form.add_error(target if target in form.fields else None, messages_)


def _safe_next(request: HttpRequest, fallback: str) -> str:
    candidate = request.POST.get("next") or request.GET.get("next") or ""
    if candidate and url_has_allowed_host_and_scheme(candidate, {request.get_host()}, require_https=request.is_secure()):
        return candidate
    return fallback


# ------------------------------------------------------------------------------------------- the queue


class _CountedPaginator(Paginator):
    """A paginator told its count: the groups query has already counted the filtered queue."""

    def __init__(self, object_list, per_page, *, count: int):
        super().__init__(object_list, per_page)
        self._known_count = count

    @property
    def count(self) -> int:  # type: ignore[override]
        return self._known_count


def _queue_context(request: HttpRequest, query: QueryDict) -> dict:
    filters = selectors.QueueFilters.from_query(query)
    agents = visible_agents(request)
    groups = selectors.queue_groups(request.user, filters, visible_agents=agents)
    total = sum(
        g.count
        for agent in groups
        for g in agent.intents
        if (not filters.agent or g.agent == filters.agent) and (not filters.intent or g.intent == filters.intent)
    )
    queue_qs = selectors.candidate_queue(request.user, filters, visible_agents=agents)
    page = _CountedPaginator(queue_qs, QUEUE_PAGE_SIZE, count=total).get_page(query.get("page"))
    rows = selectors.queue_rows(list(page.object_list))
    return {
        "filters": filters,
        "page": page,
        "quarantined_rows": [v for v in rows if v.quarantined],
        "rows": [v for v in rows if not v.quarantined],
        "groups": groups,
        "choices": selectors.filter_choices(visible_agents=agents),
        "sorts": selectors.SORT_LABELS,
        "can_review": user_is_reviewer(request.user),
        "query": urlencode(filters.as_query()),
    }


@require_GET
@login_required
@vary_on_headers("HX-Request")
def queue(request: HttpRequest) -> HttpResponse:
    context = _queue_context(request, request.GET)
    template = "reviews/queue.html"
    if request.htmx and not request.htmx.boosted:
        template += "#queue-body"
    return render(request, template, context)


@require_POST
@login_required
@refusals
def queue_bulk_reject(request: HttpRequest) -> HttpResponse:
    """Rejects the selected candidates with one reason, all or nothing (reviews.services)."""
    require_reviewer(request)
    back = _safe_next(request, reverse("reviews:queue"))
    form = BulkRejectForm(request.POST)
    if not form.is_valid():
        return refuse(request, 400, "Select at least one candidate and give one reason for all.")
    ids = set(form.cleaned_data["versions"])
    versions = list(visible_versions(request).filter(pk__in=ids).select_related("procedure").order_by("pk"))
    if len(versions) != len(ids):
        raise Http404("Some of the selected candidates do not exist.")
    rejected = versions_bulk_reject(versions=versions, user=request.user, reason=form.cleaned_data["reason"])
    messages.success(
        request, f"Rejected {len(rejected)} candidate{'s' if len(rejected) != 1 else ''}: " + ", ".join(str(v) for v in rejected)
    )
    if request.htmx:
        return render(request, "reviews/queue.html#queue-body", _queue_context(request, QueryDict(urlsplit(back).query)))
    return redirect(back)


# ------------------------------------------------------------------------------------------- the candidate page


def _diff_base(request: HttpRequest, version: ProcedureVersion, active: ProcedureVersion | None, siblings):
    """What the diff compares against: ?against=<pk> (a version of the same procedure, else 404),
    else the ACTIVE version, else the version this one was edited from, else the previous one;
    None means "new procedure"."""
    against = request.GET.get("against")
    if against:
        try:
            chosen = next((s for s in siblings if s.pk == int(against) and s.pk != version.pk), None)
        except ValueError:
            chosen = None
        if chosen is None:
            raise Http404("No such other version of this procedure")
        return chosen
    if active is not None and active.pk != version.pk:
        return active
    if version.based_on_id:
        return next((s for s in siblings if s.pk == version.based_on_id), None)
    if version.status != Status.CANDIDATE:
        # an ACTIVE, RETIRED or REJECTED version: what it changed relative to the one before
        return next((s for s in siblings if s.number < version.number), None)
    return None


def _url_if_provided(names: tuple[str, ...], pk: int | None) -> str | None:
    """The URL of a page another part of the app provides (the mining run's, an eval run's), or
    None where it does not exist (yet)."""
    if pk is None:
        return None
    for name in names:
        try:
            return reverse(name, kwargs={"pk": pk})
        except NoReverseMatch:
            continue
    return None


def _mining_run_url(version: ProcedureVersion) -> str | None:
    return _url_if_provided(("reviews:mining_run", "reviews:mining_run_detail"), version.mining_run_id)


def _version_context(request: HttpRequest, version: ProcedureVersion, can_approve: bool) -> dict:
    siblings = selectors.versions_of(version.procedure)
    active = next((s for s in siblings if s.status == Status.ACTIVE), None)
    base = _diff_base(request, version, active, siblings)
    run = selectors.latest_eval_run(version)
    current_hash = active_set_hash(version.procedure.agent) if run is not None else None
    other_active = [
        lint_module.ActiveProcedure(v.procedure.key, v.number, v.applies_when) for v in selectors.other_active_versions(version)
    ]
    retired_by_this = None
    if version.status == Status.ACTIVE:
        retired_by_this = next(
            (s for s in siblings if s.status == Status.RETIRED and s.status_reason == f"Replaced by v{version.number}"), None
        )
    return {
        "version": version,
        "procedure": version.procedure,
        "agent": version.procedure.agent,
        "active": active,
        "base": base,
        "siblings": siblings,
        "fields": compare_versions(base, version),
        "evidence": build_evidence(version, selectors.evidence_sessions(version)),
        "mining_run_url": _mining_run_url(version),
        "eval": build_eval_panel(version, run, current_active_hash=current_hash),
        "eval_run_url": _url_if_provided(("reviews:eval_detail",), run.pk if run else None),
        "lint": lint_module.lint_version(version, other_active=other_active),
        "comments": list(Comment.objects.filter(version__procedure=version.procedure).select_related("author", "version")),
        "blockers": approval_blockers(version, request.user),
        "can_approve": can_approve,
        "can_review": user_is_reviewer(request.user),
        "is_candidate": version.status == Status.CANDIDATE,
        "retired_by_this": retired_by_this,
        "newer_candidate": next((s for s in siblings if s.status == Status.CANDIDATE and s.number > version.number), None),
    }


@require_GET
@login_required
@vary_on_headers("HX-Request", "HX-Target")
def version_detail(request: HttpRequest, pk: int) -> HttpResponse:
    version, can_approve = get_version_for_user(request, pk)
    context = _version_context(request, version, can_approve)
    template = "reviews/version_detail.html"
    if request.htmx and request.htmx.target in {"diff", "version-page"}:
        template += "#" + request.htmx.target
    return render(request, template, context)


def _after_write(request: HttpRequest, version: ProcedureVersion, text: str) -> HttpResponse:
    """After a write on the candidate page: htmx gets the page body again (statuses, panels and
    buttons all change), anything else a redirect to the page (post/redirect/get)."""
    messages.success(request, text)
    if request.htmx:
        version, can_approve = get_version_for_user(request, version.pk)
        return render(request, "reviews/version_detail.html#version-page", _version_context(request, version, can_approve))
    return redirect("reviews:version", pk=version.pk)


@require_POST
@login_required
@refusals
def version_reject(request: HttpRequest, pk: int) -> HttpResponse:
    version, _ = get_version_for_user(request, pk)
    require_reviewer(request)
    form = RejectForm(request.POST)
    if not form.is_valid():
        return refuse(request, 400, "A rejection needs a reason.")
    library_services.version_reject(version=version, user=request.user, reason=form.cleaned_data["reason"])
    return _after_write(request, version, f"Rejected {version}.")


@require_POST
@login_required
@refusals
def version_comment(request: HttpRequest, pk: int) -> HttpResponse:
    version, _ = get_version_for_user(request, pk)
    require_reviewer(request)
    form = CommentForm(request.POST)
    if not form.is_valid():
        return refuse(request, 400, "A comment cannot be empty.")
    comment_create(version=version, user=request.user, body=form.cleaned_data["body"])
    if request.htmx:
        comments = Comment.objects.filter(version__procedure=version.procedure).select_related("author", "version")
        context = {"version": version, "comments": list(comments), "can_review": True}
        return render(request, "reviews/version_detail.html#comments", context)
    messages.success(request, "Comment added.")
    return redirect(reverse("reviews:version", kwargs={"pk": version.pk}) + "#comments")


@require_http_methods(["GET", "POST"])
@login_required
@refusals
@vary_on_headers("HX-Request")
def version_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """An edit creates a new CANDIDATE version (version_revise); evals of the old content no longer
    count. Editing an ACTIVE or RETIRED version proposes its successor."""
    version, _ = get_version_for_user(request, pk)
    require_reviewer(request)
    if version.status == Status.REJECTED:
        raise LifecycleError(f"{version} was rejected; edit the current candidate or write a new version instead.")
    form = ReviseForm.for_version(version, request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                new_version = library_services.version_revise(
                    version=version, user=request.user, reason=form.cleaned_data["reason"], **form.content()
                )
            except ValidationError as exc:
                _add_service_errors(form, exc)
            except LifecycleError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(
                    request,
                    f"Saved as {new_version}. It needs its own eval run: runs of v{version.number} judged other content and no longer count.",
                )
                url = reverse("reviews:version", kwargs={"pk": new_version.pk})
                return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
        status = 400
    template = "reviews/version_edit.html"
    if request.htmx:
        template += "#edit-form"
    context = {"version": version, "form": form, "eval_run": selectors.latest_eval_run(version)}
    return render(request, template, context, status=status)


@require_http_methods(["GET", "POST"])
@login_required
@refusals
@vary_on_headers("HX-Request")
def version_approve(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the explicit confirmation. POST: approve. The POST re-checks everything whatever the page
    showed: the object permission and the four-eyes rule (403), then the state — eval, quarantine,
    steps, tools (409, from version_approve under the row lock)."""
    version, can_approve = get_version_for_user(request, pk)
    form = ApproveForm(request.POST if request.method == "POST" else None)
    if request.method == "POST":
        user = request.user
        if not can_approve:
            raise PermissionDenied(f"You do not hold the approve permission for {version.procedure.key}.")
        if user.pk in {version.proposed_by_id, version.edited_by_id}:
            raise PermissionDenied("You proposed or last edited this version; another approver must decide (four-eyes rule).")
        if form.is_valid():
            library_services.version_approve(version=version, user=user, comment=form.cleaned_data["comment"])
            return _after_write(request, version, f"Approved {version}: it is now ACTIVE for {version.procedure.agent}.")
    context = {
        "version": version,
        "form": form,
        "blockers": approval_blockers(version, request.user),
        "can_approve": can_approve,
        "active": selectors.active_version_of(version.procedure),
    }
    template = "reviews/version_approve.html"
    if request.htmx:
        template += "#approve-confirm"
    response = render(request, template, context, status=400 if request.method == "POST" else 200)
    if request.htmx:
        # the confirmation lives in the decision panel, whatever the triggering element targeted
        response = reswap(retarget(response, "#decision"), "innerHTML")
    return response


# ------------------------------------------------------------------------------------------- the eval panel


def _eval_panel_context(request: HttpRequest, version: ProcedureVersion, can_approve: bool) -> dict:
    run = selectors.latest_eval_run(version)
    current_hash = active_set_hash(version.procedure.agent) if run is not None else None
    panel = build_eval_panel(version, run, current_active_hash=current_hash)
    context = {
        "version": version,
        "eval": panel,
        "eval_run_url": _url_if_provided(("reviews:eval_detail",), run.pk if run else None),
        "can_review": user_is_reviewer(request.user),
        "is_candidate": version.status == Status.CANDIDATE,
    }
    if not panel.in_progress:
        # A finished run may have made approval possible (or not): the decision panel goes along
        # out of band so that the button and its reasons match the verdict just shown.
        context.update(
            refresh_decision=True,
            blockers=approval_blockers(version, request.user),
            can_approve=can_approve,
            siblings=selectors.versions_of(version.procedure),
        )
    return context


@require_GET
@login_required
@vary_on_headers("HX-Request")
def version_eval_panel(request: HttpRequest, pk: int) -> HttpResponse:
    """The eval panel alone: polled by htmx while a run is queued or running."""
    version, can_approve = get_version_for_user(request, pk)
    if not request.htmx:
        return redirect(reverse("reviews:version", kwargs={"pk": version.pk}) + "#eval")
    return render(request, "reviews/version_detail.html#eval-panel", _eval_panel_context(request, version, can_approve))


@require_POST
@login_required
@refusals
def version_eval_start(request: HttpRequest, pk: int) -> HttpResponse:
    version, can_approve = get_version_for_user(request, pk)
    require_reviewer(request)
    from library.evals.runs import eval_run_start

    run = eval_run_start(version=version, user=request.user)
    if request.htmx:
        return render(request, "reviews/version_detail.html#eval-panel", _eval_panel_context(request, version, can_approve))
    messages.success(request, f"Eval run {run.pk} started.")
    return redirect(reverse("reviews:version", kwargs={"pk": version.pk}) + "#eval")


@require_POST
@login_required
@refusals
def version_eval_cancel(request: HttpRequest, pk: int, run_pk: int) -> HttpResponse:
    version, can_approve = get_version_for_user(request, pk)
    require_reviewer(request)
    run = EvalRun.objects.filter(version=version, pk=run_pk).first()
    if run is None:
        raise Http404("No such eval run of this version")
    from library.evals.runs import eval_run_cancel

    eval_run_cancel(run=run, user=request.user)
    if request.htmx:
        return render(request, "reviews/version_detail.html#eval-panel", _eval_panel_context(request, version, can_approve))
    messages.info(request, f"Eval run {run.pk} cancelled.")
    return redirect(reverse("reviews:version", kwargs={"pk": version.pk}) + "#eval")


# ------------------------------------------------------------------------------------------- the procedure page


@require_GET
@login_required
@vary_on_headers("HX-Request", "HX-Target")
def procedure_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """All versions with status, approver and time; a diff between any two (?a=&b=, a=none: as a
    new procedure); the audit log."""
    procedure, _ = get_procedure_for_user(request, pk)
    versions = selectors.versions_of(procedure)
    by_pk = {v.pk: v for v in versions}
    active = next((v for v in versions if v.status == Status.ACTIVE), None)
    right = by_pk[get_sibling_version(request, procedure, request.GET["b"]).pk] if request.GET.get("b") else (versions[0] if versions else None)
    a = request.GET.get("a")
    if a == "none":
        left = None
    elif a:
        left = by_pk[get_sibling_version(request, procedure, a).pk]
    elif active is not None and right is not None and active.pk != right.pk:
        left = active
    else:
        left = next((v for v in versions if right is not None and v.number < right.number), None)
    audit_events = list(
        AuditEvent.objects.filter(procedure=procedure).select_related("actor", "version").order_by("-at", "-id")[:AUDIT_LIMIT]
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
    }
    template = "reviews/procedure_detail.html"
    if request.htmx and request.htmx.target == "diff":
        template += "#diff"
    return render(request, template, context)


@require_GET
@login_required
def procedure_by_key(request: HttpRequest, agent: str, key: str) -> HttpResponse:
    """/procedures/<agent>/<id>/ → the procedure page (stable links for docs and chats)."""
    procedure = Procedure.objects.filter(agent__in=visible_agents(request), agent__name=agent, key=key).first()
    if procedure is None:
        raise Http404("No such procedure")
    return redirect("reviews:procedure", pk=procedure.pk)


# ------------------------------------------------------------------------------------------- writing by hand


@require_http_methods(["GET", "POST"])
@login_required
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
                _add_service_errors(form, exc)
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
