"""The queue: groups with counts, filters, sorting, pagination, quarantined first, bulk reject,
and a constant number of queries whatever its length."""

import pytest
from django.urls import reverse
from guardian.shortcuts import assign_perm

from library.models import AuditEvent, ProcedureVersion, Status
from tests.conftest import make_passing_eval
from tests.reviews.conftest import HTMX, bulk_candidates, client_for

pytestmark = pytest.mark.django_db
QUEUE = "/queue/"


def _keys(response):
    rows = list(response.context["quarantined_rows"]) + list(response.context["rows"])
    return [v.procedure.key for v in rows]


def test_queue_groups_candidates_by_agent_and_intent_with_counts(
    reviewer_client, candidate, other_procedure, agent, intent
):
    bulk_candidates(agent, intent, 3, quarantined_every=3)
    response = reviewer_client.get(QUEUE)
    assert response.status_code == 200
    [group] = response.context["groups"]
    assert (group.agent, group.count, group.quarantined) == ("support_agent", 5, 1)
    assert [(g.intent, g.count, g.quarantined) for g in group.intents] == [
        ("order_status", 1, 0),
        ("refund_over_limit", 4, 1),
    ]
    assert b"refund_over_limit" in response.content


def test_quarantined_candidates_come_first_and_are_flagged(reviewer_client, agent, intent, candidate):
    bulk_candidates(agent, intent, 4, quarantined_every=2)
    response = reviewer_client.get(QUEUE + "?sort=newest")
    quarantined = response.context["quarantined_rows"]
    assert [v.quarantined for v in quarantined] == [True, True]
    assert _keys(response)[:2] == [v.procedure.key for v in quarantined]
    html = response.content.decode()
    assert html.index("Quarantined —") < html.index("refund.over_limit")


def test_filters(reviewer_client, agent, intent, candidate, other_procedure, approver):
    bulk_candidates(agent, intent, 2, quarantined_every=2)
    make_passing_eval(candidate)
    assert set(_keys(reviewer_client.get(QUEUE + "?intent=order_status"))) == {"order.status"}
    assert set(_keys(reviewer_client.get(QUEUE + "?agent=support_agent&intent=refund_over_limit"))) == {
        "refund.over_limit",
        "bulk.p00000",
        "bulk.p00001",
    }
    assert _keys(reviewer_client.get(QUEUE + "?agent=nobody")) == []
    assert _keys(reviewer_client.get(QUEUE + "?quarantined=yes")) == ["bulk.p00000"]
    assert "bulk.p00000" not in _keys(reviewer_client.get(QUEUE + "?quarantined=no"))
    assert _keys(reviewer_client.get(QUEUE + "?passing=yes")) == ["refund.over_limit"]
    assert "refund.over_limit" not in _keys(reviewer_client.get(QUEUE + "?passing=no"))
    # waiting for me as approver: only the procedure the approver holds the permission for
    assert _keys(client_for(approver).get(QUEUE + "?mine=1")) == ["refund.over_limit"]
    assert _keys(reviewer_client.get(QUEUE + "?mine=1")) == []


def test_waiting_for_me_respects_the_four_eyes_rule_and_agent_wide_rights(agent, intent, candidate, proposer, reviewer):
    # the proposer holds the right on the whole agent but proposed the candidate: not theirs to decide
    assign_perm("library.approve_agent_procedures", proposer, agent)
    other = bulk_candidates(agent, intent, 1)[0]
    assert _keys(client_for(proposer).get(QUEUE + "?mine=1")) == [other.procedure.key]


def test_a_passing_eval_of_older_content_does_not_count(reviewer_client, candidate, reviewer):
    from library import services

    make_passing_eval(candidate)
    edited = services.version_revise(
        version=candidate,
        user=reviewer,
        applies_when=candidate.applies_when + " Edited.",
        steps=candidate.steps,
        required_tools=candidate.required_tools,
        forbidden_actions=candidate.forbidden_actions,
    )
    assert _keys(reviewer_client.get(QUEUE + "?passing=yes")) == []
    row = reviewer_client.get(QUEUE).context["rows"][0]
    assert row.pk == edited.pk and row.has_passing_eval is False


def test_sort_by_evidence_strength_and_by_age(reviewer_client, agent, intent):
    versions = bulk_candidates(agent, intent, 5)  # support = i*7 % 200: 0, 7, 14, 21, 28
    by_evidence = reviewer_client.get(QUEUE + "?sort=evidence").context["rows"]
    assert [v.support for v in by_evidence] == [28, 21, 14, 7, 0]
    oldest = reviewer_client.get(QUEUE + "?sort=oldest").context["rows"]
    assert [v.pk for v in oldest] == sorted(v.pk for v in versions)
    newest = reviewer_client.get(QUEUE + "?sort=newest").context["rows"]
    assert [v.pk for v in newest] == sorted((v.pk for v in versions), reverse=True)


def test_non_numeric_support_sorts_as_zero(reviewer_client, agent, intent):
    from library import services
    from library.models import Source

    def propose(key, evidence):
        return services.procedure_propose(
            agent=agent,
            intent=intent,
            key=key,
            applies_when=f"When {key}.",
            steps=["Reply with replyTemplates('x')."],
            required_tools=["replyTemplates"],
            forbidden_actions=[],
            source=Source.IMPORTED,
            actor_label="test",
            evidence=evidence,
        )

    weird = propose("odd.one", {"support": "lots"})
    normal = propose("normal.one", {"support": 5})
    huge = propose("huge.one", {"support": "99999999999999999999"})  # would overflow an integer cast
    rows = reviewer_client.get(QUEUE + "?sort=evidence").context["rows"]
    assert [(v.pk, v.support) for v in rows] == [(normal.pk, 5), (weird.pk, 0), (huge.pk, 0)]


def _walk(client, url):
    """Every page of the queue from `url` on, following the "next" links: [(keys of a page, response)]."""
    import re

    pages = []
    while url:
        response = client.get(url)
        assert response.status_code == 200
        pages.append((_keys(response), response))
        link = re.search(r'<a href="([^"]+)"[^>]*rel="next"', response.content.decode())
        url = QUEUE + link.group(1).replace("&amp;", "&") if link else None
        assert len(pages) < 200
    return pages


def test_pagination(reviewer_client, agent, intent):
    bulk_candidates(agent, intent, 120)
    pages = _walk(reviewer_client, QUEUE)
    assert [len(keys) for keys, _ in pages] == [50, 50, 20]
    first, last = pages[0][1], pages[-1][1]
    assert first.context["page"].num_pages == 3 and first.context["page"].count == 120
    assert "page 1 of 3" in first.content.decode() and "page 3 of 3" in last.content.decode()
    every = [key for keys, _ in pages for key in keys]
    assert len(every) == len(set(every)) == 120
    assert b'rel="next"' in first.content and b"page=2" in first.content and b'rel="next"' not in last.content
    assert b'rel="first"' in last.content


def _expected_order(sort):
    """The queue's order computed in Python from every candidate: quarantined first, then the sort."""
    rows = list(
        ProcedureVersion.objects.filter(status=Status.CANDIDATE).select_related("procedure__agent", "procedure__intent")
    )

    def support(v):
        value = (v.evidence or {}).get("support")
        return (
            int(value)
            if isinstance(value, int) or (isinstance(value, str) and value.isdigit() and len(value) <= 9)
            else 0
        )

    keys = {
        "group": lambda v: (
            not v.quarantined,
            v.procedure.agent.name,
            v.procedure.intent.name,
            -support(v),
            v.created_at,
            v.pk,
        ),
        "evidence": lambda v: (not v.quarantined, -support(v), v.created_at, v.pk),
        "oldest": lambda v: (not v.quarantined, v.created_at, v.pk),
        "newest": lambda v: (not v.quarantined, -v.created_at.timestamp(), -v.pk),
    }
    return [v.procedure.key for v in sorted(rows, key=keys[sort])]


@pytest.mark.parametrize("sort", ["group", "evidence", "oldest", "newest"])
def test_pages_read_by_keyset_follow_the_order_of_the_whole_queue(reviewer_client, agent, intent, monkeypatch, sort):
    """Small pages across intents, quarantined and not, ties in support: walking the pages yields
    the queue in exactly the order one sort of every candidate gives, each candidate once."""
    from reviews.views import queue

    monkeypatch.setattr(queue, "QUEUE_PAGE_SIZE", 7)
    bulk_candidates(agent, intent, 30, prefix="refund", quarantined_every=4)
    bulk_candidates(agent, agent.intents.get(name="order_status"), 25, prefix="order", quarantined_every=6)
    walked = [key for keys, _ in _walk(reviewer_client, QUEUE + f"?sort={sort}") for key in keys]
    assert walked == _expected_order(sort)


@pytest.mark.parametrize("sort", ["group", "evidence", "oldest", "newest"])
def test_pages_of_my_claims_follow_the_order_of_the_whole_queue(
    reviewer_client, reviewer, agent, intent, monkeypatch, sort
):
    """ "Assigned to me" sorts the person's claims by their copies of the sort keys and pages them
    with its own keyset: walking it yields exactly the queue's order restricted to the claimed
    candidates."""
    from reviews.services import candidate_claim
    from reviews.views import queue

    monkeypatch.setattr(queue, "QUEUE_PAGE_SIZE", 4)
    bulk_candidates(agent, intent, 20, prefix="refund", quarantined_every=4)
    bulk_candidates(agent, agent.intents.get(name="order_status"), 15, prefix="order", quarantined_every=5)
    claimed = set()
    for number, version in enumerate(ProcedureVersion.objects.filter(status=Status.CANDIDATE).order_by("pk")):
        if number % 3 != 1:
            candidate_claim(version=version, user=reviewer)
            claimed.add(version.procedure.key)
    walked = [key for keys, _ in _walk(reviewer_client, QUEUE + f"?sort={sort}&assigned=me") for key in keys]
    assert walked == [key for key in _expected_order(sort) if key in claimed]


def test_a_page_after_a_candidate_that_left_the_queue_goes_on_from_its_place(
    reviewer_client, reviewer, agent, intent, monkeypatch
):
    from library import services
    from reviews.views import queue

    monkeypatch.setattr(queue, "QUEUE_PAGE_SIZE", 5)
    bulk_candidates(agent, intent, 12)
    order = _expected_order("oldest")
    last_of_first = ProcedureVersion.objects.get(procedure__key=order[4])
    services.version_reject(version=last_of_first, user=reviewer, reason="duplicate")
    second = reviewer_client.get(QUEUE + f"?sort=oldest&after={last_of_first.pk}&page=2")
    assert _keys(second) == order[5:10]
    # a cursor that is no version of a visible agent starts from the first page
    assert _keys(reviewer_client.get(QUEUE + "?sort=oldest&after=999999999")) == [k for k in order if k != order[4]][:5]


def test_counts_stop_at_the_cap_and_say_so(reviewer_client, agent, intent, monkeypatch):
    from reviews import selectors
    from reviews.views import queue

    monkeypatch.setattr(selectors, "COUNT_CAP", 10)
    monkeypatch.setattr(queue, "QUEUE_PAGE_SIZE", 8)
    bulk_candidates(agent, intent, 25, quarantined_every=5)
    first = reviewer_client.get(QUEUE)
    [group] = first.context["groups"]
    assert (group.count_label, group.intents[0].count_label, group.quarantined_label) == ("10+", "10+", "5")
    page = first.context["page"]
    assert page.capped and page.num_pages is None
    html = first.content.decode()
    count_line = html[html.index('class="muted count-line"') :]
    count_line = count_line[: count_line.index("</p>")]
    assert "10+ candidates · page 1 · sorted" in count_line
    assert 'title="candidates waiting for review">10+<' in html
    walked = [key for keys, _ in _walk(reviewer_client, QUEUE) for key in keys]
    assert len(walked) == len(set(walked)) == 25


def test_unknown_filter_values_fall_back_instead_of_failing(reviewer_client, candidate):
    response = reviewer_client.get(QUEUE + "?sort=drop_table&quarantined=maybe&page=x")
    assert response.status_code == 200 and _keys(response) == ["refund.over_limit"]


def test_htmx_gets_the_queue_body_only_and_responses_vary_on_it(reviewer_client, candidate):
    full = reviewer_client.get(QUEUE)
    partial = reviewer_client.get(QUEUE + "?intent=refund_over_limit", **HTMX)
    assert b"<html" in full.content and b"<html" not in partial.content
    assert b'class="queue-layout"' in partial.content
    assert "HX-Request" in partial["Vary"] and "HX-Request" in full["Vary"]


def test_every_hx_get_of_the_queue_has_an_href(reviewer_client, agent, intent, candidate):
    import re

    bulk_candidates(agent, intent, 60)
    html = reviewer_client.get(QUEUE + "?agent=support_agent").content.decode()
    links = re.findall(r"<a [^>]*hx-get=[^>]*>", html)
    assert links, "the queue has htmx links"
    assert all(' href="' in link for link in links)
    forms = re.findall(r"<form [^>]*hx-get=[^>]*>", html)
    assert all(' action="' in form for form in forms)


def test_bulk_reject_rejects_all_with_one_reason(reviewer_client, reviewer, agent, intent):
    versions = bulk_candidates(agent, intent, 3)
    response = reviewer_client.post(
        reverse("reviews:queue_bulk_reject"),
        {"versions": [v.pk for v in versions[:2]], "reason": "duplicates", "next": "/queue/?sort=oldest"},
    )
    assert response.status_code == 302 and response["Location"] == "/queue/?sort=oldest"
    statuses = dict(ProcedureVersion.objects.filter(pk__in=[v.pk for v in versions]).values_list("pk", "status"))
    assert [statuses[v.pk] for v in versions] == [Status.REJECTED, Status.REJECTED, Status.CANDIDATE]
    events = AuditEvent.objects.filter(action=AuditEvent.Action.REJECT, actor=reviewer)
    assert sorted(e.version_id for e in events) == [versions[0].pk, versions[1].pk]
    assert {e.reason for e in events} == {"duplicates"}


def test_bulk_reject_is_all_or_nothing(reviewer_client, reviewer, agent, intent):
    from library import services

    versions = bulk_candidates(agent, intent, 3)
    services.version_reject(version=versions[2], user=reviewer, reason="already")
    response = reviewer_client.post(
        reverse("reviews:queue_bulk_reject"), {"versions": [v.pk for v in versions], "reason": "batch"}
    )
    assert response.status_code == 409
    assert f"{versions[2]}" in response.content.decode()  # the refusal names the version
    assert (
        ProcedureVersion.objects.filter(pk__in=[versions[0].pk, versions[1].pk], status=Status.CANDIDATE).count() == 2
    )


def test_bulk_reject_by_htmx_returns_the_refreshed_queue_body(reviewer_client, agent, intent):
    versions = bulk_candidates(agent, intent, 2)
    response = reviewer_client.post(
        reverse("reviews:queue_bulk_reject"), {"versions": [versions[0].pk], "reason": "dup"}, **HTMX
    )
    assert response.status_code == 200 and b"<html" not in response.content
    assert _keys(response) == [versions[1].procedure.key]
    assert b"Rejected 1 candidate" in response.content  # the message travels out of band into #flash
    assert b'hx-swap-oob="true"' in response.content


def test_bulk_reject_needs_a_reason_and_a_selection(reviewer_client, agent, intent):
    versions = bulk_candidates(agent, intent, 1)
    assert (
        reviewer_client.post(
            reverse("reviews:queue_bulk_reject"), {"versions": [versions[0].pk], "reason": ""}
        ).status_code
        == 400
    )
    assert reviewer_client.post(reverse("reviews:queue_bulk_reject"), {"reason": "x"}).status_code == 400
    assert ProcedureVersion.objects.get(pk=versions[0].pk).status == Status.CANDIDATE


@pytest.mark.parametrize(
    "posted, message",
    [
        (["99999999999999999999"], "out of range"),  # past bigint: a 500 at the database before
        (["0"], "out of range"),
        (["abc"], "Select a valid choice"),
    ],
)
def test_bulk_reject_names_a_bad_candidate_id(reviewer_client, agent, intent, posted, message):
    versions = bulk_candidates(agent, intent, 1)
    response = reviewer_client.post(
        reverse("reviews:queue_bulk_reject"), {"versions": [versions[0].pk, *posted], "reason": "x"}
    )
    assert response.status_code == 400 and message in response.content.decode()
    assert ProcedureVersion.objects.get(pk=versions[0].pk).status == Status.CANDIDATE


def test_a_too_long_rejection_reason_is_named_as_too_long(reviewer_client, agent, intent):
    (version,) = bulk_candidates(agent, intent, 1)
    response = reviewer_client.post(reverse("reviews:version_reject", args=[version.pk]), {"reason": "x" * 5000})
    assert response.status_code == 400 and "at most 1000 characters" in response.content.decode()
    assert ProcedureVersion.objects.get(pk=version.pk).status == Status.CANDIDATE


def test_navigation_shows_role_and_what_waits(candidate, approver, reviewer):
    html = client_for(approver).get(QUEUE).content.decode()
    assert 'class="role role-approver"' in html and "For my approval" in html
    html = client_for(reviewer).get(QUEUE).content.decode()
    assert 'class="role role-reviewer"' in html and "For my approval" not in html
    assert 'title="candidates waiting for review">1<' in html


# ------------------------------------------------------------------------------------------- query counts


def _queue_queries(client, django_assert_num_queries, url, expected):
    with django_assert_num_queries(expected):
        response = client.get(url)
    assert response.status_code == 200
    return response


@pytest.mark.parametrize(
    "url", [QUEUE, QUEUE + "?sort=evidence&passing=no&quarantined=no", QUEUE + "?mine=1&agent=support_agent"]
)
def test_queue_queries_do_not_grow_with_the_queue(django_assert_num_queries, approver, agent, intent, url):
    client = client_for(approver)
    bulk_candidates(agent, intent, 10, prefix="small", quarantined_every=4)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as small:
        assert client.get(url).status_code == 200
    bulk_candidates(agent, intent, 990, prefix="large", quarantined_every=50)
    assert ProcedureVersion.objects.filter(status=Status.CANDIDATE).count() == 1001
    response = _queue_queries(client, django_assert_num_queries, url, len(small.captured_queries))
    assert response.context["page"].count >= 1 or "mine" in url


def test_approve_rights_held_through_a_group_count_for_role_and_queue(
    agent, intent, candidate, outsider, reviewers_group
):
    from django.contrib.auth.models import Group

    from reviews.navigation import role_of

    approvers = Group.objects.create(name="refund approvers")
    outsider.groups.add(approvers, reviewers_group)
    client = client_for(outsider)
    assert role_of(outsider) == "reviewer" and _keys(client.get(QUEUE + "?mine=1")) == []
    assign_perm("library.approve_agent_procedures", approvers, agent)
    outsider.refresh_from_db()
    del outsider._procmem_approve_scope  # remembered for one request; a new request starts afresh
    assert role_of(outsider) == "approver"
    assert _keys(client.get(QUEUE + "?mine=1")) == ["refund.over_limit"]


def test_a_model_wide_approve_permission_is_not_an_approve_right(agent, intent, candidate, outsider, reviewers_group):
    """As in library.permissions.user_can_approve: only object permissions (or superuser) count."""
    from django.contrib.auth.models import Permission

    from library.permissions import user_can_approve
    from reviews.navigation import role_of

    outsider.groups.add(reviewers_group)
    outsider.user_permissions.add(Permission.objects.get(codename="approve_procedure"))
    assert not user_can_approve(outsider, candidate.procedure)
    assert role_of(outsider) == "reviewer"
    assert _keys(client_for(outsider).get(QUEUE + "?mine=1")) == []


def test_superuser_may_approve_what_others_proposed(admin_user, candidate):
    assert _keys(client_for(admin_user).get(QUEUE + "?mine=1")) == ["refund.over_limit"]


@pytest.mark.parametrize("sort", ["group", "oldest"])
def test_a_later_page_keeps_a_constant_number_of_queries(
    django_assert_num_queries, approver, agent, intent, monkeypatch, sort
):
    """A page read after a cursor costs one query more than the first page (the cursor's row),
    whatever the queue's length."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from reviews.views import queue

    monkeypatch.setattr(queue, "QUEUE_PAGE_SIZE", 5)
    client = client_for(approver)
    bulk_candidates(agent, intent, 12, prefix="small", quarantined_every=4)
    first = client.get(QUEUE + f"?sort={sort}")
    after = first.context["page"].next_after
    with CaptureQueriesContext(connection) as small:
        assert client.get(QUEUE + f"?sort={sort}&after={after}&page=2").status_code == 200
    bulk_candidates(agent, intent, 990, prefix="large", quarantined_every=50)
    _queue_queries(
        client, django_assert_num_queries, QUEUE + f"?sort={sort}&after={after}&page=2", len(small.captured_queries)
    )
