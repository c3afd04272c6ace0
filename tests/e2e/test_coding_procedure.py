"""A coding procedure in the browser: the 231 real SWE-bench sessions imported and mined, then the
candidate page read by a reviewer — activities, targets, preconditions, postconditions, the verify
command, the order contrast with unresolved sessions and the sessions' commands.

On the real outcomes the miner reports its group without proposing it (resolved and failed
sessions work in the same order); a reviewer proposes it from the run's report with a reason. The
first test uses outcomes the skeleton separates (tests/conftest.swebench_outcomes_separated_by_skeleton)
to reach a candidate the miner itself proposes. Screenshots in test-artifacts/screenshots/."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from library.demo import DEMO_USERS, seed_demo
from library.mining.runs import mining_run_execute
from library.models import Agent, ProcedureVersion
from tests.conftest import SWEBENCH_RESULTS, SWEBENCH_TRAJS, swebench_outcomes_separated_by_skeleton
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def test_reviewer_reads_a_mined_coding_procedure(live_server, page, screenshot, swebench_dir):
    seed_demo()
    call_command("import_sessions", str(SWEBENCH_TRAJS), "--format", "mini-swe-agent", "--outcomes", str(SWEBENCH_RESULTS),
                 "--agent", "swe-gemini", "--create-agent", "--no-progress", stdout=io.StringIO(), stderr=io.StringIO())
    agent = Agent.objects.get(name="swe-gemini")
    swebench_outcomes_separated_by_skeleton(agent)
    run = mining_run_execute(agent=agent, support_threshold=20)
    version = ProcedureVersion.objects.get(mining_run=run)

    sign_in(page, live_server.url, "reviewer", DEMO_USERS["reviewer"][0])
    page.goto(live_server.url + _version_url(version))
    contract = page.locator("#coding-contract")
    contract.wait_for()
    activities = contract.locator("code.activity").all_inner_texts()
    assert activities == ["search", "read", "reproduce", "edit", "test", "submit"]
    assert contract.locator("code.verify-command").inner_text() == version.verify_command
    assert contract.locator("ul.preconditions li").count() == len(version.preconditions)
    assert "{{source_file}}" in contract.locator("ul.postconditions").inner_text()
    # the diff against nothing (a new procedure) lists the coding fields as content
    for field in ("preconditions", "postconditions", "verifyCommand"):
        assert page.locator(f'#diff [data-field="{field}"]').count() == 1
    evidence = page.locator("#evidence")
    assert "Order of the work: resolved vs unresolved sessions" in evidence.inner_text()
    assert "edit the source before you reproduce the issue" in evidence.inner_text()
    first_session = evidence.locator("details.excerpt").first
    assert "→ {{" in first_session.inner_text() and "[exit " in first_session.inner_text()
    screenshot(page, "coding-candidate")


def test_reviewer_proposes_the_reported_group_of_the_real_sessions(live_server, page, screenshot, swebench_dir):
    seed_demo()
    call_command("import_sessions", str(SWEBENCH_TRAJS), "--format", "mini-swe-agent", "--outcomes", str(SWEBENCH_RESULTS),
                 "--agent", "swe-gemini", "--create-agent", "--no-progress", stdout=io.StringIO(), stderr=io.StringIO())
    agent = Agent.objects.get(name="swe-gemini")
    run = mining_run_execute(agent=agent, support_threshold=20)
    assert not ProcedureVersion.objects.filter(mining_run=run).exists() and run.counts["reported"] == 1

    sign_in(page, live_server.url, "reviewer", DEMO_USERS["reviewer"][0])
    page.goto(f"{live_server.url}/mining-runs/{run.pk}/")
    page.locator("tr.reported-steps summary").click()
    reported = page.locator("tr.reported-steps")
    assert "python3 tests/runtests.py {{test_label}}" in reported.locator("dl.contract").inner_text()
    screenshot(page, "coding-reported-group")
    reported.locator("input[name=reason]").fill("the held-back sessions lean its way; let the eval replay decide")
    reported.locator("button[type=submit]").click()

    contract = page.locator("#coding-contract")
    contract.wait_for()
    version = ProcedureVersion.objects.get(mining_run=run)
    assert contract.locator("code.activity").all_inner_texts() == ["search", "read", "reproduce", "edit", "test", "submit"]
    assert contract.locator("code.verify-command").inner_text() == version.verify_command
    evidence = page.locator("#evidence")
    assert "Proposed by reviewer" in evidence.locator("#evidence-proposed-despite").inner_text()
    assert "Distinct tasks in the support: 41" in evidence.inner_text()
    assert "41 of 136" in evidence.inner_text() and "9 of 38" in evidence.inner_text()
    assert "57 sessions of the intent" in evidence.locator("#evidence-backtest").inner_text()
    screenshot(page, "coding-candidate-proposed-from-report")


def _version_url(version) -> str:
    from django.urls import reverse

    return reverse("reviews:version", args=[version.pk])
