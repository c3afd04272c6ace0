"""Eval runs through the services and tasks (tasks run in-process here; tests/library/
test_eval_worker.py runs them on a real worker): pinning, the demo verdicts, the approval gate, and
the faults — a runner that times out, malformed answers, a redelivered task, a lost worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from library import services
from library.demo import seed_demo
from library.evals import eval_runs
from library.evals.tasks import eval_run_chunk, eval_run_dispatch
from library.models import AuditEvent, EvalCaseResult, EvalRun, ProcedureVersion, RegressionCase, Status
from library.selectors import active_set_hash
from library.signals import eval_run_finished
from tests import evals_support
from tests.conftest import make_passing_eval
from tests.evals_support import ScriptedServer, propose_demo_candidate

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    result = seed_demo()
    users = {u.username: u for u in get_user_model().objects.all()}
    return result.agent, users


@pytest.fixture
def finished_signals():
    received: list[int] = []

    def receiver(sender, run_id, **kwargs):
        received.append(run_id)

    eval_run_finished.connect(receiver, weak=False)
    yield received
    eval_run_finished.disconnect(receiver)


def run_eval(version, user, capture) -> EvalRun:
    """Starts a run and lets its tasks run in-process (eager) when the transaction commits."""
    with capture(execute=True):
        run = eval_runs.eval_run_start(version=version, user=user)
    run.refresh_from_db()
    return run


def start_only(version, user) -> EvalRun:
    """Starts a run without executing its on-commit dispatch, then claims it as the dispatch would."""
    run = eval_runs.eval_run_start(version=version, user=user)
    chunks = eval_runs.eval_run_begin(run_id=run.pk)
    run.refresh_from_db()
    run.chunks = chunks
    return run


# --------------------------------------------------------------------------------------------- start


def test_start_pins_content_and_baseline_and_creates_every_case_arm(demo, django_capture_on_commit_callbacks):
    agent, users = demo
    candidate = propose_demo_candidate(agent)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run = eval_runs.eval_run_start(version=candidate, user=users["reviewer"])
    assert len(callbacks) == 1  # the dispatch is queued only on commit
    assert run.state == EvalRun.State.QUEUED
    assert run.content_hash == candidate.content_hash
    assert run.baseline_hash == active_set_hash(agent)
    assert {b["key"] for b in run.baseline_versions} == {"refund.over_limit", "refund.within_limit", "order.status"}
    cases = RegressionCase.objects.filter(agent=agent, is_active=True).count()
    assert run.cases_total == cases == 19
    assert EvalCaseResult.objects.filter(run=run, state=EvalCaseResult.State.PENDING).count() == 2 * cases
    assert run.thresholds["alpha"] == 0.05 and run.runner == "demo"
    event = AuditEvent.objects.get(action=AuditEvent.Action.EVAL_START, version=candidate)
    assert event.actor == users["reviewer"] and event.after["run"] == run.pk


def test_start_needs_a_reviewer_and_a_candidate(demo):
    agent, users = demo
    outsider = get_user_model().objects.create_user("outsider", password="x")
    candidate = propose_demo_candidate(agent)
    with pytest.raises(PermissionDenied):
        eval_runs.eval_run_start(version=candidate, user=outsider)
    active = ProcedureVersion.objects.get(procedure__key="order.status", status=Status.ACTIVE)
    with pytest.raises(services.LifecycleError, match="Only candidates"):
        eval_runs.eval_run_start(version=active, user=users["reviewer"])


def test_a_second_start_returns_the_unfinished_run(demo):
    agent, users = demo
    candidate = propose_demo_candidate(agent)
    first = eval_runs.eval_run_start(version=candidate, user=users["reviewer"])
    assert eval_runs.eval_run_start(version=candidate, user=users["admin"]).pk == first.pk


# --------------------------------------------------------------------------------------------- the demo verdicts and the gate


def test_demo_candidate_passes_and_the_approval_carries_the_run(
    demo, django_capture_on_commit_callbacks, finished_signals
):
    agent, users = demo
    candidate = propose_demo_candidate(agent)
    run = run_eval(candidate, users["reviewer"], django_capture_on_commit_callbacks)
    assert (run.state, run.verdict) == (EvalRun.State.DONE, EvalRun.Verdict.PASS)
    assert run.cases_done == run.cases_total == 19 and run.errors == 0
    target = run.verdict_detail["intents"][0]
    assert (
        target["intent"],
        target["improved"],
        target["regressed"],
        target["baseline_passed"],
        target["candidate_passed"],
    ) == (
        "refund_over_limit",
        8,
        0,
        0,
        8,
    )
    assert all(row["status"] == "unchanged" for row in run.verdict_detail["intents"][1:])
    assert finished_signals == [run.pk]
    assert AuditEvent.objects.filter(action=AuditEvent.Action.EVAL_FINISH, version=candidate).count() == 1
    # every case's numbers are stored, both arms
    baseline = EvalCaseResult.objects.filter(run=run, arm="baseline", case__intent__name="refund_over_limit").first()
    assert baseline.passed is False and "expected call createApproval was not made" in baseline.failures
    # the approver approves; the version's evidence names the run
    assert services.approval_blockers(candidate, users["approver"]) == []
    services.version_approve(version=candidate, user=users["approver"], comment="eval passed")
    candidate = ProcedureVersion.objects.select_related("procedure", "approved_by").get(pk=candidate.pk)
    assert candidate.status == Status.ACTIVE and candidate.approval_eval_run_id == run.pk
    assert candidate.to_dict()["evidence"]["evalRunId"] == run.pk


def test_a_harmful_candidate_fails(demo, django_capture_on_commit_callbacks):
    agent, users = demo
    # the seeded, quarantined "fast track": skips the approval and confirms the refund at once
    fast_track = ProcedureVersion.objects.get(procedure__key="refund.fast_track")
    run = run_eval(fast_track, users["reviewer"], django_capture_on_commit_callbacks)
    assert (run.state, run.verdict) == (EvalRun.State.DONE, EvalRun.Verdict.FAIL)
    assert run.verdict_detail["intents"][0]["status"] == "not_improved"


def test_a_candidate_that_breaks_its_intent_fails_as_a_regression(demo, django_capture_on_commit_callbacks):
    agent, users = demo
    broken = propose_demo_candidate(
        agent,
        key="order.status",
        intent="order_status",
        steps=["Answer from memory with replyTemplates('order_status')."],
        applies_when="The customer asks where their order is or when it will arrive.",
    )
    run = run_eval(broken, users["reviewer"], django_capture_on_commit_callbacks)
    assert run.verdict == EvalRun.Verdict.FAIL
    target = run.verdict_detail["intents"][0]
    # the served selection reaches 3 of the 4 order questions with this appliesWhen ("Has ORD-30288
    # shipped yet?" gets no procedure in either arm, and passes unguided in both)
    assert (target["intent"], target["regressed"], target["status"]) == ("order_status", 3, "regressed")
    assert run.verdict_detail["selection"]["injectedIn"] == 3
    with pytest.raises(services.LifecycleError, match="No passing eval run"):
        services.version_approve(version=broken, user=users["admin"])


def test_a_passing_run_whose_candidate_reaches_too_few_of_its_cases_cannot_be_approved(
    demo, django_capture_on_commit_callbacks
):
    # given ten more refund_over_limit cases worded so that neither the ACTIVE refund procedure nor
    # the candidate is selected for them: both arms replay them alike, so the verdict can pass
    agent, users = demo
    intent = agent.intents.get(name="refund_over_limit")
    for number in range(10):
        RegressionCase.objects.create(
            agent=agent, intent=intent, name=f"unreached {number}", task=f"Hello, a question about item {number}."
        )
    candidate = propose_demo_candidate(agent)
    # when its eval runs
    run = run_eval(candidate, users["reviewer"], django_capture_on_commit_callbacks)
    # then the run passes, but the candidate was injected in 8 of its intent's 18 cases (44 %, below
    # PROCMEM_EVAL_MIN_INJECTED_SHARE, 50 %): a blocker, and the approval service refuses
    assert run.verdict == EvalRun.Verdict.PASS and run.is_passing, run.verdict_detail["reasons"]
    selection = run.verdict_detail["selection"]
    assert (selection["injectedIn"], selection["targetCases"]) == (8, 18)
    assert run.thresholds["min_injected_share"] == 0.5
    blockers = services.approval_blockers(candidate, users["approver"])
    reach = "The served selection injected the candidate in 8 of 18 cases of its intent refund_over_limit (44 %"
    assert [b for b in blockers if b.startswith(reach)] == [services.selection_reach_blocker(run)], blockers
    with pytest.raises(services.LifecycleError, match="injected the candidate in 8 of 18 cases"):
        services.version_approve(version=candidate, user=users["approver"])
    candidate.refresh_from_db()
    assert candidate.status == Status.CANDIDATE


def test_an_edit_voids_the_passing_run(demo, django_capture_on_commit_callbacks):
    agent, users = demo
    candidate = propose_demo_candidate(agent)
    assert run_eval(candidate, users["reviewer"], django_capture_on_commit_callbacks).is_passing
    edited = services.version_revise(
        version=candidate,
        user=users["reviewer"],
        applies_when=candidate.applies_when,
        steps=candidate.steps + ["Thank the customer."],
        required_tools=candidate.required_tools,
        forbidden_actions=candidate.forbidden_actions,
    )
    assert "No passing eval run on this exact content yet." in services.approval_blockers(edited, users["approver"])


def test_a_moved_active_set_asks_for_a_new_run(demo, django_capture_on_commit_callbacks):
    agent, users = demo
    candidate = propose_demo_candidate(agent)
    assert run_eval(candidate, users["reviewer"], django_capture_on_commit_callbacks).is_passing
    # another procedure of the agent becomes ACTIVE after the run started
    address = ProcedureVersion.objects.get(procedure__key="address.change")
    make_passing_eval(address)
    services.version_approve(version=address, user=users["admin"])
    blockers = services.approval_blockers(candidate, users["approver"])
    assert "The active set changed since the eval run started; start a new run." in blockers
    with pytest.raises(services.LifecycleError, match="active set changed"):
        services.version_approve(version=candidate, user=users["approver"])
    # a new run on the new baseline clears it
    second = run_eval(candidate, users["reviewer"], django_capture_on_commit_callbacks)
    assert second.is_passing and services.approval_blockers(candidate, users["approver"]) == []


def test_a_run_without_cases_is_inconclusive(demo, django_capture_on_commit_callbacks):
    agent, users = demo
    RegressionCase.objects.filter(agent=agent).update(is_active=False)
    run = run_eval(propose_demo_candidate(agent), users["reviewer"], django_capture_on_commit_callbacks)
    assert (run.state, run.verdict, run.cases_total) == (EvalRun.State.DONE, EvalRun.Verdict.INCONCLUSIVE, 0)
    assert "at least 5 are needed" in run.verdict_detail["reasons"][0]


# --------------------------------------------------------------------------------------------- faults


def test_a_runner_that_times_out_counts_as_errors_not_failures(demo, django_capture_on_commit_callbacks, settings):
    agent, users = demo
    settings.PROCMEM_EVAL_HTTP_RETRIES = 0
    RegressionCase.objects.filter(agent=agent).exclude(intent__name="refund_over_limit").update(is_active=False)
    with ScriptedServer(lambda path, body, headers: (200, {"tool_calls": [], "reply": "late"}, 1.0)) as server:
        agent.eval_runner, agent.eval_url, agent.eval_timeout_seconds = "http", server.url, 0.1
        agent.save()
        run = run_eval(propose_demo_candidate(agent), users["reviewer"], django_capture_on_commit_callbacks)
    assert run.state == EvalRun.State.DONE
    assert run.verdict == EvalRun.Verdict.INCONCLUSIVE
    assert run.errors == 16 and run.verdict_detail["totals"]["errors"] == 8
    rows = EvalCaseResult.objects.filter(run=run)
    assert not rows.filter(passed=False).exists()  # errors are not failed cases
    assert all("timed out after 0.1 s (1 attempt)" in row.error for row in rows)
    assert "errored in the runner" in run.verdict_detail["reasons"][0]


def test_malformed_json_counts_as_errors(demo, django_capture_on_commit_callbacks):
    agent, users = demo
    with ScriptedServer(lambda path, body, headers: (200, b"<html>oops</html>", 0)) as server:
        agent.eval_runner, agent.eval_url = "http", server.url
        agent.save()
        run = run_eval(propose_demo_candidate(agent), users["reviewer"], django_capture_on_commit_callbacks)
    assert run.verdict == EvalRun.Verdict.INCONCLUSIVE and run.errors == 2 * run.cases_total
    assert EvalCaseResult.objects.filter(run=run, error__startswith="malformed JSON").count() == 2 * run.cases_total


def test_a_misconfigured_runner_is_an_error_of_every_case(demo, django_capture_on_commit_callbacks):
    agent, users = demo
    agent.eval_runner, agent.eval_python_path = "python", "tests.evals_support:does_not_exist"
    agent.save()
    run = run_eval(propose_demo_candidate(agent), users["reviewer"], django_capture_on_commit_callbacks)
    assert run.verdict == EvalRun.Verdict.INCONCLUSIVE
    assert "cannot import" in EvalCaseResult.objects.filter(run=run).first().error


def test_a_redelivered_chunk_does_not_run_a_case_twice(demo, settings):
    agent, users = demo
    settings.PROCMEM_EVAL_CHUNK_SIZE = 4
    agent.eval_runner, agent.eval_python_path = "python", "tests.evals_support:recording_runner"
    agent.save()
    run = start_only(propose_demo_candidate(agent), users["reviewer"])
    first_chunk = run.chunks[0]
    evals_support.CALLS.clear()
    # when the same task is delivered twice
    eval_run_chunk.apply(kwargs={"run_id": run.pk, "case_ids": first_chunk}, task_id="chunk-task-1")
    eval_run_chunk.apply(kwargs={"run_id": run.pk, "case_ids": first_chunk}, task_id="chunk-task-1")
    # then each case-arm ran once
    assert len(evals_support.CALLS) == 2 * len(first_chunk)
    rows = EvalCaseResult.objects.filter(run=run, case_id__in=first_chunk)
    assert rows.count() == 2 * len(first_chunk) and all(r.state == "done" and r.attempts == 1 for r in rows)
    run.refresh_from_db()
    assert run.state == EvalRun.State.RUNNING and run.verdict == ""  # the other chunks have not run: no verdict
    assert run.cases_done == len(first_chunk)


def test_rows_held_by_another_live_task_are_left_alone(demo):
    agent, users = demo
    agent.eval_runner, agent.eval_python_path = "python", "tests.evals_support:recording_runner"
    agent.save()
    run = start_only(propose_demo_candidate(agent), users["reviewer"])
    case_ids = run.chunks[0]
    held = EvalCaseResult.objects.filter(run=run, case_id=case_ids[0], arm="baseline")
    held.update(state="running", claimed_by="other-task", claim_nonce="n1", claimed_at=timezone.now(), attempts=1)
    evals_support.CALLS.clear()
    eval_run_chunk.apply(kwargs={"run_id": run.pk, "case_ids": case_ids}, task_id="mine")
    assert len(evals_support.CALLS) == 2 * len(case_ids) - 1
    assert held.get().state == "running" and held.get().claimed_by == "other-task"


def test_a_lost_worker_leaves_the_run_resumable_and_never_half_judged(
    demo, settings, django_capture_on_commit_callbacks, finished_signals
):
    agent, users = demo
    settings.PROCMEM_EVAL_STALE_SECONDS = 60
    run = start_only(propose_demo_candidate(agent), users["reviewer"])
    # given: the first chunk finished, then a worker died holding two rows of the second chunk
    eval_run_chunk.apply(kwargs={"run_id": run.pk, "case_ids": run.chunks[0]}, task_id="t1")
    long_ago = timezone.now() - timezone.timedelta(minutes=10)
    EvalCaseResult.objects.filter(run=run, case_id=run.chunks[1][0]).update(
        state="running", claimed_by="t-dead", claim_nonce="x", claimed_at=long_ago, attempts=1
    )
    EvalRun.objects.filter(pk=run.pk).update(heartbeat_at=long_ago)
    # the finaliser refuses to judge an incomplete run
    assert eval_runs.eval_run_finalize(run_id=run.pk) is None
    run.refresh_from_db()
    assert run.state == EvalRun.State.RUNNING and run.verdict == "" and run.verdict_detail == {}
    # when the recovery task runs
    with django_capture_on_commit_callbacks(execute=True):
        acted = eval_runs.eval_runs_recover()
    # then the run was resumed, every case ran, and it was judged once, completely
    assert acted == [run.pk]
    run.refresh_from_db()
    assert (run.state, run.verdict, run.resumes) == (EvalRun.State.DONE, EvalRun.Verdict.PASS, 1)
    assert not EvalCaseResult.objects.filter(run=run).exclude(state="done").exists()
    assert finished_signals == [run.pk]


def test_a_redelivery_of_the_dead_task_takes_over_its_own_rows(demo):
    agent, users = demo
    run = start_only(propose_demo_candidate(agent), users["reviewer"])
    case_ids = run.chunks[0]
    EvalCaseResult.objects.filter(run=run, case_id=case_ids[0], arm="baseline").update(
        state="running", claimed_by="t-1", claim_nonce="old", claimed_at=timezone.now(), attempts=1
    )
    eval_run_chunk.apply(kwargs={"run_id": run.pk, "case_ids": case_ids}, task_id="t-1")
    row = EvalCaseResult.objects.get(run=run, case_id=case_ids[0], arm="baseline")
    assert (row.state, row.attempts, row.passed) == ("done", 2, False)


def test_a_case_that_keeps_killing_workers_becomes_an_error(demo, settings):
    agent, users = demo
    settings.PROCMEM_EVAL_MAX_ATTEMPTS = 3
    run = start_only(propose_demo_candidate(agent), users["reviewer"])
    case_ids = run.chunks[0]
    EvalCaseResult.objects.filter(run=run, case_id=case_ids[0], arm="candidate").update(
        state="running", claimed_by="t-2", claim_nonce="old", claimed_at=timezone.now(), attempts=3
    )
    eval_run_chunk.apply(kwargs={"run_id": run.pk, "case_ids": case_ids}, task_id="t-2")
    row = EvalCaseResult.objects.get(run=run, case_id=case_ids[0], arm="candidate")
    assert row.state == "done" and row.passed is None and "worker was lost 3 times" in row.error


def test_a_run_that_keeps_stalling_fails_with_the_reason(
    demo, settings, finished_signals, django_capture_on_commit_callbacks
):
    agent, users = demo
    settings.PROCMEM_EVAL_STALE_SECONDS = 60
    settings.PROCMEM_EVAL_MAX_RESUMES = 2
    run = start_only(propose_demo_candidate(agent), users["reviewer"])
    EvalRun.objects.filter(pk=run.pk).update(resumes=2, heartbeat_at=timezone.now() - timezone.timedelta(minutes=5))
    with django_capture_on_commit_callbacks(execute=True):
        eval_runs.eval_runs_recover()
    run.refresh_from_db()
    assert run.state == EvalRun.State.FAILED and run.verdict == ""
    assert "stalled after 2 resumes" in run.failure_reason
    assert finished_signals == [run.pk]


def test_a_chunk_that_fails_for_good_fails_the_run(demo, monkeypatch):
    agent, users = demo
    run = start_only(propose_demo_candidate(agent), users["reviewer"])

    def explode(**kwargs):
        raise ValueError("database exploded")

    monkeypatch.setattr(eval_runs, "eval_chunk_run", explode)
    result = eval_run_chunk.apply(kwargs={"run_id": run.pk, "case_ids": run.chunks[0]}, task_id="t-x", throw=False)
    assert result.failed()  # and EvalRunTask.on_failure ran
    run.refresh_from_db()
    assert run.state == EvalRun.State.FAILED and "ValueError: database exploded" in run.failure_reason


def test_cancel_stops_the_run_and_no_verdict_follows(demo, finished_signals, django_capture_on_commit_callbacks):
    agent, users = demo
    run = start_only(propose_demo_candidate(agent), users["reviewer"])
    with django_capture_on_commit_callbacks(execute=True):
        eval_runs.eval_run_cancel(run=run, user=users["reviewer"])
    assert eval_run_chunk.apply(kwargs={"run_id": run.pk, "case_ids": run.chunks[0]}).get() == 0
    run.refresh_from_db()
    assert (run.state, run.verdict, run.failure_reason) == (EvalRun.State.CANCELLED, "", "Cancelled by reviewer")
    assert AuditEvent.objects.filter(action=AuditEvent.Action.EVAL_CANCEL).count() == 1
    assert finished_signals == [run.pk]
    with pytest.raises(services.LifecycleError, match="already cancelled"):
        eval_runs.eval_run_cancel(run=run, user=users["reviewer"])


def test_progress_reports_cases_done_of_total(demo):
    agent, users = demo
    run = start_only(propose_demo_candidate(agent), users["reviewer"])
    eval_run_chunk.apply(kwargs={"run_id": run.pk, "case_ids": run.chunks[0]})
    run.refresh_from_db()
    progress = eval_runs.eval_run_progress(run)
    assert progress["casesDone"] == len(run.chunks[0]) and progress["casesTotal"] == 19
    assert progress["state"] == "running" and progress["verdict"] is None and progress["baselineCurrent"] is True


def test_a_redelivered_dispatch_sends_no_second_set_of_chunks(demo):
    agent, users = demo
    run = start_only(propose_demo_candidate(agent), users["reviewer"])  # the first delivery claimed the run
    assert eval_run_dispatch.apply(args=[run.pk], task_id="dispatch-1").get() == 0
    run.refresh_from_db()
    assert run.state == EvalRun.State.RUNNING and run.verdict == ""
    assert not EvalCaseResult.objects.filter(run=run).exclude(state="pending").exists()


def test_a_reviewer_may_resume_only_a_stalled_run(demo, settings, django_capture_on_commit_callbacks):
    agent, users = demo
    settings.PROCMEM_EVAL_STALE_SECONDS = 60
    run = start_only(propose_demo_candidate(agent), users["reviewer"])
    with pytest.raises(services.LifecycleError, match="resume is for runs stalled"):
        eval_runs.eval_run_resume(run=run, user=users["reviewer"])
    EvalRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timezone.timedelta(minutes=10))
    with django_capture_on_commit_callbacks(execute=True):
        eval_runs.eval_run_resume(run=run, user=users["reviewer"])
    run.refresh_from_db()
    assert (run.state, run.verdict, run.resumes) == (EvalRun.State.DONE, EvalRun.Verdict.PASS, 1)
    assert AuditEvent.objects.filter(
        action=AuditEvent.Action.EVAL_START, actor=users["reviewer"], reason__startswith="Resumed"
    ).exists()


def test_a_model_replay_run_against_a_scripted_chat_completions_server(demo, django_capture_on_commit_callbacks):
    """The whole path for teams without an eval endpoint: the injected procedure reaches the model
    in the system prompt, tool calls are answered from the recorded results, the checks judge it."""
    agent, users = demo
    RegressionCase.objects.filter(agent=agent).exclude(intent__name="refund_over_limit").update(is_active=False)

    def model(path, body, headers):
        messages = body["messages"]
        guided = "createApproval" in messages[0]["content"]
        done = [m for m in messages if m["role"] == "tool"]
        plan = ["lookupOrder", "checkReturnWindow"] + (["createApproval"] if guided else [])
        if len(done) < len(plan):
            name = plan[len(done)]
            call = {"id": f"c{len(done)}", "type": "function", "function": {"name": name, "arguments": "{}"}}
            return 200, {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}, 0
        reply = (
            "I asked for approval; you will hear from us." if guided else "Your refund of 480 EUR is being processed."
        )
        return 200, {"choices": [{"message": {"role": "assistant", "content": reply}}]}, 0

    with ScriptedServer(model) as server:
        agent.eval_runner, agent.model_base_url, agent.model_name, agent.model_api_key = (
            "model",
            server.url + "/v1",
            "scripted",
            "sk-top-secret",
        )
        agent.save()
        run = run_eval(propose_demo_candidate(agent), users["reviewer"], django_capture_on_commit_callbacks)
    assert (run.state, run.verdict) == (EvalRun.State.DONE, EvalRun.Verdict.PASS), run.verdict_detail
    # the recorded lookupOrder result came back to the model as the tool message
    second_call = next(r["body"] for r in server.requests if any(m["role"] == "tool" for m in r["body"]["messages"]))
    assert '"total": "' in next(m["content"] for m in second_call["messages"] if m["role"] == "tool")
    stored = " ".join(
        str(v) for v in EvalCaseResult.objects.filter(run=run).values_list("error", "reply", "tool_calls")
    )
    assert "sk-top-secret" not in stored + str(run.verdict_detail)


# --------------------------------------------------------------------------------------------- task registration


def test_a_worker_registers_every_task_the_runs_queue_and_the_beat_schedule_names(settings):
    """In a fresh process, the way `celery worker` starts: Django set up, then the task modules
    imported by autodiscovery. The runs queue their tasks by name, so a name no module registers
    would only show on a worker."""
    code = (
        "import django; django.setup()\n"
        "from procmem_site.celery import app\n"
        "app.loader.import_default_modules()\n"
        "print('\\n'.join(sorted(app.tasks)))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "procmem_site.test_settings", "CELERY_SKIP_CHECKS": "1"}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    registered = set(result.stdout.split())
    assert {eval_runs.DISPATCH_TASK, eval_runs.CHUNK_TASK, eval_runs.RECOVER_TASK} <= registered
    assert {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()} <= registered
