"""Search across procedures, versions, candidates and comments: PostgreSQL full text (stemmed words,
exact identifiers), the SQLite fallback, the queue's filters, escaped highlighting, visibility, and
a constant number of queries."""

from __future__ import annotations

import pytest
from django.urls import reverse

from library import services
from library.models import Agent, ProcedureVersion, Source, Status
from reviews.search import highlight, parse_query
from reviews.services import candidate_claim, thread_create
from tests.reviews.conftest import bulk_candidates, client_for

pytestmark = pytest.mark.django_db
SEARCH = "/search/"


def _keys(response) -> list[str]:
    return [hit.version.procedure.key for hit in response.context["hits"]]


@pytest.fixture
def library(agent, intent, candidate, other_procedure, proposer):
    """refund.over_limit (candidate), order.status (candidate), and a near neighbour whose tool and
    id share parts with the first: createApprovalDraft, refund.under_limit."""
    services.procedure_propose(
        agent=agent,
        intent=intent,
        key="refund.under_limit",
        applies_when="The customer asks for a small refund the agent may grant itself.",
        steps=[
            "Look up the order with lookupOrder({{order_id}}).",
            "Draft it with createApprovalDraft({{order_id}}).",
            "Reply with replyTemplates('done').",
        ],
        required_tools=["lookupOrder", "replyTemplates"],
        forbidden_actions=[],
        source=Source.MANUAL,
        proposed_by=proposer,
    )
    return candidate


def test_parse_query_separates_identifiers_from_words():
    terms = parse_query("  refunds over `createApproval`, refund.over_limit (order_id) the limit ")
    assert terms.identifiers == ("createApproval", "refund.over_limit", "order_id")
    assert terms.words == "refunds over the limit"
    assert parse_query("   ").is_empty


def test_words_find_the_procedure_about_refunds_over_the_limit(reviewer_client, library):
    response = reviewer_client.get(SEARCH, {"q": "refunds over the limit"})
    assert response.status_code == 200
    assert _keys(response)[0] == "refund.over_limit"
    assert "order.status" not in _keys(response)


def test_tool_names_and_ids_match_exactly(reviewer_client, library):
    assert _keys(reviewer_client.get(SEARCH, {"q": "createApproval"})) == ["refund.over_limit"]
    assert _keys(reviewer_client.get(SEARCH, {"q": "refund.over_limit"})) == ["refund.over_limit"]
    assert _keys(reviewer_client.get(SEARCH, {"q": "refund.under_limit"})) == ["refund.under_limit"]
    assert sorted(_keys(reviewer_client.get(SEARCH, {"q": "lookupOrder"}))) == [
        "order.status",
        "refund.over_limit",
        "refund.under_limit",
    ]


def test_an_identifier_never_matches_a_longer_name_or_its_parts(reviewer_client, library):
    # createApprovalDraft contains createApproval, refund.under_limit shares refund and limit
    assert _keys(reviewer_client.get(SEARCH, {"q": "createApprovalDraft"})) == ["refund.under_limit"]
    assert _keys(reviewer_client.get(SEARCH, {"q": "refund.over"})) == []
    assert _keys(reviewer_client.get(SEARCH, {"q": "createApproval refunds"})) == ["refund.over_limit"]


def test_comments_are_searched_and_highlighted(reviewer_client, reviewer, library, other_procedure):
    order_status = other_procedure.versions.get()
    thread_create(
        version=order_status,
        user=reviewer,
        body="Should the carrier be asked first? <b>bold</b>",
        anchor="step",
        step=2,
    )
    response = reviewer_client.get(SEARCH, {"q": "carrier"})
    assert "order.status" in _keys(response)
    html = response.content.decode()
    assert "<mark>carrier</mark>" in html.lower() or "<mark>Carrier</mark>" in html
    assert "<b>bold" not in html  # ts_headline drops tags; the fallback escapes them
    assert "step 2" in html


def test_highlight_escapes_text_and_marks_identifiers():
    html = highlight("Use createApproval <script>alert(1)</script> not createApprovalDraft", ("createApproval",))
    assert html == "Use <mark>createApproval</mark> &lt;script&gt;alert(1)&lt;/script&gt; not createApprovalDraft"


def test_procedure_text_in_results_is_escaped(reviewer_client, agent, intent, proposer):
    services.procedure_propose(
        agent=agent,
        intent=intent,
        key="xss.probe",
        applies_when="The customer writes <img src=x onerror=alert(1)> about refunds.",
        steps=["Reply with replyTemplates('<script>x</script>').", "b", "c"],
        required_tools=["replyTemplates"],
        forbidden_actions=[],
        source=Source.MANUAL,
        proposed_by=proposer,
    )
    html = reviewer_client.get(SEARCH, {"q": "refunds"}).content.decode()
    assert "<img src=x" not in html and "<script>x</script>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html.replace("<mark>", "").replace("</mark>", "")


def test_the_queues_filters_and_the_status_filter_combine_with_search(reviewer_client, reviewer, library, approver):
    from library.services import version_reject

    under = ProcedureVersion.objects.get(procedure__key="refund.under_limit")
    version_reject(version=under, user=reviewer, reason="dup")
    assert sorted(_keys(reviewer_client.get(SEARCH, {"q": "refund"}))) == ["refund.over_limit", "refund.under_limit"]
    assert _keys(reviewer_client.get(SEARCH, {"q": "refund", "status": Status.CANDIDATE})) == ["refund.over_limit"]
    assert _keys(reviewer_client.get(SEARCH, {"q": "lookupOrder", "intent": "order_status"})) == ["order.status"]
    assert _keys(reviewer_client.get(SEARCH, {"q": "lookupOrder", "agent": "nobody"})) == []
    candidate_claim(version=library, user=reviewer)
    assert _keys(reviewer_client.get(SEARCH, {"q": "lookupOrder", "assigned": "me"})) == ["refund.over_limit"]
    assert "refund.over_limit" not in _keys(reviewer_client.get(SEARCH, {"q": "lookupOrder", "assigned": "none"}))
    assert _keys(client_for(approver).get(SEARCH, {"q": "lookupOrder", "mine": "1"})) == ["refund.over_limit"]


def test_search_shows_only_what_the_user_may_see(client, library, outsider, monkeypatch):
    assert client.get(SEARCH, {"q": "refund"})["Location"].startswith("/accounts/login/")
    # the outsider sees every agent today; narrow visible_to and the results follow
    assert "refund.over_limit" in _keys(client_for(outsider).get(SEARCH, {"q": "refund"}))
    from library.models import Agent

    monkeypatch.setattr(
        "library.permissions.agents_visible_to", lambda user: Agent.objects.exclude(name="support_agent")
    )
    assert _keys(client_for(outsider).get(SEARCH, {"q": "refund"})) == []


def test_an_empty_query_shows_help_and_no_results(reviewer_client, library):
    response = reviewer_client.get(SEARCH, {"q": "  "})
    assert response.status_code == 200 and response.context["hits"] == []
    assert "names and ids match exactly" in response.content.decode()


@pytest.mark.parametrize("q", ["lookupOrder", "customer asks about case"])
def test_search_queries_do_not_grow_with_the_library(django_assert_num_queries, reviewer, agent, intent, q):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_for(reviewer)
    bulk_candidates(agent, intent, 10, prefix="small")
    with CaptureQueriesContext(connection) as small:
        assert client.get(SEARCH, {"q": q}).status_code == 200
    bulk_candidates(agent, intent, 400, prefix="large")
    with django_assert_num_queries(len(small.captured_queries)):
        response = client.get(SEARCH, {"q": q})
    assert response.context["page"].paginator.count == 410


def test_the_count_stops_at_the_cap_and_names_and_ids_come_newest_first(reviewer, agent, intent, monkeypatch):
    from reviews import selectors

    monkeypatch.setattr(selectors, "COUNT_CAP", 30)
    versions = bulk_candidates(agent, intent, 40)
    response = client_for(reviewer).get(SEARCH, {"q": "lookupOrder"})
    paginator = response.context["page"].paginator
    assert (paginator.count, paginator.capped, paginator.num_pages) == (30, True, 2)
    html = response.content.decode()
    assert "30+ versions match" in html and "the first 30" in html
    assert [h.version.pk for h in response.context["hits"]] == sorted((v.pk for v in versions), reverse=True)[:25]
    small = client_for(reviewer).get(SEARCH, {"q": "lookupOrder", "intent": "order_status"}).context["page"].paginator
    assert (small.count, small.capped) == (0, False)


def test_the_queue_has_a_search_box_that_keeps_its_filters(reviewer_client, library):
    html = reviewer_client.get("/queue/?intent=order_status&assigned=none").content.decode()
    assert 'action="/search/"' in html
    assert '<input type="hidden" name="status" value="CANDIDATE">' in html
    assert '<input type="hidden" name="intent" value="order_status">' in html
    assert '<input type="hidden" name="assigned" value="none">' in html
    assert reverse("reviews:search") == SEARCH
    assert Agent.objects.count() == 1
