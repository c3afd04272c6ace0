"""The candidate page: diff, evidence, eval panel, lint, edit, claim, threads, reject, approve.

Patterns (see STYLE.md): function views; every write is a POST with CSRF that calls a service;
an htmx request gets the page's own fragment (`template + "#partial"`), any other request the full
page (or a redirect after a successful write); every hx-get has an href. Refusals: 404 for what the
user may not see (reviews.access), 403 for what they may see but not change, 409 when the state
does not allow it, 400 for invalid input (reviews.views.refusals).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget

from library import services as library_services
from library.conflicts import conflicts_for_candidate
from library.evals import eval_runs as evals
from library.models import ProcedureVersion, Status
from library.permissions import (
    active_reviewers,
    approve_scope,
    user_can_approve,
    user_can_manage_procedure,
    user_can_review,
)
from library.selectors import environment_set_hash
from library.services import LifecycleError, approval_blockers

from .. import lint as lint_module
from .. import selectors
from ..access import get_thread_for_user, get_version_for_user, signed_in
from ..diff import compare_versions
from ..forms import ApproveForm, CommentForm, RejectForm, ReviseForm, ThreadForm
from ..key_words import figure_items, key_words
from ..models import Comment, Thread
from ..panels import build_eval_panel, build_evidence
from ..services import comment_create, thread_create, thread_reply, thread_set_resolved, user_can_assign
from .refusals import add_service_errors, post_action, posted_form, refusals

# ------------------------------------------------------------------------------------------- the candidate page


def procedure_threads(version: ProcedureVersion) -> list[Thread]:
    """Every thread on every version of the procedure (a discussion outlives an edit), oldest
    first, with their comments: two queries."""
    return list(
        Thread.objects.filter(version__procedure_id=version.procedure_id)
        .select_related("version", "created_by", "resolved_by")
        .prefetch_related(
            Prefetch("comments", queryset=Comment.objects.select_related("author").order_by("created_at", "id"))
        )
    )


def _anchor_choices(version: ProcedureVersion) -> list[tuple[str, str]]:
    """The thread form's anchors in the order of the version's text: each step in place of STEP."""
    choices = []
    for value, label in Thread.Anchor.choices:
        if value == Thread.Anchor.STEP:
            choices += [(f"step:{i}", f"step {i}: {step[:60]}") for i, step in enumerate(version.steps or [], start=1)]
        else:
            choices.append((value, key_words(value) if value else label))
    return choices


def threads_context(version: ProcedureVersion) -> dict:
    threads = procedure_threads(version)
    return {
        "threads": threads,
        "unresolved_threads": sum(1 for t in threads if not t.is_resolved),
        "anchors": _anchor_choices(version),
    }


def claim_context(request: HttpRequest, version: ProcedureVersion) -> dict:
    """Who holds the candidate and what the user may do about it (the services decide again)."""
    if version.status != Status.CANDIDATE:
        return {"claim": None, "can_assign": False}
    claim = selectors.live_claim_of(version, timezone.now())
    can_assign = user_can_assign(request.user, version.procedure.agent)
    context = {"claim": claim, "can_assign": can_assign, "claim_hours": settings.PROCMEM_CLAIM_HOURS}
    if can_assign:
        context["assignable"] = list(active_reviewers().order_by("username").values_list("username", flat=True)[:200])
    return context


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


def _version_context(request: HttpRequest, version: ProcedureVersion) -> dict:
    # Whether the user may approve, from their approve rights as the navigation reads them (one
    # query for the request) rather than six guardian look-ups for each of the two places that
    # ask; approving itself re-checks with guardian (get_version_for_user, version_approve).
    can_approve = approve_scope(request.user).covers(version.procedure)
    siblings = selectors.versions_of(version.procedure)
    active = next((s for s in siblings if s.status == Status.ACTIVE), None)
    base = _diff_base(request, version, active, siblings)
    run = selectors.latest_eval_run(version)
    current_hash = environment_set_hash(version.procedure.agent, run.environment) if run is not None else None
    other_active = [
        lint_module.ActiveProcedure(v.procedure.key, v.number, v.applies_when, v.pk)
        for v in selectors.other_active_versions(version)
    ]
    retired_by_this = None
    if version.status == Status.ACTIVE:
        retired_by_this = next(
            (s for s in siblings if s.status == Status.RETIRED and s.status_reason == f"Replaced by v{version.number}"),
            None,
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
        # the run's counts in the words of the mining run page (one table: reviews.key_words)
        "mining_run_counts": figure_items(version.mining_run.counts or {}) if version.mining_run_id else [],
        "eval": build_eval_panel(version, run, current_set_hash=current_hash),
        "eval_run_url": _url_if_provided(("reviews:eval_detail",), run.pk if run else None),
        "lint": lint_module.lint_version(version, other_active=other_active),
        **threads_context(version),
        **claim_context(request, version),
        "blockers": approval_blockers(version, request.user, acknowledged_conflicts=True, may_approve=can_approve),
        "conflicts": _conflicts(version),
        "can_approve": can_approve,
        "can_review": user_can_review(request.user, version.procedure),
        "can_manage": version.status == Status.ACTIVE and user_can_manage_procedure(request.user, version.procedure),
        "today": timezone.localdate(),
        "next_review_by": library_services.review_by_for(version.procedure.agent),
        "is_candidate": version.status == Status.CANDIDATE,
        "retired_by_this": retired_by_this,
        "newer_candidate": next(
            (s for s in siblings if s.status == Status.CANDIDATE and s.number > version.number), None
        ),
    }


@require_GET
@signed_in
@vary_on_headers("HX-Request", "HX-Target")
def version_detail(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_version_for_user(request, pk, for_="view")
    context = _version_context(request, version)
    template = "reviews/version_detail.html"
    if request.htmx and request.htmx.target in {"diff", "version-page"}:
        template += "#" + request.htmx.target
    return render(request, template, context)


def _conflicts(version: ProcedureVersion) -> list:
    """What approving this candidate would conflict with (library/conflicts.py); shown as warnings
    that the approver must acknowledge, not as blockers."""
    if version.status != Status.CANDIDATE:
        return []
    return conflicts_for_candidate(version)


def _after_write(request: HttpRequest, version: ProcedureVersion, text: str) -> HttpResponse:
    """After a write on the candidate page: htmx gets the page body again (statuses, panels and
    buttons all change), anything else a redirect to the page (post/redirect/get)."""
    messages.success(request, text)
    if request.htmx:
        version = get_version_for_user(request, version.pk, for_="view")
        return render(request, "reviews/version_detail.html#version-page", _version_context(request, version))
    return redirect("reviews:version", pk=version.pk)


@post_action
def version_reject(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_version_for_user(request, pk, for_="review")
    reason = posted_form(request, RejectForm, invalid="A rejection needs a reason.")["reason"]
    library_services.version_reject(version=version, user=request.user, reason=reason)
    return _after_write(request, version, f"Rejected {version}.")


@post_action
def version_review_confirm(request: HttpRequest, pk: int) -> HttpResponse:
    """A re-review that keeps an ACTIVE version: its review-by date moves on (version_review_confirm)."""
    version = get_version_for_user(request, pk, for_="approve")
    version = library_services.version_review_confirm(
        version=version, user=request.user, comment=request.POST.get("comment", "")
    )
    return _after_write(request, version, f"Reviewed {version}; next review by {version.review_by:%Y-%m-%d}.")


@post_action
def version_comment(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_version_for_user(request, pk, for_="review")
    comment_create(
        version=version,
        user=request.user,
        body=posted_form(request, CommentForm, invalid="A comment cannot be empty.")["body"],
    )
    return _after_thread_write(request, version, "Comment added.")


def _after_thread_write(
    request: HttpRequest, version: ProcedureVersion, text: str, anchor: str = "comments"
) -> HttpResponse:
    if request.htmx:
        # the decision panel's unresolved count goes along out of band
        context = {
            "version": version,
            "can_review": True,
            "oob_threads": True,
            "is_candidate": version.status == Status.CANDIDATE,
            **threads_context(version),
        }
        return render(request, "reviews/version_detail.html#comments", context)
    messages.success(request, text)
    return redirect(reverse("reviews:version", kwargs={"pk": version.pk}) + "#" + anchor)


@post_action
def version_thread_create(request: HttpRequest, pk: int) -> HttpResponse:
    """Opens a thread on the whole version, a field or a step; @mentions notify."""
    version = get_version_for_user(request, pk, for_="review")
    form = ThreadForm(request.POST)
    if not form.is_valid():
        raise ValidationError(" ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    anchor, step = form.cleaned_data["anchor"]
    thread = thread_create(version=version, user=request.user, body=form.cleaned_data["body"], anchor=anchor, step=step)
    return _after_thread_write(request, version, f"Thread opened on {thread.anchor_label}.", f"thread-{thread.pk}")


@post_action
def thread_reply_view(request: HttpRequest, pk: int) -> HttpResponse:
    thread = get_thread_for_user(request, pk, for_="review")
    body = posted_form(request, CommentForm, invalid="A reply cannot be empty.")["body"]
    thread_reply(thread=thread, user=request.user, body=body)
    return _after_thread_write(request, thread.version, "Reply added.", f"thread-{thread.pk}")


@post_action
def thread_resolve(request: HttpRequest, pk: int) -> HttpResponse:
    thread = get_thread_for_user(request, pk, for_="review")
    thread_set_resolved(thread=thread, user=request.user, resolved=True)
    return _after_thread_write(
        request, thread.version, f"Thread on {thread.anchor_label} resolved.", f"thread-{thread.pk}"
    )


@post_action
def thread_reopen(request: HttpRequest, pk: int) -> HttpResponse:
    thread = get_thread_for_user(request, pk, for_="review")
    thread_set_resolved(thread=thread, user=request.user, resolved=False)
    return _after_thread_write(
        request, thread.version, f"Thread on {thread.anchor_label} reopened.", f"thread-{thread.pk}"
    )


@require_http_methods(["GET", "POST"])
@signed_in
@refusals
@vary_on_headers("HX-Request")
def version_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """An edit creates a new CANDIDATE version (version_revise); evals of the old content no longer
    count. Editing an ACTIVE or RETIRED version proposes its successor."""
    version = get_version_for_user(request, pk, for_="review")
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
                add_service_errors(form, exc)
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
@signed_in
@refusals
@vary_on_headers("HX-Request")
def version_approve(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the explicit confirmation. POST: approve. The POST re-checks everything whatever the page
    showed: the object permission and the four-eyes rule (403, the service's reasons), then the state — eval, quarantine,
    steps, tools (409, from version_approve under the row lock)."""
    version = get_version_for_user(request, pk, for_="approve" if request.method == "POST" else "view")
    form = ApproveForm(request.POST if request.method == "POST" else None)
    if request.method == "POST":
        user = request.user
        # the four-eyes rule is the service's (services.approval.four_eyes_blockers, checked again
        # under the row lock); the page only turns its reason into a 403
        wrote_it = library_services.four_eyes_blockers(version, user)
        if wrote_it:
            raise PermissionDenied(" ".join(wrote_it))
        if form.is_valid():
            approved = library_services.version_approve(
                version=version,
                user=user,
                comment=form.cleaned_data["comment"],
                acknowledge_conflicts=form.cleaned_data["acknowledge_conflicts"],
            )
            if approved.status == Status.APPROVED:
                return _after_write(
                    request,
                    version,
                    f"Approved {version}: it is in staging; production keeps its version until it is promoted.",
                )
            return _after_write(
                request, version, f"Approved {version}: it is now ACTIVE for {version.procedure.agent}."
            )
    can_approve = user_can_approve(request.user, version.procedure)
    context = {
        "version": version,
        "form": form,
        # conflicts are not blockers here: the form asks the approver to acknowledge them
        "blockers": approval_blockers(version, request.user, acknowledged_conflicts=True, may_approve=can_approve),
        "conflicts": _conflicts(version),
        "can_approve": can_approve,
        "active": selectors.active_version_of(version.procedure),
        "unresolved_threads": Thread.objects.filter(
            version__procedure_id=version.procedure_id, resolved_at__isnull=True
        ).count(),
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


def eval_panel_context(request: HttpRequest, version: ProcedureVersion) -> dict:
    """The eval panel of the candidate page (its own fragment, polled while a run is unfinished)."""
    run = selectors.latest_eval_run(version)
    current_hash = environment_set_hash(version.procedure.agent, run.environment) if run is not None else None
    panel = build_eval_panel(version, run, current_set_hash=current_hash)
    context = {
        "version": version,
        "eval": panel,
        "eval_run_url": _url_if_provided(("reviews:eval_detail",), run.pk if run else None),
        "can_review": user_can_review(request.user, version.procedure),
        "can_manage": version.status == Status.ACTIVE and user_can_manage_procedure(request.user, version.procedure),
        "is_candidate": version.status == Status.CANDIDATE,
    }
    if not panel.in_progress:
        # A finished run may have made approval possible (or not): the decision panel goes along
        # out of band so that the button and its reasons match the verdict just shown.
        context.update(
            refresh_decision=True,
            blockers=approval_blockers(version, request.user, acknowledged_conflicts=True),
            conflicts=_conflicts(version),
            can_approve=user_can_approve(request.user, version.procedure),
            siblings=selectors.versions_of(version.procedure),
            unresolved_threads=Thread.objects.filter(
                version__procedure_id=version.procedure_id, resolved_at__isnull=True
            ).count(),
            **claim_context(request, version),
        )
    return context


@require_GET
@signed_in
@vary_on_headers("HX-Request")
def version_eval_panel(request: HttpRequest, pk: int) -> HttpResponse:
    """The eval panel alone: polled by htmx while a run is queued or running."""
    version = get_version_for_user(request, pk, for_="view")
    if not request.htmx:
        return redirect(reverse("reviews:version", kwargs={"pk": version.pk}) + "#eval")
    return render(request, "reviews/version_detail.html#eval-panel", eval_panel_context(request, version))


@post_action
def version_eval_start(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_version_for_user(request, pk, for_="review")
    run = evals.eval_run_start(version=version, user=request.user)
    if request.htmx:
        return render(request, "reviews/version_detail.html#eval-panel", eval_panel_context(request, version))
    messages.success(request, f"Eval run {run.pk} started.")
    return redirect(reverse("reviews:version", kwargs={"pk": version.pk}) + "#eval")
