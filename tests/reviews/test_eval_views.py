"""Eval-run pages and actions: the permission matrix, start → detail, the progress fragment and
JSON the eval panel polls, cancel."""

from __future__ import annotations

import pytest
from django.urls import reverse

from library.evals import eval_runs as evals
from library.models import EvalRun

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def run(candidate, reviewer):
    return evals.eval_run_start(version=candidate, user=reviewer)


def urls(candidate, run):
    return [
        ("post", reverse("reviews:version_eval_start", args=[candidate.pk])),
        ("get", reverse("reviews:eval_detail", args=[run.pk])),
        ("get", reverse("reviews:eval_progress", args=[run.pk])),
        ("post", reverse("reviews:eval_cancel", args=[run.pk])),
        ("post", reverse("reviews:eval_resume", args=[run.pk])),
    ]


def test_anonymous_is_sent_to_sign_in_and_htmx_gets_a_client_redirect(client, candidate, run):
    for method, url in urls(candidate, run):
        response = getattr(client, method)(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url
    response = client.get(reverse("reviews:eval_progress", args=[run.pk]), **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"].startswith(reverse("login"))


def test_a_signed_in_non_reviewer_gets_403(client, candidate, run, outsider):
    client.force_login(outsider)
    for method, url in urls(candidate, run):
        assert getattr(client, method)(url).status_code == 403, url
    run.refresh_from_db()
    assert run.state == EvalRun.State.QUEUED


def test_missing_runs_and_versions_are_404(client, reviewer, run):
    client.force_login(reviewer)
    assert client.get(reverse("reviews:eval_detail", args=[run.pk + 100])).status_code == 404
    assert client.get(reverse("reviews:eval_progress", args=[run.pk + 100])).status_code == 404
    assert client.post(reverse("reviews:version_eval_start", args=[999999])).status_code == 404
    assert client.get(reverse("reviews:version_eval_start", args=[run.version_id])).status_code == 405


def test_start_runs_and_the_detail_shows_the_verdict(
    client, agent, candidate, reviewer, django_capture_on_commit_callbacks
):
    client.force_login(reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("reviews:version_eval_start", args=[candidate.pk]))
    run = EvalRun.objects.get(version=candidate)
    assert (
        response.status_code == 302
        and response["Location"] == reverse("reviews:version", args=[candidate.pk]) + "#eval"
    )
    # the fixture agent has no regression cases: the run is judged inconclusive, and says why
    page = client.get(reverse("reviews:eval_detail", args=[run.pk])).content.decode()
    assert "INCONCLUSIVE" in page and "at least 5 are needed" in page
    assert "Demo agent (simulator)" in page


def test_progress_fragment_polls_while_running_and_json_reports_numbers(
    client, reviewer, run, django_assert_max_num_queries
):
    client.force_login(reviewer)
    with django_assert_max_num_queries(12):
        fragment = client.get(reverse("reviews:eval_progress", args=[run.pk]), **HTMX)
    html = fragment.content.decode()
    assert 'hx-trigger="every 1s"' in html and f'href="/evals/{run.pk}/"' in html
    data = client.get(reverse("reviews:eval_progress", args=[run.pk]) + "?format=json").json()
    assert data == {
        "kind": "approval",
        "environment": "production",
        "id": run.pk,
        "state": "queued",
        "verdict": None,
        "casesTotal": 0,
        "casesDone": 0,
        "errors": 0,
        "finished": False,
        "failureReason": None,
        "contentHash": run.content_hash,
        "baselineHash": run.baseline_hash,
        "baselineCurrent": True,
    }


def test_cancel_from_htmx_swaps_the_fragment_and_stops_polling(client, reviewer, run):
    client.force_login(reviewer)
    response = client.post(reverse("reviews:eval_cancel", args=[run.pk]), **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "Cancelled by reviewer" in html and "hx-trigger" not in html
    assert response["HX-Trigger"] == "evalRunFinished"
    run.refresh_from_db()
    assert run.state == EvalRun.State.CANCELLED


def test_the_run_page_costs_the_same_queries_for_few_and_many_cases(
    client, agent, intent, candidate, reviewer, django_capture_on_commit_callbacks
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from library.models import RegressionCase

    client.force_login(reviewer)

    def queries(cases: int) -> int:
        RegressionCase.objects.filter(agent=agent).update(is_active=False)
        RegressionCase.objects.bulk_create(
            RegressionCase(agent=agent, intent=intent, task=f"Refund ORD-{i}", expected_tools=["lookupOrder"])
            for i in range(cases)
        )
        with django_capture_on_commit_callbacks(execute=True):
            run = evals.eval_run_start(version=candidate, user=reviewer)
        with CaptureQueriesContext(connection) as captured:
            page = client.get(reverse("reviews:eval_detail", args=[run.pk]))
        assert page.status_code == 200 and page.content.decode().count('class="case-result"') == 2 * cases
        return len(captured)

    assert queries(3) == queries(30)


def test_the_page_says_when_the_active_set_moved_since_the_run(
    client, agent, intent, candidate, reviewer, other_procedure, admin_user, django_capture_on_commit_callbacks
):
    from library import services
    from tests.conftest import make_passing_eval

    client.force_login(reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        run = evals.eval_run_start(version=candidate, user=reviewer)
    warning = "The active set changed since this run started"
    assert warning not in client.get(reverse("reviews:eval_detail", args=[run.pk])).content.decode()
    other = other_procedure.versions.get()
    make_passing_eval(other)
    services.version_approve(version=other, user=admin_user)
    assert warning in client.get(reverse("reviews:eval_detail", args=[run.pk])).content.decode()
    assert warning in client.get(reverse("reviews:eval_progress", args=[run.pk]), **HTMX).content.decode()


def test_an_approved_versions_run_does_not_ask_for_a_new_run(client, candidate, reviewer, admin_user):
    # the approval itself moves the active set; telling the reader to re-run before approving is wrong then
    from library import services
    from tests.conftest import make_passing_eval

    run = make_passing_eval(candidate)
    services.version_approve(version=candidate, user=admin_user)
    client.force_login(reviewer)
    assert (
        "The active set changed since this run started"
        not in client.get(reverse("reviews:eval_detail", args=[run.pk])).content.decode()
    )
    assert "start a new run" not in client.get(reverse("reviews:eval_progress", args=[run.pk]), **HTMX).content.decode()


def test_fragments_render_no_template_comments(client, reviewer, run):
    client.force_login(reviewer)
    html = client.get(reverse("reviews:eval_progress", args=[run.pk]), **HTMX).content.decode()
    assert "{#" not in html and "comment" not in html.split("<div", 1)[0]


def test_the_shared_fragments_render_for_other_pages(agent, candidate, reviewer):
    from django.template.loader import render_to_string
    from django.test import RequestFactory

    from library.models import AgentSession

    request = RequestFactory().get("/")
    request.user = reviewer
    session = AgentSession.objects.create(agent=agent, session_id="s-1", task="x")
    html = render_to_string("reviews/cases/_from_session_button.html", {"session": session}, request=request)
    assert 'value="s-1"' in html and "Include" not in html


def test_cancel_from_the_candidate_page_answers_with_its_eval_panel(client, reviewer, candidate, run):
    client.force_login(reviewer)
    response = client.post(reverse("reviews:eval_cancel", args=[run.pk]), HTTP_HX_TARGET="eval", **HTMX)
    assert response.status_code == 200 and 'id="eval"' in response.content.decode()
    run.refresh_from_db()
    assert run.state == EvalRun.State.CANCELLED


def test_cancel_without_htmx_goes_back_to_next_on_this_site_only(client, reviewer, candidate, run):
    client.force_login(reviewer)
    back = reverse("reviews:version", args=[candidate.pk]) + "#eval"
    assert client.post(reverse("reviews:eval_cancel", args=[run.pk]), {"next": back})["Location"] == back
    elsewhere = client.post(reverse("reviews:eval_resume", args=[run.pk]))
    assert elsewhere.status_code == 302
    response = client.post(reverse("reviews:eval_cancel", args=[run.pk]), {"next": "https://evil.example/"})
    assert response["Location"] == reverse("reviews:eval_detail", args=[run.pk])


def test_a_finished_run_without_cases_says_so_and_does_not_link_itself(
    client, candidate, reviewer, outsider, django_capture_on_commit_callbacks
):
    """The demo's seeded runs read "0 of 0 cases" under an empty progress bar, an empty cases table,
    and "Run 1 in detail" linking the page to itself."""
    # given: a run on an agent without regression cases, finished with none replayed
    client.force_login(reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("reviews:version_eval_start", args=[candidate.pk]))
    run = EvalRun.objects.get(version=candidate)
    assert run.is_finished and run.cases_total == 0
    # when
    detail_url = reverse("reviews:eval_detail", args=[run.pk])
    page = " ".join(client.get(detail_url).content.decode().split())
    # then
    assert "0 of 0" not in page and "<progress" not in page
    assert "no cases replayed" in page and "This run replayed no cases." in page
    assert f"The run had no case of the intent {candidate.procedure.intent.name}" in page
    assert 'id="selection-cases"' not in page  # no empty per-case table behind "(0 differ)"
    assert f'href="{detail_url}"' not in page
    # the candidate page's eval panel still links the run
    panel = client.get(reverse("reviews:version_eval_panel", args=[candidate.pk]), **HTMX).content.decode()
    assert f'href="{detail_url}"' in panel
    client.force_login(outsider)
    assert client.get(detail_url).status_code == 403
