"""The review queue: candidates grouped by agent and intent, filtered and sorted, claimed and
released, and rejecting several at once with one reason."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from library.permissions import user_is_reviewer

from .. import selectors
from ..access import get_version_for_user, require_reviewer, signed_in, visible_agents, visible_versions
from ..forms import AssignForm, BulkRejectForm
from ..services import candidate_claim, candidate_release, versions_bulk_reject
from .queue_row import present_rows, queue_rows
from .refusals import form_problems, post_action, posted_form, refuse, safe_next

QUEUE_PAGE_SIZE = 50
DUE_SHOWN = 50


@dataclass(frozen=True)
class QueuePage:
    """One page of the queue, read by keyset (after the previous page's last row): `number` is for
    display, carried in the URL with the cursor; `count` is exact up to selectors.COUNT_CAP per group."""

    number: int
    counts: tuple[int, ...]  # of the groups shown, each capped
    has_next: bool
    next_after: int | None

    @property
    def count(self) -> int:
        return sum(self.counts)

    @property
    def capped(self) -> bool:
        return any(n > selectors.COUNT_CAP for n in self.counts)

    @property
    def count_label(self) -> str:
        return selectors.count_label(*self.counts)

    @property
    def num_pages(self) -> int | None:
        """Known when the count is exact."""
        return None if self.capped else max(1, -(-self.count // QUEUE_PAGE_SIZE))

    @property
    def has_previous(self) -> bool:
        return self.number > 1


def _positive_int(value, default: int | None) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return number if number > 0 else default


def _queue_context(request: HttpRequest, query: QueryDict) -> dict:
    filters = selectors.QueueFilters.from_query(query)
    agents = visible_agents(request)
    groups = selectors.queue_groups(request.user, filters, visible_agents=agents)
    shown = [g for agent in groups for g in agent.intents if selectors.group_selected(g, filters)]
    after = _positive_int(query.get("after"), None)
    pks, has_next = selectors.queue_page(
        request.user, filters, visible_agents=agents, groups=groups, after=after, size=QUEUE_PAGE_SIZE
    )
    number = _positive_int(query.get("page"), 2) if after is not None else 1
    page = QueuePage(
        number=number,
        counts=tuple(g.count for g in shown),
        has_next=has_next,
        next_after=pks[-1] if has_next else None,
    )
    rows = queue_rows(pks)
    can_review = user_is_reviewer(request.user)
    present_rows(rows, user=request.user, can_review=can_review, now=timezone.now())
    here = {**filters.as_query(), **({"after": after, "page": number} if after is not None else {})}
    return {
        "filters": filters,
        "page": page,
        "quarantined_rows": [v for v in rows if v.quarantined],
        "rows": [v for v in rows if not v.quarantined],
        "groups": groups,
        "choices": selectors.filter_choices(visible_agents=agents),
        "sorts": selectors.SORT_LABELS,
        "next_url": reverse("reviews:queue") + "?" + urlencode(here),
        "can_review": can_review,
        "query": urlencode(filters.as_query()),
        "due_for_review": list(
            visible_versions(request)
            .due_for_review(timezone.localdate())
            .select_related("procedure__agent")
            .only("number", "review_by", "procedure__key", "procedure__agent__name")
            .order_by("review_by", "pk")[:DUE_SHOWN]
        ),
    }


@require_GET
@signed_in
@vary_on_headers("HX-Request")
def queue(request: HttpRequest) -> HttpResponse:
    context = _queue_context(request, request.GET)
    template = "reviews/queue.html"
    if request.htmx and not request.htmx.boosted:
        template += "#queue-body"
    return render(request, template, context)


@post_action
def queue_bulk_reject(request: HttpRequest) -> HttpResponse:
    """Rejects the selected candidates with one reason, all or nothing (reviews.services)."""
    require_reviewer(request)
    back = safe_next(request, reverse("reviews:queue"))
    form = BulkRejectForm(request.POST)
    if not form.is_valid():
        return refuse(request, 400, form_problems(form) or "Select at least one candidate and give one reason for all.")
    ids = set(form.cleaned_data["versions"])
    versions = list(visible_versions(request).filter(pk__in=ids).select_related("procedure").order_by("pk"))
    if len(versions) != len(ids):
        raise Http404("Some of the selected candidates do not exist.")
    rejected = versions_bulk_reject(versions=versions, user=request.user, reason=form.cleaned_data["reason"])
    messages.success(
        request,
        f"Rejected {len(rejected)} candidate{'s' if len(rejected) != 1 else ''}: "
        + ", ".join(str(v) for v in rejected),
    )
    if request.htmx:
        return render(
            request, "reviews/queue.html#queue-body", _queue_context(request, QueryDict(urlsplit(back).query))
        )
    return redirect(back)


@post_action
def version_claim(request: HttpRequest, pk: int) -> HttpResponse:
    """Claims the candidate for the signed-in reviewer, or (with an assignee, for the agent's admins)
    assigns it. Back to `next` (the queue or the candidate page)."""
    version = get_version_for_user(request, pk, for_="review")
    username = posted_form(request, AssignForm, invalid="Name a user to assign to.")["assignee"].strip()
    assignee = None
    if username and username != request.user.get_username():
        assignee = get_user_model().objects.filter(username=username, is_active=True).first()
        if assignee is None:
            raise ValidationError(f"There is no active user {username!r}.")
    claim = candidate_claim(version=version, user=request.user, assignee=assignee)
    who = "you" if claim.assignee_id == request.user.pk else claim.assignee.get_username()
    messages.success(request, f"{version} is claimed by {who} until {claim.expires_at:%Y-%m-%d %H:%M} UTC.")
    return redirect(safe_next(request, reverse("reviews:version", kwargs={"pk": version.pk})))


@post_action
def version_release(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_version_for_user(request, pk, for_="review")
    candidate_release(version=version, user=request.user)
    messages.success(request, f"{version} is back in the queue, unclaimed.")
    return redirect(safe_next(request, reverse("reviews:version", kwargs={"pk": version.pk})))
