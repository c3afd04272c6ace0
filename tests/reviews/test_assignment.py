"""Claiming, assigning and releasing candidates; the queue's "assigned to me" and "unassigned"
filters; claims that expire; ageing badges against the agent's review target; the audit rows; and
two reviewers claiming at once through a live server, of whom exactly one wins."""

from __future__ import annotations

import re
import threading
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.urls import reverse
from django.utils import timezone
from guardian.shortcuts import assign_perm

from library.models import AuditEvent, ProcedureVersion, Status
from library.services import LifecycleError, version_reject
from reviews.models import CandidateClaim
from reviews.services import candidate_claim, candidate_release
from reviews.views.queue_row import age_badge
from tests.reviews.conftest import bulk_candidates, client_for

QUEUE = "/queue/"


def _claim_url(version) -> str:
    return reverse("reviews:version_claim", kwargs={"pk": version.pk})


def _release_url(version) -> str:
    return reverse("reviews:version_release", kwargs={"pk": version.pk})


def _keys(response):
    return [v.procedure.key for v in list(response.context["quarantined_rows"]) + list(response.context["rows"])]


@pytest.fixture
def agent_admin(db, reviewers_group, agent):
    user = get_user_model().objects.create_user("lead", password="pw-lead", email="lead@example.com")
    user.groups.add(reviewers_group)
    assign_perm("library.manage_agent", user, agent)
    return user


# ---------------------------------------------------------------------------------------------- services


@pytest.mark.django_db
def test_a_reviewer_claims_renews_and_releases_with_audit_rows(candidate, reviewer, settings):
    settings.PROCMEM_CLAIM_HOURS = 6
    claim = candidate_claim(version=candidate, user=reviewer)
    assert claim.assignee == reviewer and claim.assigned_by == reviewer
    assert timedelta(hours=5, minutes=59) < claim.expires_at - timezone.now() <= timedelta(hours=6)
    renewed = candidate_claim(version=candidate, user=reviewer)
    assert renewed.pk == claim.pk and renewed.expires_at >= claim.expires_at
    candidate_release(version=candidate, user=reviewer)
    assert not CandidateClaim.objects.exists()
    actions = list(AuditEvent.objects.filter(version=candidate).order_by("id").values_list("action", "actor__username"))
    assert actions[-3:] == [("claim", "reviewer"), ("claim", "reviewer"), ("release", "reviewer")]
    release = AuditEvent.objects.filter(version=candidate, action=AuditEvent.Action.RELEASE).get()
    assert release.before["assignee"] == "reviewer"


@pytest.mark.django_db
def test_someone_elses_live_claim_is_refused_until_it_expires(candidate, reviewer, proposer):
    claim = candidate_claim(version=candidate, user=reviewer)
    with pytest.raises(LifecycleError, match="claimed by reviewer"):
        candidate_claim(version=candidate, user=proposer)
    with pytest.raises(PermissionDenied):
        candidate_release(version=candidate, user=proposer)
    # expired: it counts as no claim, and the next claim replaces it
    CandidateClaim.objects.filter(pk=claim.pk).update(
        claimed_at=timezone.now() - timedelta(hours=30), expires_at=timezone.now() - timedelta(hours=1)
    )
    taken = candidate_claim(version=candidate, user=proposer)
    assert taken.pk == claim.pk and taken.assignee == proposer
    assert CandidateClaim.objects.count() == 1


@pytest.mark.django_db
def test_assigning_to_someone_else_needs_the_agents_admin_right(candidate, reviewer, proposer, agent_admin, outsider):
    with pytest.raises(PermissionDenied, match="admins of support_agent"):
        candidate_claim(version=candidate, user=reviewer, assignee=proposer)
    claim = candidate_claim(version=candidate, user=agent_admin, assignee=reviewer)
    assert (claim.assignee, claim.assigned_by) == (reviewer, agent_admin)
    assert AuditEvent.objects.filter(
        action=AuditEvent.Action.ASSIGN, actor=agent_admin, after__assignee="reviewer"
    ).exists()
    # an admin moves a live claim (audited with the previous holder) and may release anyone's
    moved = candidate_claim(version=candidate, user=agent_admin, assignee=proposer)
    assert moved.assignee == proposer
    assert AuditEvent.objects.filter(
        action=AuditEvent.Action.ASSIGN, before__assignee="reviewer", after__assignee="proposer"
    ).exists()
    candidate_release(version=candidate, user=agent_admin)
    # only reviewers can hold a claim
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="not a reviewer"):
        candidate_claim(version=candidate, user=agent_admin, assignee=outsider)


@pytest.mark.django_db
def test_only_candidates_are_claimed(candidate, reviewer):
    version_reject(version=candidate, user=reviewer, reason="dup")
    with pytest.raises(LifecycleError, match="Only candidates"):
        candidate_claim(version=candidate, user=reviewer)


# ---------------------------------------------------------------------------------------------- views and permissions


@pytest.mark.django_db
def test_claim_and_release_views_and_the_queue_filters(candidate, other_procedure, reviewer, proposer, reviewer_client):
    response = reviewer_client.post(_claim_url(candidate), {"next": QUEUE + "?assigned=me"})
    assert response.status_code == 302 and response["Location"] == QUEUE + "?assigned=me"
    assert _keys(reviewer_client.get(QUEUE + "?assigned=me")) == ["refund.over_limit"]
    assert _keys(reviewer_client.get(QUEUE + "?assigned=none")) == ["order.status"]
    assert _keys(client_for(proposer).get(QUEUE + "?assigned=me")) == []
    page = reviewer_client.get(QUEUE).content.decode()
    assert f'data-release="{candidate.pk}"' in page and f'data-claim="{candidate.pk}"' not in page
    # someone else's claim: 409, nothing changes
    refused = client_for(proposer).post(_claim_url(candidate))
    assert refused.status_code == 409 and "claimed by reviewer" in refused.content.decode()
    assert client_for(proposer).post(_release_url(candidate)).status_code == 403
    assert CandidateClaim.objects.get().assignee == reviewer
    assert reviewer_client.post(_release_url(candidate)).status_code == 302
    assert _keys(reviewer_client.get(QUEUE + "?assigned=none")) == ["order.status", "refund.over_limit"]
    assert reviewer_client.post(_release_url(candidate)).status_code == 409  # nothing to release


@pytest.mark.django_db
def test_claim_views_refuse_the_wrong_people(client, candidate, outsider, reviewer_client, proposer):
    # anonymous: to sign-in; an outsider (no reviewer role): 403; a hidden version: 404
    assert client.post(_claim_url(candidate))["Location"].startswith("/accounts/login/")
    assert client_for(outsider).post(_claim_url(candidate)).status_code == 403
    assert client_for(outsider).post(_release_url(candidate)).status_code == 403
    assert reviewer_client.post(reverse("reviews:version_claim", kwargs={"pk": 999_999})).status_code == 404
    assert reviewer_client.post(reverse("reviews:version_release", kwargs={"pk": 999_999})).status_code == 404
    # a reviewer without the admin right cannot assign to someone else
    assert reviewer_client.post(_claim_url(candidate), {"assignee": "proposer"}).status_code == 403
    assert reviewer_client.post(_claim_url(candidate), {"assignee": "nobody_at_all"}).status_code == 400
    assert reviewer_client.get(_claim_url(candidate)).status_code == 405
    assert not CandidateClaim.objects.exists()


@pytest.mark.django_db
def test_an_agent_admin_assigns_from_the_candidate_page(candidate, agent_admin, reviewer):
    client = client_for(agent_admin)
    page = client.get(reverse("reviews:version", kwargs={"pk": candidate.pk})).content.decode()
    assert 'id="assignee"' in page and '<option value="reviewer">' in page
    assert client.post(_claim_url(candidate), {"assignee": "reviewer"}).status_code == 302
    assert CandidateClaim.objects.get().assignee == reviewer
    shown = client_for(reviewer).get(reverse("reviews:version", kwargs={"pk": candidate.pk})).content.decode()
    assert "Claimed by <strong>you</strong>" in shown and 'id="assignee"' not in shown


# ---------------------------------------------------------------------------------------------- ageing


@pytest.mark.django_db
def test_ageing_badges_compare_the_age_with_the_agents_review_target(agent, intent, reviewer_client):
    agent.review_target_hours = 10
    agent.save()
    now = timezone.now()
    # created_at is immutable (the database refuses to change it): create them in the past instead
    made = []
    for hours in (1, 6, 11):
        with mock.patch("django.utils.timezone.now", return_value=now - timedelta(hours=hours)):
            made += bulk_candidates(agent, intent, 1, prefix=f"age{hours}")
    fresh, due, overdue = made
    rows = {v.pk: v for v in reviewer_client.get(QUEUE + "?sort=oldest").context["rows"]}
    assert [rows[v.pk].age.level for v in (fresh, due, overdue)] == ["fresh", "due", "overdue"]
    html = reviewer_client.get(QUEUE).content.decode()
    assert html.count("overdue</span>") == 1 and html.count("due soon</span>") == 1
    overdue.refresh_from_db()
    assert age_badge(overdue, now).target_hours == 10


# ---------------------------------------------------------------------------------------------- query counts


@pytest.mark.django_db
@pytest.mark.parametrize("url", [QUEUE, QUEUE + "?assigned=me", QUEUE + "?assigned=none&sort=oldest"])
def test_queue_with_claims_keeps_a_constant_number_of_queries(
    django_assert_num_queries, agent, intent, reviewer, proposer, url
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_for(reviewer)
    first = bulk_candidates(agent, intent, 10, prefix="small")
    candidate_claim(version=first[0], user=reviewer)
    with CaptureQueriesContext(connection) as small:
        assert client.get(url).status_code == 200
    more = bulk_candidates(agent, intent, 300, prefix="large")
    for version in more[:40]:
        candidate_claim(version=version, user=reviewer if version.pk % 2 else proposer)
    with django_assert_num_queries(len(small.captured_queries)):
        assert client.get(url).status_code == 200


# ---------------------------------------------------------------------------------------------- the race


def _session(base_url: str, user, version) -> tuple[object, str]:
    """A signed-in HTTP session against the live server and the CSRF token of the candidate page."""
    import requests

    client = client_for(user)
    session = requests.Session()
    session.cookies.set("sessionid", client.cookies["sessionid"].value)
    page = session.get(f"{base_url}{reverse('reviews:version', kwargs={'pk': version.pk})}", timeout=30)
    assert page.status_code == 200
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    return session, token


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_reviewers_claiming_at_once_exactly_one_wins(live_server, agent, intent, reviewer, proposer):
    rounds = bulk_candidates(agent, intent, 6, prefix="race")
    for version in rounds:
        sessions = [_session(live_server.url, user, version) for user in (reviewer, proposer)]
        barrier = threading.Barrier(2)
        statuses: list[int] = []
        lock = threading.Lock()

        def claim(session, token) -> None:
            barrier.wait()
            response = session.post(
                f"{live_server.url}{_claim_url(version)}",
                data={"csrfmiddlewaretoken": token},
                headers={"Referer": live_server.url + "/"},
                allow_redirects=False,
                timeout=60,
            )
            with lock:
                statuses.append(response.status_code)

        threads = [threading.Thread(target=claim, args=pair) for pair in sessions]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=90)
        assert sorted(statuses) == [302, 409], statuses
        assert CandidateClaim.objects.filter(version=version).count() == 1
        assert AuditEvent.objects.filter(version=version, action=AuditEvent.Action.CLAIM).count() == 1
    assert ProcedureVersion.objects.filter(status=Status.CANDIDATE, claim__isnull=False).count() == len(rounds)
