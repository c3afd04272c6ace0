"""A coding procedure in the browser: the 231 real SWE-bench sessions imported and mined into one
candidate per task family, the candidate page read by a reviewer — the family, its steps, the files
read first and changed, the verify command, how often it passed, the unresolved sessions beside the
resolved (shown, not a gate) and the recovery notes — then an eval run and the approval through the
usual gate. The eval's agent is a stand-in (tests/evals_support.coding_agent_runner) that runs the
verify command at once when a procedure names one, and otherwise first the test runner that fails
in the SWE-bench containers. Screenshots in test-artifacts/screenshots/."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command

from library.demo import DEMO_USERS, seed_demo
from library.evals.cases import regression_case_create
from library.mining.mining_runs import mining_run_execute
from library.models import Agent, EvalRun, ProcedureVersion, Status
from tests.conftest import SWEBENCH_RESULTS, SWEBENCH_TRAJS
from tests.e2e.conftest import sign_in
from tests.e2e.test_review_flow import eval_worker  # noqa: F401  (the fixture: a real Celery worker on PostgreSQL)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


@pytest.mark.timeout(1800)  # imports and mines the 231 sessions, then an eval run (its worker loads two models)
def test_reviewer_reads_a_family_candidate_and_the_approver_approves_it_after_its_eval(
    live_server, page, screenshot, swebench_dir, eval_worker
):  # noqa: F811
    seed_demo()
    call_command(
        "import_sessions",
        str(SWEBENCH_TRAJS),
        "--format",
        "mini-swe-agent",
        "--outcomes",
        str(SWEBENCH_RESULTS),
        "--agent",
        "swe-gemini",
        "--create-agent",
        "--no-progress",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    agent = Agent.objects.get(name="swe-gemini")
    run = mining_run_execute(agent=agent)
    version = ProcedureVersion.objects.get(mining_run=run, procedure__key="fix.django.forms")
    # the eval: regression cases of the intent naming the family's file (the eval serves what the
    # agent's selection would inject), the stand-in coding agent as the runner
    agent.eval_runner, agent.eval_python_path = "python", "tests.evals_support:coding_agent_runner"
    agent.save()
    intent = version.procedure.intent
    for number in range(8):
        regression_case_create(
            agent=agent,
            intent=intent,
            actor_label="test",
            name=f"forms task {number}",
            task=f"ModelForm in django/forms/models.py loses the initial value of field {number}",
            expected_tools=["runtests.py"],
            forbidden_tools=["django_test"],
        )
    base = live_server.url

    # the reviewer reads the candidate
    sign_in(page, base, "reviewer", DEMO_USERS["reviewer"][0])
    page.goto(f"{base}/mining-runs/{run.pk}/")
    report = page.locator("#run-report").inner_text()
    assert "family django/django:django/forms" in report and "family django/django:django/views" in report
    assert "no verify command" in report
    screenshot(page, "coding-family-run-report")
    page.goto(f"{base}/versions/{version.pk}/")
    contract = page.locator("#coding-contract")
    contract.wait_for()
    assert contract.locator("code.verify-command").inner_text() == version.verify_command
    assert "django/forms/" in contract.locator("ul.postconditions").inner_text()
    evidence = page.locator("#evidence")
    assert "django/django:django/forms" in evidence.locator("#evidence-family").inner_text()
    assert "(shown, not a gate)" in evidence.inner_text()
    notes = evidence.locator("#evidence-recovery-notes").inner_text()
    assert "`forms` is not a test module here" in notes and "2 sessions" in notes
    assert "python3 -m django.test" in notes
    screenshot(page, "coding-family-candidate")

    # an eval run on the candidate's content (a real worker on PostgreSQL)
    page.click("#start-eval")
    # the worker loads the default backend's two models first (as in test_review_flow)
    page.wait_for_selector("#eval .verdict", timeout=600_000)
    assert "PASS" in page.locator("#eval .verdict").inner_text()
    eval_run = EvalRun.objects.filter(version=version).latest("created_at")
    assert (eval_run.state, eval_run.verdict) == (EvalRun.State.DONE, EvalRun.Verdict.PASS)
    assert page.locator("#approve-button").is_disabled()  # a reviewer does not approve

    # the approver (the demo admin holds every approver right) approves it
    page.click("text=Sign out")
    page.wait_for_url(re.compile(r"/accounts/login/"))
    sign_in(page, base, "admin", DEMO_USERS["admin"][0])
    page.goto(f"{base}/versions/{version.pk}/")
    page.click("#approve-button")
    page.wait_for_selector("#approve-confirm")
    page.check("#approve-confirm-check")
    page.fill("#approve-comment", "The verify command and the notes save the runner hunt; the eval agrees.")
    page.click("#approve-submit")
    page.wait_for_selector(".notice-ok")
    assert "v1 is the ACTIVE version: approved by admin" in page.locator(".notice-ok").inner_text()
    screenshot(page, "coding-family-approved")
    version.refresh_from_db()
    assert (version.status, version.approved_by.username) == (Status.ACTIVE, "admin")
