"""The search page: procedures, versions, candidates and comments, with the queue's filters and a
status filter; results ranked and highlighted (reviews/search.py)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.functional import cached_property
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from library.models import Status

from .. import search, selectors
from ..access import signed_in, visible_agents

SEARCH_PAGE_SIZE = 25


class CappedPaginator(Paginator):
    """Counts at most COUNT_CAP matches (one count over at most that many rows, however many
    match): the pages stop there, and `capped` says that more matched."""

    @cached_property
    def _capped_count(self) -> int:
        return selectors.capped_count(self.object_list)

    @property
    def count(self) -> int:  # type: ignore[override]
        return min(self._capped_count, selectors.COUNT_CAP)

    @property
    def capped(self) -> bool:
        return self._capped_count > selectors.COUNT_CAP

    @property
    def count_label(self) -> str:
        return f"{self.count:,}+" if self.capped else f"{self.count:,}"


@require_GET
@signed_in
@vary_on_headers("HX-Request")
def search_page(request: HttpRequest) -> HttpResponse:
    terms = search.parse_query(request.GET.get("q", ""))
    filters = search.SearchFilters.from_query(request.GET)
    agents = visible_agents(request)
    pks, query = search.matching_versions(request.user, terms, filters, visible_agents=agents)
    page = CappedPaginator(pks, SEARCH_PAGE_SIZE).get_page(request.GET.get("page"))
    hits = search.search_hits(list(page.object_list), terms, query) if not terms.is_empty else []
    context = {
        "terms": terms,
        "filters": filters,
        "page": page,
        "hits": hits,
        "choices": selectors.filter_choices(visible_agents=agents),
        "statuses": Status.choices,
        "query": urlencode({**filters.as_query(), "q": terms.text}),
    }
    template = "reviews/search.html"
    if request.htmx and not request.htmx.boosted:
        template += "#results"
    return render(request, template, context)
