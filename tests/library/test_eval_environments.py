"""An eval run replays against the set of the environment it targets (library/evals/eval_runs.py,
library/environments.eval_target_environment): a candidate's approval eval against staging's set
when the agent has staging (that is where approving releases it), a promotion eval of an APPROVED
version against production's. The arms are built from that set (payload.arm_sets) and each case is
selected through the same Index.inject path the select endpoint uses, so a run targeting staging
injects the version released to staging where production would inject the ACTIVE one. Production's
gate (services, and the database on PostgreSQL): nothing becomes ACTIVE without a passing eval of
its exact content against production's set."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, InternalError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from library import services
from library.api.tokens import token_create
from library.demo import seed_demo
from library.evals import eval_runs
from library.evals.payload import BASELINE, CANDIDATE, arm_sets, clear_cache
from library.models import (
    ApiToken,
    EvalCaseResult,
    EvalRun,
    ProcedureVersion,
    RegressionCase,
    Rollout,
    Status,
)
from library.selectors import active_set_hash, environment_set_hash, environment_versions_for_agent
from tests.conftest import make_passing_eval

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("readonly_shares_default")]

DB_ERRORS = (IntegrityError, InternalError)


@pytest.fixture(autouse=True)
def _fresh_arm_sets():
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def demo():
    result = seed_demo()
    users = {u.username: u for u in get_user_model().objects.all()}
    return result.agent, users


@pytest.fixture
def staged(demo):
    """The demo agent with staging; the mined refund.over_limit v2 approved into staging, so
    staging serves v2 where production serves the ACTIVE v1."""
    agent, users = demo
    agent.environments = ["staging"]
    agent.save(update_fields=["environments"])
    v2 = ProcedureVersion.objects.get(
        procedure__agent=agent, procedure__key="refund.over_limit", number=2, status=Status.CANDIDATE
    )
    run = make_passing_eval(v2)
    assert run.environment == "staging"
    services.version_approve(version=v2, user=users["approver"], comment="staging first", acknowledge_conflicts=True)
    v2.refresh_from_db()
    assert v2.status == Status.APPROVED
    return agent, users, v2


def refund_case(agent) -> RegressionCase:
    return (
        RegressionCase.objects.filter(agent=agent, intent__name="refund_over_limit", is_active=True)
        .order_by("pk")
        .first()
    )


def select_api(agent, task: str, intent: str, **params) -> list[str]:
    token = token_create(
        agent=agent,
        scope=ApiToken.Scope.READ,
        name=f"read {len(params)}",
        user=get_user_model().objects.get(username="admin"),
    )[1]
    response = Client().get(
        reverse("api:select", kwargs={"agent": agent.name}),
        {"task": task, "intent": intent, **params},
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content
    return [f"{p['id']} v{p['version']}" for p in response.json()["injected"]]


def injected(selected) -> list[str]:
    return [f"{p['id']} v{p['version']}" for p in selected.injected]


# --------------------------------------------------------------------------------------------- the target set


def test_staging_set_is_production_with_the_released_version_in_place(staged):
    agent, _, v2 = staged
    v1 = ProcedureVersion.objects.get(procedure=v2.procedure, number=1)
    production = {v.procedure.key: v.number for v in environment_versions_for_agent(agent, "production")}
    staging = {v.procedure.key: v.number for v in environment_versions_for_agent(agent, "staging")}
    assert production["refund.over_limit"] == v1.number == 1 and staging["refund.over_limit"] == 2
    assert {k: n for k, n in staging.items() if k != "refund.over_limit"} == {
        k: n for k, n in production.items() if k != "refund.over_limit"
    }
    # the hash of production's set is the one runs pinned before they named an environment
    assert environment_set_hash(agent, "production") == active_set_hash(agent)
    assert environment_set_hash(agent, "staging") != active_set_hash(agent)
    # an environment that serves nothing of its own serves production's set, with production's hash
    agent.environments = ["staging", "qa"]
    agent.save(update_fields=["environments"])
    assert environment_set_hash(agent, "qa") == active_set_hash(agent)


def test_a_candidates_approval_eval_targets_staging_and_its_baseline_injects_the_staged_version(staged):
    # given staging serving refund.over_limit v2 where production serves v1, and a candidate of
    # another procedure
    agent, users, v2 = staged
    address = ProcedureVersion.objects.get(
        procedure__agent=agent, procedure__key="address.change", status=Status.CANDIDATE
    )
    # when its approval eval starts
    run = eval_runs.eval_run_start(version=address, user=users["reviewer"])
    # then it targets staging and pins staging's set
    assert (run.kind, run.environment) == (EvalRun.Kind.APPROVAL, "staging")
    assert run.baseline_hash == environment_set_hash(agent, "staging") != active_set_hash(agent)
    pinned = {b["key"]: b for b in run.baseline_versions}
    assert pinned["refund.over_limit"]["id"] == v2.pk and pinned["refund.over_limit"]["releasedTo"] == "staging"
    assert "releasedTo" not in pinned["order.status"]
    # the arms: staging's set, and staging's set with the candidate added
    sets = arm_sets(run=run)
    v1 = ProcedureVersion.objects.get(procedure=v2.procedure, number=1)
    assert v2.pk in sets.sets[BASELINE].version_ids and v1.pk not in sets.sets[BASELINE].version_ids
    assert set(sets.sets[CANDIDATE].version_ids) == set(sets.sets[BASELINE].version_ids) | {address.pk}
    # and a refund case's baseline arm injects the staged v2: what the select endpoint gives for staging
    case = refund_case(agent)
    baseline = sets.select(BASELINE, case)
    assert injected(baseline) == ["refund.over_limit v2"]
    assert injected(baseline) == select_api(agent, case.task, "refund_over_limit", environment="staging")
    assert select_api(agent, case.task, "refund_over_limit") == ["refund.over_limit v1"]  # production differs


def test_the_candidate_arm_replaces_the_version_released_to_the_environment(staged):
    agent, users, v2 = staged
    v3 = services.version_revise(
        version=v2,
        user=users["reviewer"],
        applies_when=v2.applies_when,
        steps=[
            *v2.steps[:-1],
            "Tell the customer the expected wait (two days) with replyTemplates('approval_pending').",
        ],
        required_tools=v2.required_tools,
        forbidden_actions=v2.forbidden_actions,
        reason="a clearer wait",
    )
    run = eval_runs.eval_run_start(version=v3, user=users["reviewer"])
    assert run.environment == "staging"
    sets = arm_sets(run=run)
    assert v2.pk in sets.sets[BASELINE].version_ids
    assert v3.pk in sets.sets[CANDIDATE].version_ids and v2.pk not in sets.sets[CANDIDATE].version_ids
    case = refund_case(agent)
    assert injected(sets.select(CANDIDATE, case)) == ["refund.over_limit v3"]


def test_without_staging_nothing_changes_the_run_targets_production(demo):
    agent, users = demo
    v2 = ProcedureVersion.objects.get(
        procedure__agent=agent, procedure__key="refund.over_limit", number=2, status=Status.CANDIDATE
    )
    run = eval_runs.eval_run_start(version=v2, user=users["reviewer"])
    assert (run.environment, run.baseline_hash) == ("production", active_set_hash(agent))
    assert "releasedTo" not in str(run.baseline_versions)
    progress = eval_runs.eval_run_progress(run)
    assert (progress["environment"], progress["kind"], progress["baselineCurrent"]) == ("production", "approval", True)


def test_baseline_current_compares_with_the_target_environments_set(staged, django_capture_on_commit_callbacks):
    agent, users, v2 = staged
    address = ProcedureVersion.objects.get(
        procedure__agent=agent, procedure__key="address.change", status=Status.CANDIDATE
    )
    staging_run = eval_runs.eval_run_start(version=address, user=users["reviewer"])
    assert eval_runs.eval_run_progress(staging_run)["baselineCurrent"] is True
    # staging moves (v2 withdrawn: staging serves production's v1 again); production does not
    promoter = users["admin"]
    services.version_withdraw(version=v2, user=promoter, environment="staging", reason="not yet")
    assert eval_runs.eval_run_progress(staging_run)["baselineCurrent"] is False
    assert eval_runs.eval_run_progress(staging_run)["environment"] == "staging"


# --------------------------------------------------------------------------------------------- the gates


def test_approval_needs_a_pass_against_the_environment_it_releases_to(staged):
    agent, users, _ = staged
    address = ProcedureVersion.objects.get(
        procedure__agent=agent, procedure__key="address.change", status=Status.CANDIDATE
    )
    # a pass against production's set (recorded before the agent had staging) does not count
    EvalRun.objects.create(
        version=address,
        content_hash=address.content_hash,
        environment="production",
        baseline_hash=active_set_hash(agent),
        state=EvalRun.State.DONE,
        verdict=EvalRun.Verdict.PASS,
        runner="test",
        finished_at=timezone.now(),
    )
    blockers = services.approval_blockers(address, users["admin"])
    assert any("passed against the active set, but approving releases it to staging" in b for b in blockers), blockers
    # a pass against staging's set does, while staging serves what it pinned
    make_passing_eval(address)
    assert not [b for b in services.approval_blockers(address, users["admin"]) if "eval" in b.lower()]
    services.version_withdraw(
        version=ProcedureVersion.objects.get(procedure__key="refund.over_limit", number=2),
        user=users["admin"],
        environment="staging",
        reason="back to v1 in staging",
    )
    assert "The staging set changed since the eval run started; start a new run." in services.approval_blockers(
        address, users["admin"]
    )


def test_promotion_to_production_needs_a_pass_against_productions_set(staged):
    agent, users, v2 = staged
    admin = users["admin"]
    blockers = services.promotion_blockers(v2)
    assert blockers == ["No passing eval of this exact content against production's set yet: run the promotion eval."]
    with pytest.raises(services.LifecycleError, match="against production's set"):
        services.version_promote(version=v2, user=admin, environment="production", reason="a week in staging")
    with pytest.raises(services.LifecycleError, match="against production's set"):
        services.version_promote(version=v2, user=admin, environment="production", reason="a fifth first", share=20)
    # another non-production environment needs no eval of its own
    agent.environments = ["staging", "qa"]
    agent.save(update_fields=["environments"])
    services.version_promote(version=v2, user=admin, environment="qa", reason="qa too")
    # a pass against production's set that production still serves: promoted
    run = make_passing_eval(v2)
    assert (run.kind, run.environment) == (EvalRun.Kind.PROMOTION, "production")
    assert services.promotion_blockers(v2) == []
    services.version_promote(version=v2, user=admin, environment="production", reason="a week in staging")
    v2.refresh_from_db()
    assert v2.status == Status.ACTIVE


def test_a_promotion_eval_whose_production_set_moved_no_longer_counts(staged):
    agent, users, v2 = staged
    make_passing_eval(v2)
    # production's set moves: order.status is retired
    order = ProcedureVersion.objects.get(procedure__agent=agent, procedure__key="order.status", status=Status.ACTIVE)
    services.version_retire(version=order, user=users["admin"], reason="rewritten soon")
    assert services.promotion_blockers(v2)[0].startswith("The active set changed since eval run")
    with pytest.raises(services.LifecycleError, match="active set changed"):
        services.version_promote(version=v2, user=users["admin"], environment="production", reason="go")


def test_completing_a_rollout_needs_the_production_pass(staged):
    agent, users, v2 = staged
    v1 = ProcedureVersion.objects.get(procedure=v2.procedure, number=1)
    # a rollout started before promotion needed an eval (the database allows it: v2 is APPROVED)
    rollout = Rollout.objects.create(
        procedure=v2.procedure,
        version=v2,
        control_version=v1,
        share=20,
        reason="legacy",
        started_by=users["admin"],
        started_at=timezone.now(),
    )
    with pytest.raises(services.LifecycleError, match="run the promotion eval before completing the rollout"):
        services.rollout_complete(rollout=rollout, user=users["admin"], reason="the arm resolves more")
    make_passing_eval(v2)
    services.rollout_complete(rollout=rollout, user=users["admin"], reason="the arm resolves more")
    v2.refresh_from_db()
    assert v2.status == Status.ACTIVE


def test_a_promotion_eval_replays_productions_set_with_the_approved_version(staged, django_capture_on_commit_callbacks):
    # given v2 approved into staging, production serving v1
    agent, users, v2 = staged
    # when the promotion eval runs (tasks in-process)
    with django_capture_on_commit_callbacks(execute=True):
        run = eval_runs.eval_run_start_promotion(version=v2, user=users["admin"])
    run.refresh_from_db()
    # then it replayed production's set against production's set with v2 in place of v1
    assert (run.kind, run.environment, run.state) == (EvalRun.Kind.PROMOTION, "production", EvalRun.State.DONE)
    assert run.baseline_hash == active_set_hash(agent)
    assert {b["key"]: b["version"] for b in run.baseline_versions}["refund.over_limit"] == 1
    rows = {
        (r.case_id, r.arm): [f"{p['id']} v{p['version']}" for p in r.injected]
        for r in EvalCaseResult.objects.filter(run=run)
    }
    case = refund_case(agent)
    assert rows[(case.pk, "baseline")] == ["refund.over_limit v1"] and rows[(case.pk, "candidate")] == [
        "refund.over_limit v2"
    ]
    # the demo's v2 improves the refund cases against production's v1 too
    assert run.verdict == EvalRun.Verdict.PASS, run.verdict_detail["reasons"]
    assert run.verdict_detail["environment"] == "production" and run.verdict_detail["selection"]["kind"] == "promotion"
    assert services.promotion_blockers(v2) == []


def test_promotion_eval_is_for_approved_versions_and_promoters_or_reviewers(staged, outsider):
    agent, users, v2 = staged
    with pytest.raises(PermissionDenied):
        eval_runs.eval_run_start_promotion(version=v2, user=outsider)
    candidate = ProcedureVersion.objects.get(
        procedure__agent=agent, procedure__key="address.change", status=Status.CANDIDATE
    )
    with pytest.raises(services.LifecycleError, match="Only an approved version"):
        eval_runs.eval_run_start_promotion(version=candidate, user=users["admin"])
    first = eval_runs.eval_run_start_promotion(version=v2, user=users["reviewer"])
    assert eval_runs.eval_run_start_promotion(version=v2, user=users["admin"]).pk == first.pk


# --------------------------------------------------------------------------------------------- the database


@pytest.mark.postgres
def test_database_refuses_active_without_a_pass_against_production(staged):
    agent, users, v2 = staged
    v1 = ProcedureVersion.objects.get(procedure=v2.procedure, number=1)

    def make_v2_active():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM library_procedurerelease WHERE version_id = %s", [v2.pk])
            cursor.execute("UPDATE library_procedureversion SET status = 'RETIRED' WHERE id = %s", [v1.pk])
            cursor.execute(
                "UPDATE library_procedureversion SET status = 'ACTIVE', review_by = %s WHERE id = %s",
                [timezone.localdate(), v2.pk],
            )

    # v2's approval eval replayed against staging's set: not enough for production
    with pytest.raises(DB_ERRORS, match="against production's set"):
        with transaction.atomic():
            make_v2_active()
    # a passing promotion eval of another content does not count either
    EvalRun.objects.create(
        version=v2,
        kind=EvalRun.Kind.PROMOTION,
        content_hash="0" * 64,
        environment="production",
        state=EvalRun.State.DONE,
        verdict=EvalRun.Verdict.PASS,
        runner="test",
        finished_at=timezone.now(),
    )
    with pytest.raises(DB_ERRORS, match="against production's set"):
        with transaction.atomic():
            make_v2_active()
    # nor a retirement eval of the exact content against production
    EvalRun.objects.create(
        version=v2,
        kind=EvalRun.Kind.RETIRE,
        content_hash=v2.content_hash,
        environment="production",
        state=EvalRun.State.DONE,
        verdict=EvalRun.Verdict.PASS,
        runner="test",
        finished_at=timezone.now(),
    )
    with pytest.raises(DB_ERRORS, match="against production's set"):
        with transaction.atomic():
            make_v2_active()
    # a passing promotion eval of the exact content against production: allowed
    make_passing_eval(v2)
    with transaction.atomic():
        make_v2_active()
    v2.refresh_from_db()
    assert v2.status == Status.ACTIVE


@pytest.mark.postgres
def test_database_keeps_a_runs_kind_and_environment(staged):
    agent, users, v2 = staged
    run = v2.approval_eval_run
    assert run.environment == "staging"
    for sql in (
        "UPDATE library_evalrun SET environment = 'production' WHERE id = %s",
        "UPDATE library_evalrun SET kind = 'promotion' WHERE id = %s",
    ):
        with pytest.raises(DB_ERRORS, match="keeps its kind and environment"):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql, [run.pk])
    unfinished = eval_runs.eval_run_start_promotion(version=v2, user=users["admin"])
    with pytest.raises(DB_ERRORS, match="keeps its kind and environment"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE library_evalrun SET environment = 'staging' WHERE id = %s", [unfinished.pk])


# --------------------------------------------------------------------------------------------- the migration

BEFORE = [("library", "0026_agent_coding_families")]


def _columns(table: str) -> set[str]:
    with connection.cursor() as cursor:
        return {c.name for c in connection.introspection.get_table_description(cursor, table)}


def _triggers() -> set[str]:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
        else:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        return {name for (name,) in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_the_migration_goes_back_and_forth_and_earlier_runs_target_production(candidate):
    # given a run recorded before runs named an environment
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        assert "environment" not in _columns("library_evalrun")
        assert not {"procmem_version_production_eval", "procmem_evalrun_target_kept"} & _triggers()
        old = executor.loader.project_state(BEFORE).apps
        OldRun = old.get_model("library", "EvalRun")
        earlier = OldRun.objects.create(
            version_id=candidate.pk, content_hash=candidate.content_hash, state="done", verdict="pass"
        )
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    # then forward again it replayed against production's set, and the gates are in place
    assert "environment" in _columns("library_evalrun")
    assert {"procmem_version_production_eval", "procmem_evalrun_target_kept"} <= _triggers()
    assert EvalRun.objects.get(pk=earlier.pk).environment == "production"
