"""Evals replay against the set of the environment they target, on a real Celery worker process
against PostgreSQL. The demo agent has staging, and the mined refund.over_limit v2 is approved into
it: staging serves v2, production the ACTIVE v1.

1. A candidate's approval eval targets staging (approving releases it there): every case's baseline
   arm injects what `GET …/select?environment=staging` returns — v2 in the refund cases, where
   production would inject v1.
2. The promotion eval of v2 targets production: its baseline arm injects what production's select
   returns (v1), its other arm production's set with v2 in place of v1 — here the staging set, so
   it injects what staging's select returns. It passes, and production may take v2.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from library import services
from library.api.tokens import token_create
from library.demo import seed_demo
from library.evals import eval_runs
from library.models import ApiToken, EvalCaseResult, EvalRun, ProcedureVersion, RegressionCase, Status
from library.selectors import active_set_hash, environment_set_hash
from tests.conftest import make_passing_eval
from tests.library.test_eval_worker import finished, wait_for

pytestmark = [
    pytest.mark.celery_worker,
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True, databases=["default", "readonly"]),
]


def selected_by_api(agent, token: str, task: str, intent: str, environment: str | None) -> list[str]:
    params = {"task": task, "intent": intent, **({"environment": environment} if environment else {})}
    response = Client().get(
        reverse("api:select", kwargs={"agent": agent.name}), params, HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 200, response.content
    return [f"{p['id']} v{p['version']}" for p in response.json()["injected"]]


def rows_of(run: EvalRun) -> dict[tuple[int, str], list[str]]:
    return {
        (row.case_id, row.arm): [f"{p['id']} v{p['version']}" for p in row.injected]
        for row in EvalCaseResult.objects.filter(run=run).select_related("case__intent")
    }


@pytest.fixture
def staged_demo():
    demo = seed_demo()
    agent = demo.agent
    users = {u.username: u for u in get_user_model().objects.all()}
    agent.environments = ["staging"]
    agent.save(update_fields=["environments"])
    v2 = ProcedureVersion.objects.get(
        procedure__agent=agent, procedure__key="refund.over_limit", number=2, status=Status.CANDIDATE
    )
    make_passing_eval(v2)  # its approval eval, against staging's set
    services.version_approve(version=v2, user=users["approver"], comment="staging first", acknowledge_conflicts=True)
    token = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=users["admin"])[1]
    return agent, users, ProcedureVersion.objects.get(pk=v2.pk), token


def test_an_approval_eval_with_staging_replays_the_staging_set(celery_worker_process, staged_demo):
    # given staging serving refund.over_limit v2, production v1, and a candidate of another procedure
    agent, users, v2, token = staged_demo
    address = ProcedureVersion.objects.get(
        procedure__agent=agent, procedure__key="address.change", status=Status.CANDIDATE
    )
    # when its approval eval runs on the worker
    run = eval_runs.eval_run_start(version=address, user=users["reviewer"])
    run = wait_for(lambda: finished(run.pk), timeout=240, worker=celery_worker_process, what="the approval eval")
    assert run.state == EvalRun.State.DONE, run.failure_reason
    # then it replayed against staging's set, pinned at its start
    assert run.environment == "staging" and run.baseline_hash == environment_set_hash(
        agent, "staging"
    ) != active_set_hash(agent)
    assert eval_runs.eval_run_progress(run)["baselineCurrent"] is True
    rows = rows_of(run)
    cases = list(RegressionCase.objects.filter(agent=agent, is_active=True).select_related("intent"))
    for case in cases:
        assert rows[(case.pk, "baseline")] == selected_by_api(agent, token, case.task, case.intent.name, "staging"), (
            case.task
        )
    refund = [c for c in cases if c.intent.name == "refund_over_limit"]
    assert refund and all(rows[(c.pk, "baseline")] == ["refund.over_limit v2"] for c in refund)
    assert selected_by_api(agent, token, refund[0].task, "refund_over_limit", None) == ["refund.over_limit v1"]
    assert run.verdict_detail["environment"] == "staging"


def test_a_promotion_eval_replays_production_against_production_with_the_staged_version(
    celery_worker_process, staged_demo
):
    # given v2 waiting in staging; production needs its own eval first
    agent, users, v2, token = staged_demo
    assert services.promotion_blockers(v2)
    # when its promotion eval runs on the worker
    run = eval_runs.eval_run_start_promotion(version=v2, user=users["admin"])
    run = wait_for(lambda: finished(run.pk), timeout=240, worker=celery_worker_process, what="the promotion eval")
    assert run.state == EvalRun.State.DONE, run.failure_reason
    # then its baseline is production's set, and the other arm production's with v2: staging's set here
    assert (run.kind, run.environment, run.baseline_hash) == (
        EvalRun.Kind.PROMOTION,
        "production",
        active_set_hash(agent),
    )
    rows = rows_of(run)
    for case in RegressionCase.objects.filter(agent=agent, is_active=True).select_related("intent"):
        assert rows[(case.pk, "baseline")] == selected_by_api(agent, token, case.task, case.intent.name, None), (
            case.task
        )
        assert rows[(case.pk, "candidate")] == selected_by_api(agent, token, case.task, case.intent.name, "staging"), (
            case.task
        )
    selection = run.verdict_detail["selection"]
    assert (selection["kind"], selection["environment"], selection["injectedIn"], selection["targetCases"]) == (
        "promotion",
        "production",
        8,
        8,
    )
    # and it passes: production may take v2
    assert run.verdict == EvalRun.Verdict.PASS, run.verdict_detail["reasons"]
    assert services.promotion_blockers(v2) == []
    services.version_promote(version=v2, user=users["admin"], environment="production", reason="a week in staging")
    assert ProcedureVersion.objects.get(pk=v2.pk).status == Status.ACTIVE
