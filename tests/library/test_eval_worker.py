"""Eval runs on a real Celery worker process consuming Redis (not eager mode), against the
PostgreSQL test database: the demo candidate end to end, and a worker process killed mid-run."""

from __future__ import annotations

import os
import signal
import time

import pytest
from django.contrib.auth import get_user_model

from library import services
from library.demo import seed_demo
from library.evals import eval_runs
from library.models import EvalCaseResult, EvalRun, ProcedureVersion, Status
from tests.evals_support import propose_demo_candidate

pytestmark = [pytest.mark.celery_worker, pytest.mark.redis, pytest.mark.postgres]


def wait_for(predicate, *, timeout: float, worker, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"{what} did not happen in {timeout:.0f} s; worker log:\n{worker.log_path.read_text()[-4000:]}")


def finished(run_id: int) -> EvalRun | None:
    run = EvalRun.objects.get(pk=run_id)
    return run if run.is_finished else None


def test_demo_candidate_eval_on_a_worker_then_approve(celery_worker_process):
    # given the demo data and the mined refund candidate
    demo = seed_demo()
    users = {u.username: u for u in get_user_model().objects.all()}
    candidate = propose_demo_candidate(demo.agent)
    # when a reviewer starts an eval run (queued on commit, through Redis, to the worker)
    run = eval_runs.eval_run_start(version=candidate, user=users["reviewer"])
    # then the worker runs it to a verdict
    run = wait_for(lambda: finished(run.pk), timeout=120, worker=celery_worker_process, what="the eval run")
    assert (run.state, run.verdict) == (EvalRun.State.DONE, EvalRun.Verdict.PASS), run.failure_reason
    assert run.cases_done == run.cases_total == 19 and run.errors == 0
    assert EvalCaseResult.objects.filter(run=run, state="done").count() == 38
    log = celery_worker_process.log_path.read_text()
    assert "reviews.eval_run_dispatch" in log and log.count("reviews.eval_run_chunk") >= 4
    # and the approver approves; the version's evidence names the run
    services.version_approve(version=candidate, user=users["approver"], comment="replay passed")
    version = ProcedureVersion.objects.select_related("procedure", "approved_by").get(pk=candidate.pk)
    assert version.status == Status.ACTIVE
    assert version.to_dict()["evidence"]["evalRunId"] == run.pk
    assert ProcedureVersion.objects.get(procedure=version.procedure, number=1).status == Status.RETIRED


@pytest.fixture
def slow_runner_env(monkeypatch, tmp_path):
    """Set before the worker starts: the worker runs a slowed-down simulator that writes its pid."""
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    monkeypatch.setenv("PROCMEM_TEST_PID_DIR", str(pid_dir))
    monkeypatch.setenv("PROCMEM_TEST_RUNNER_SLEEP", "0.4")
    return pid_dir


def test_a_worker_process_killed_mid_run_never_leaves_a_half_judged_run(slow_runner_env, celery_worker_process):
    # given a run on the slowed-down simulator
    demo = seed_demo()
    agent = demo.agent
    agent.eval_runner, agent.eval_python_path = "python", "tests.evals_support:slow_demo_runner"
    agent.save()
    reviewer = get_user_model().objects.get(username="reviewer")
    run = eval_runs.eval_run_start(version=propose_demo_candidate(agent), user=reviewer)
    wait_for(
        lambda: EvalCaseResult.objects.filter(run_id=run.pk, state="done").count() >= 4,
        timeout=60,
        worker=celery_worker_process,
        what="the first finished cases",
    )
    # when the pool process that is running a case is killed (as the OOM killer would)
    newest = max(slow_runner_env.iterdir(), key=lambda p: p.stat().st_mtime)
    victim = int(newest.name)
    with open(f"/proc/{victim}/status") as status:
        parent = next(int(line.split()[1]) for line in status if line.startswith("PPid:"))
    assert parent == celery_worker_process.pid, "the victim must be a pool process of the test worker"
    assert not EvalRun.objects.get(pk=run.pk).is_finished
    os.kill(victim, signal.SIGKILL)
    # then the lost chunk is delivered again and the run resumes to a complete verdict
    run = wait_for(lambda: finished(run.pk), timeout=180, worker=celery_worker_process, what="the resumed run")
    rows = EvalCaseResult.objects.filter(run=run)
    print(
        f"killed pool process {victim}; the run ended {run.state} {run.verdict}, resumes {run.resumes}, "
        f"re-run case-arms {rows.filter(attempts__gt=1).count()}"
    )
    if run.state == EvalRun.State.DONE:
        assert not rows.exclude(state="done").exists()
        assert run.verdict == EvalRun.Verdict.PASS and run.verdict_detail["totals"]["cases"] == run.cases_total == 19
        assert rows.filter(attempts__gt=1).exists(), "the case the killed process held was run again"
    else:  # failed with the reason, never with a verdict
        assert run.state == EvalRun.State.FAILED and run.verdict == "" and run.failure_reason
    assert (
        "WorkerLostError" in celery_worker_process.log_path.read_text()
        or "SIGKILL" in celery_worker_process.log_path.read_text()
    )
