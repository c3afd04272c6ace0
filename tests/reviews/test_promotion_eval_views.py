"""The eval that production needs on the promote page: an approved version waiting in staging is
evaluated against production's set before it is promoted (reviews/views/releases.py); who may not
see it gets 404, who may see but not promote 403; the run says which environment's set it replayed
against on the candidate page, the run page and in the progress JSON."""

from __future__ import annotations

import pytest
from django.urls import reverse

from library import services
from library.models import EvalRun, Rollout, Status
from tests.conftest import make_passing_eval
from tests.reviews.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def staged(approved_in_staging):
    v1, v2 = approved_in_staging
    assert v2.status == Status.APPROVED and v2.approval_eval_run.environment == "staging"
    return v1, v2


def test_the_promote_page_shows_that_production_needs_its_own_eval_and_refuses_without_it(staged, promoter):
    v1, v2 = staged
    client = client_for(promoter)
    url = reverse("reviews:ops_promote", args=[v2.pk])
    page = client.get(url).content.decode()
    assert 'id="promotion-eval"' in page and 'id="promotion-eval-none"' in page
    assert "replayed against the staging set" in page
    assert "No passing eval of this exact content against production&#x27;s set yet" in page
    assert f'action="{reverse("reviews:ops_promote_eval", args=[v2.pk])}"' in page
    for share in ("", "20"):
        response = client.post(url, {"environment": "production", "share": share, "reason": "a week in staging"})
        assert response.status_code == 409 and "run the promotion eval" in response.content.decode()
    assert not Rollout.objects.exists()
    v2.refresh_from_db()
    assert v2.status == Status.APPROVED


def test_a_promoter_starts_the_promotion_eval_and_the_page_follows_it(staged, promoter):
    _, v2 = staged
    client = client_for(promoter)
    response = client.post(reverse("reviews:ops_promote_eval", args=[v2.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("reviews:ops_promote", args=[v2.pk]) + "#promotion-eval"
    run = EvalRun.objects.get(version=v2, kind=EvalRun.Kind.PROMOTION)
    assert (run.environment, run.state, run.started_by) == ("production", EvalRun.State.QUEUED, promoter)
    page = client.get(reverse("reviews:ops_promote", args=[v2.pk])).content.decode()
    assert f"Run <strong>#{run.pk}</strong>" in page and 'id="promotion-eval-environment">production<' in page
    assert 'hx-trigger="every 2s"' in page and 'id="start-promotion-eval"' not in page


def test_with_a_pass_against_production_the_page_says_so_and_promotes(staged, promoter):
    v1, v2 = staged
    run = make_passing_eval(v2)
    client = client_for(promoter)
    url = reverse("reviews:ops_promote", args=[v2.pk])
    page = client.get(url).content.decode()
    assert (
        'id="promotion-ready"' in page
        and f"eval run #{run.pk} passed" in page
        and 'id="promotion-eval-verdict"' in page
    )
    assert client.post(url, {"environment": "production", "reason": "a week in staging"}).status_code == 302
    v2.refresh_from_db()
    assert v2.status == Status.ACTIVE


def test_who_may_not_see_gets_404_and_who_may_not_promote_gets_403(staged, outsider, approver):
    _, v2 = staged
    url = reverse("reviews:ops_promote_eval", args=[v2.pk])
    assert client_for(outsider).post(url).status_code == 404
    assert client_for(approver).post(url).status_code == 403  # approves the procedure, may not promote it
    assert client_for(approver).get(url).status_code == 405
    assert not EvalRun.objects.filter(kind=EvalRun.Kind.PROMOTION).exists()


def test_a_stale_promotion_eval_start_says_why(staged, promoter):
    v1, _ = staged
    client = client_for(promoter)
    response = client.post(reverse("reviews:ops_promote_eval", args=[v1.pk]), follow=True)
    assert "Only an approved version waiting for production gets a promotion eval" in response.content.decode()
    assert not EvalRun.objects.filter(kind=EvalRun.Kind.PROMOTION).exists()


def test_the_candidate_page_run_page_and_progress_name_the_target_environment(staged, reviewer):
    v1, v2 = staged
    v3 = services.version_revise(
        version=v2,
        user=reviewer,
        applies_when=v2.applies_when,
        steps=[
            *v2.steps[:-1],
            "Tell the customer the expected wait (three days) with replyTemplates('approval_pending').",
        ],
        required_tools=v2.required_tools,
        forbidden_actions=v2.forbidden_actions,
    )
    client = client_for(reviewer)
    page = client.get(reverse("reviews:version", args=[v3.pk])).content.decode()
    assert "against the set <strong>staging</strong> serves (approving releases it there)" in page
    client.post(reverse("reviews:version_eval_start", args=[v3.pk]))
    run = EvalRun.objects.get(version=v3)
    assert run.environment == "staging"
    page = client.get(reverse("reviews:version", args=[v3.pk])).content.decode()
    assert 'id="eval-environment">staging<' in page
    detail = client.get(reverse("reviews:eval_detail", args=[run.pk])).content.decode()
    assert "the set <strong>staging</strong> serves" in detail and "(released to staging)" in detail
    data = client.get(reverse("reviews:eval_progress", args=[run.pk]) + "?format=json").json()
    assert (data["environment"], data["kind"], data["baselineCurrent"]) == ("staging", "approval", True)
