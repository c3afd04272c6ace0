"""Retirement and rollback evals (library/evals/eval_runs.eval_run_start_change): the replay with the ACTIVE
version removed or replaced by its predecessor, judged on "nothing gets worse"; the audit row of the
retirement names the run, or says the eval was skipped, or not needed (a tool was removed)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from library import services
from library.demo import seed_demo
from library.evals import eval_runs
from library.models import AuditEvent, EvalRun, ProcedureVersion, Status
from tests.conftest import make_passing_eval

pytestmark = pytest.mark.usefixtures("readonly_shares_default")


@pytest.fixture
def two_versions(django_capture_on_commit_callbacks):
    """The demo with its mined refund candidate v2 ACTIVE (v1 RETIRED)."""
    seed_demo()
    users = {u.username: u for u in get_user_model().objects.all()}
    v2 = ProcedureVersion.objects.get(procedure__key="refund.over_limit", number=2, status=Status.CANDIDATE)
    make_passing_eval(v2)
    services.version_approve(version=v2, user=users["approver"], comment="mined")
    v1 = ProcedureVersion.objects.get(procedure__key="refund.over_limit", number=1)
    return users, ProcedureVersion.objects.get(pk=v2.pk), v1


def _retire_event(version):
    return AuditEvent.objects.filter(action=AuditEvent.Action.RETIRE, version=version).latest("at")


def test_a_retirement_eval_replays_without_the_version_and_the_retirement_names_it(
    two_versions, django_capture_on_commit_callbacks
):
    users, v2, _ = two_versions
    with django_capture_on_commit_callbacks(execute=True):
        run = eval_runs.eval_run_start_change(version=v2, user=users["admin"], kind=EvalRun.Kind.RETIRE)
    run.refresh_from_db()
    assert (run.state, run.kind) == (EvalRun.State.DONE, EvalRun.Kind.RETIRE)
    # without v2 the over-limit refunds are promised again: the target intent gets worse
    assert run.verdict == EvalRun.Verdict.FAIL
    assert "refund_over_limit got worse" in " ".join(run.verdict_detail["reasons"])
    selection = run.verdict_detail["selection"]
    assert (selection["injectedIn"], selection["targetCases"]) == (8, 8)  # v2 was injected before
    assert all("refund.over_limit v2" not in c["candidate"] for c in selection["cases"])
    # a retirement eval never counts as an approval's eval
    assert services.passing_eval_for(v2) is None or services.passing_eval_for(v2).kind == EvalRun.Kind.APPROVAL
    services.version_retire(version=v2, user=users["admin"], reason="understood")
    assert _retire_event(v2).after["eval"] == {"run": run.pk, "verdict": "fail"}


def test_retiring_without_an_eval_records_it_as_skipped(two_versions):
    users, v2, _ = two_versions
    services.version_retire(version=v2, user=users["admin"], reason="urgent")
    assert _retire_event(v2).after["eval"] == "skipped"


def test_a_retirement_forced_by_a_removed_tool_needs_no_eval(two_versions):
    users, v2, _ = two_versions
    agent = v2.procedure.agent
    agent.tools = [t for t in agent.tools if t != "createApproval"]
    agent.save()
    services.version_retire(version=v2, user=users["admin"], reason="the approval tool is gone")
    after = _retire_event(v2).after
    assert after["eval"] == "not needed" and "createApproval" in after["evalWhy"]


def test_a_rollback_eval_replays_with_the_predecessor(two_versions, django_capture_on_commit_callbacks):
    users, v2, v1 = two_versions
    with django_capture_on_commit_callbacks(execute=True):
        run = eval_runs.eval_run_start_change(
            version=v2, user=users["admin"], kind=EvalRun.Kind.ROLLBACK, replacement=v1
        )
    run.refresh_from_db()
    assert run.state == EvalRun.State.DONE and run.replacement_id == v1.pk
    cases = {c["caseName"]: c for c in run.verdict_detail["selection"]["cases"]}
    assert cases["refund_over_limit #1"]["baseline"] == ["refund.over_limit v2"]
    assert cases["refund_over_limit #1"]["candidate"] == ["refund.over_limit v1"]
    services.version_rollback(version=v1, user=users["admin"], reason="back")
    event = AuditEvent.objects.filter(action=AuditEvent.Action.ROLLBACK, version=v1).latest("at")
    assert event.after["eval"] == {"run": run.pk, "verdict": run.verdict}


def test_only_admins_evaluate_a_change(two_versions, client):
    users, v2, _ = two_versions
    with pytest.raises(PermissionDenied):
        eval_runs.eval_run_start_change(version=v2, user=users["reviewer"], kind=EvalRun.Kind.RETIRE)
    client.force_login(users["reviewer"])
    response = client.post(reverse("reviews:ops_retire_eval", args=[v2.pk]))
    assert response.status_code in (403, 404)
    assert not EvalRun.objects.filter(version=v2, kind=EvalRun.Kind.RETIRE).exists()


def test_the_confirm_page_shows_the_eval_and_its_verdict(two_versions, client, django_capture_on_commit_callbacks):
    users, v2, _ = two_versions
    client.force_login(users["admin"])
    page = client.get(reverse("reviews:ops_retire", args=[v2.pk])).content.decode()
    assert 'id="change-eval-none"' in page and 'id="start-change-eval"' in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("reviews:ops_retire_eval", args=[v2.pk]))
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert 'id="change-eval-verdict"' in page and "FAIL" in page
