"""Review-by dates (set on approval and roll back, kept by a re-review, shown in the queue, required
of every ACTIVE version by the database) and the demotion check (proposes with the figures,
retires nothing; an admin confirms → version_retire, or dismisses), with their permission matrices."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from library import services
from library.models import AuditEvent, EvalCaseResult, ProcedureVersion, RegressionCase, Status
from reviews.metrics.demotion import below_eval_test
from reviews.models import DemotionProposal, VersionDayRollup
from reviews.services import demotion_confirm, demotion_dismiss, demotions_propose
from tests.reviews.operations_helpers import activate, agent_manager, revise_and_activate

pytestmark = pytest.mark.django_db


@pytest.fixture
def active(candidate, approver):
    return activate(candidate, approver)


def _backdate(version, days: int) -> None:
    ProcedureVersion.objects.filter(pk=version.pk).update(
        status_changed_at=timezone.now() - timedelta(days=days), review_by=timezone.localdate() - timedelta(days=1)
    )
    version.refresh_from_db()


# ------------------------------------------------------------------------------ review-by dates


def test_approval_and_rollback_set_review_by_from_the_agent_setting(agent, candidate, approver, reviewer, admin_user):
    agent.review_after_days = 30
    agent.save(update_fields=["review_after_days"])
    v1 = activate(candidate, approver)
    assert v1.review_by == timezone.localdate() + timedelta(days=30)
    revise_and_activate(v1, reviewer, approver, step="Log it with replyTemplates('logged').")
    rolled = services.version_rollback(version=ProcedureVersion.objects.get(pk=v1.pk), user=admin_user, reason="back")
    assert rolled.review_by == timezone.localdate() + timedelta(days=30)


def test_default_review_period_is_180_days(active):
    assert active.review_by == timezone.localdate() + timedelta(days=180)


def test_database_refuses_an_active_version_without_review_by(active):
    with pytest.raises(IntegrityError), transaction.atomic():
        ProcedureVersion.objects.filter(pk=active.pk).update(review_by=None)


def test_review_confirm_moves_the_date_and_is_audited(active, approver, reviewer):
    _backdate(active, 200)
    with pytest.raises(PermissionDenied):
        services.version_review_confirm(version=active, user=reviewer)
    kept = services.version_review_confirm(version=active, user=approver, comment="still right")
    assert kept.review_by == timezone.localdate() + timedelta(days=180)
    event = AuditEvent.objects.get(action=AuditEvent.Action.REVIEW)
    assert (event.actor, event.reason, event.after["reviewBy"]) == (approver, "still right", kept.review_by.isoformat())


def test_review_confirm_view_permission_matrix(client, active, approver, reviewer, outsider):
    url = reverse("reviews:version_review_confirm", args=[active.pk])
    _backdate(active, 200)
    assert client.post(url).status_code == 302 and "login" in client.post(url)["Location"]
    # every signed-in user may view versions (reviews.access "view"); only approvers may re-review
    for user in (outsider, reviewer):
        client.force_login(user)
        assert client.post(url).status_code == 403
    active.refresh_from_db()
    assert active.review_by < timezone.localdate()
    client.force_login(approver)
    assert client.post(url, {"comment": "ok"}).status_code == 302
    active.refresh_from_db()
    assert active.review_by == timezone.localdate() + timedelta(days=180)


def test_queue_and_agent_page_show_versions_due_for_re_review(client, active, reviewer, admin_user):
    client.force_login(reviewer)
    assert "due-for-review" not in client.get(reverse("reviews:queue")).content.decode()
    _backdate(active, 200)
    body = client.get(reverse("reviews:queue")).content.decode()
    assert "due-for-review" in body and "refund.over_limit v1" in body
    client.force_login(admin_user)
    assert (
        "due-for-review"
        in client.get(reverse("reviews:ops_agent", args=[active.procedure.agent.name])).content.decode()
    )


# ------------------------------------------------------------------------------ demotion figures


def _fisher_less_by_hand(a: int, b: int, c: int, d: int) -> float:
    """P(X ≤ a) for X hypergeometric with the table's margins: [[a, b], [c, d]]."""
    row1, col1, n = a + b, a + c, a + b + c + d
    low = max(0, col1 - (c + d))
    return sum(math.comb(col1, k) * math.comb(n - col1, row1 - k) for k in range(low, a + 1)) / math.comb(n, row1)


def test_below_eval_test_matches_a_hand_computed_fisher_p():
    # 12 of 40 resolved in production vs 9 of 10 in the eval
    p = below_eval_test(resolved=12, labelled=40, eval_passed=9, eval_total=10)
    assert p == pytest.approx(_fisher_less_by_hand(12, 28, 9, 1), rel=1e-9)
    assert p < 0.01
    assert below_eval_test(resolved=0, labelled=0, eval_passed=9, eval_total=10) is None


def _eval_results(version, passed: int, total: int) -> None:
    run = version.approval_eval_run
    for i in range(total):
        case = RegressionCase.objects.create(
            agent=version.procedure.agent, intent=version.procedure.intent, task=f"t{i}"
        )
        EvalCaseResult.objects.create(run=run, case=case, arm="candidate", state="done", passed=i < passed)


def _rollup(version, *, sessions: int, labelled: int, resolved: int) -> None:
    VersionDayRollup.objects.create(
        agent=version.procedure.agent,
        version=version,
        intent=version.procedure.intent,
        day=timezone.localdate() - timedelta(days=1),
        sessions=sessions,
        labelled=labelled,
        resolved=resolved,
    )


def test_demotion_check_proposes_with_figures_and_retires_nothing(active):
    _backdate(active, 60)
    _eval_results(active, 9, 10)
    _rollup(active, sessions=40, labelled=40, resolved=12)
    opened = demotions_propose(agent=active.procedure.agent)
    kinds = {p.kind for p in opened}
    assert kinds == {"below_eval"}  # 40 sessions: not rarely selected
    proposal = opened[0]
    assert (
        proposal.figures["resolved"],
        proposal.figures["labelled"],
        proposal.figures["evalPassed"],
        proposal.figures["evalTotal"],
    ) == (12, 40, 9, 10)
    assert proposal.figures["p"] == pytest.approx(_fisher_less_by_hand(12, 28, 9, 1))
    active.refresh_from_db()
    assert active.status == Status.ACTIVE
    assert demotions_propose(agent=active.procedure.agent) == []  # one open proposal per version
    assert AuditEvent.objects.filter(action=AuditEvent.Action.DEMOTION_PROPOSE).count() == 1


def test_rarely_selected_needs_the_whole_window_active(active):
    _rollup(active, sessions=2, labelled=2, resolved=2)
    assert demotions_propose(agent=active.procedure.agent) == []  # approved today: too young to judge
    _backdate(active, 60)
    [proposal] = demotions_propose(agent=active.procedure.agent)
    assert proposal.kind == "rarely_selected" and proposal.figures["selected"] == 2


def test_confirm_retires_through_version_retire_and_dismiss_keeps(active, other_procedure, other_approver, approver):
    manager = agent_manager(active.procedure.agent)
    _backdate(active, 60)
    other = activate(other_procedure.versions.get(), other_approver)
    _backdate(other, 60)
    proposals = {p.version_id: p for p in demotions_propose(agent=active.procedure.agent)}
    with pytest.raises(PermissionDenied):
        demotion_confirm(proposal=proposals[active.pk], user=approver, reason="x")
    demotion_confirm(proposal=proposals[active.pk], user=manager, reason="nobody needs it")
    demotion_dismiss(proposal=proposals[other.pk], user=manager, reason="seasonal intent")
    active.refresh_from_db()
    other.refresh_from_db()
    assert (active.status, other.status) == (Status.RETIRED, Status.ACTIVE)
    assert AuditEvent.objects.get(action=AuditEvent.Action.RETIRE, version=active).actor == manager
    assert set(DemotionProposal.objects.values_list("state", flat=True)) == {"confirmed", "dismissed"}
    with pytest.raises(services.LifecycleError):
        demotion_dismiss(proposal=proposals[active.pk], user=manager, reason="again")


def test_demotion_decision_view_permission_matrix(client, active, reviewer, approver, outsider):
    _backdate(active, 60)
    [proposal] = demotions_propose(agent=active.procedure.agent)
    url = reverse("reviews:ops_demotion_confirm", args=[proposal.pk])
    assert client.post(url, {"reason": "x"}).status_code == 302
    client.force_login(outsider)
    assert client.post(url, {"reason": "x"}).status_code == 404
    for user in (reviewer, approver):
        client.force_login(user)
        assert client.post(url, {"reason": "x"}).status_code == 403
    proposal.refresh_from_db()
    assert proposal.state == "open"
    manager = agent_manager(active.procedure.agent)
    client.force_login(manager)
    page = client.get(reverse("reviews:ops_agent", args=[active.procedure.agent.name])).content.decode()
    assert f'data-proposal="{proposal.pk}"' in page
    assert client.post(url, {"reason": "unused"}).status_code == 302
    active.refresh_from_db()
    assert active.status == Status.RETIRED
