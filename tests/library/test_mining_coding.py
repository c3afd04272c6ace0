"""Mining coding agents' sessions: the phase skeleton, the coding contract, what the 231 real
SWE-bench sessions give (a reported group, which a reviewer may still propose with a reason) and the
candidate of a group the outcomes credibly follow (library/coding/procedures.py, library/mining/runs.py)."""

import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from library.coding.procedures import coding_skeleton, draft_contract, generalise_command, verify_command_of
from django.core.exceptions import ValidationError

from library.mining.runs import mining_report_propose, mining_run_execute
from library.mining.skeletons import MiningParams, SKELETONS, Status, skeleton_function
from library.models import Agent, AgentSession, ProcedureVersion
from procmem_client.rendering import render_procedure

from ..conftest import SWEBENCH_RESULTS, SWEBENCH_SKELETON, SWEBENCH_TRAJS, swebench_outcomes_separated_by_skeleton


def call(step, command="", ok=True, path="", target="", role=""):
    activity = step.split(":")[0]
    args = {"activity": activity, "step": step, "command": command}
    if path:
        args.update(path=path, target=target, role=role)
    return {"name": "x", "args": args, "ok": ok}


def test_coding_skeleton_keeps_each_phase_at_its_first_occurrence_and_is_idempotent():
    steps = ["environment", "search", "read:source", "search", "edit:script", "run:script", "edit:source", "run:script", "vcs", "test", "edit:test", "test", "submit"]
    skeleton = coding_skeleton(steps)
    assert skeleton == ("search", "read", "reproduce", "edit", "test", "write-test", "submit")
    assert coding_skeleton(skeleton) == skeleton


def test_one_skeleton_function_per_agent_kind():
    assert set(SKELETONS) == {"tools", "coding"}
    assert skeleton_function(MiningParams(agent_kind="coding"))(["search", "search", "edit:source"], ()) == ("search", "edit")
    assert skeleton_function(MiningParams())(["a", "a", "think", "b"], ("think",)) == ("a", "b")
    # the tool agents' terminal tools are taken and ignored by the coding skeleton
    assert skeleton_function(MiningParams(agent_kind="coding"))(["search", "edit:source"], (), ("search",)) == ("search", "edit")


def test_verify_command_is_the_last_passing_test_generalised():
    calls = [
        call("test", "./tests/runtests.py forms_tests.test_a", ok=False, path="forms_tests.test_a", target="{{test_label}}", role="test"),
        call("test", "cd /testbed && ./tests/runtests.py forms_tests.test_b -v 2", ok=True, path="forms_tests.test_b", target="{{test_label}}", role="test"),
        call("run:script", "python reproduce.py", ok=True),
    ]
    assert verify_command_of(calls) == "./tests/runtests.py {{test_label}} -v 2"
    assert verify_command_of(calls[:1]) is None
    assert generalise_command("python -m pytest tests/x/test_y.py::T::t -q", "tests/x/test_y.py", "{{test_file}}") == "python -m pytest {{test_file}} -q"


def test_no_passing_test_no_contract():
    assert draft_contract(("search", "edit", "test", "submit"), [[call("test", "pytest", ok=False)]]) is None
    contract = draft_contract(("search", "reproduce", "edit", "test", "submit"), [[call("run:script", "python r.py", path="r.py", target="{{script}}", role="script"), call("test", "pytest", ok=True)]])
    assert contract.verify_command == "pytest"
    assert contract.preconditions and "reproduces the issue ({{script}})" in contract.preconditions[0]
    assert contract.postconditions[-1] == "The verify command passes: pytest"


def _import_swebench():
    call_command("import_sessions", str(SWEBENCH_TRAJS), "--format", "mini-swe-agent", "--outcomes", str(SWEBENCH_RESULTS),
                 "--agent", "swe-gemini", "--create-agent", "--no-progress", stdout=io.StringIO(), stderr=io.StringIO())
    return Agent.objects.get(name="swe-gemini")


@pytest.mark.django_db
def test_mining_the_231_real_sessions_reports_the_coding_group_with_its_verify_command_and_figures(swebench_dir):
    # given: the 231 Gemini 3 Pro sessions on SWE-bench Verified's Django tasks, 179 resolved; each
    # instance is one task
    agent = _import_swebench()
    assert AgentSession.objects.filter(agent=agent).values("task_key").distinct().count() == 231
    # when
    run = mining_run_execute(agent=agent, support_threshold=20)
    # then: the largest group is search → read → reproduce → edit → test → submit, but the order
    # does not credibly explain the outcome on the older 75 % (the newest 25 % are held back), so it
    # is reported with its figures, its contract and its verify command, and not proposed
    assert not ProcedureVersion.objects.filter(mining_run=run).exists()
    (entry,) = [e for e in run.report if e["status"] == Status.REPORTED]
    assert entry["skeleton"] == SWEBENCH_SKELETON
    assert entry["figures"]["resolvedTasks"] == 136 and entry["figures"]["failedTasks"] == 38
    assert entry["figures"]["heldBack"] == 57 and entry["figures"]["support"] >= 20
    assert entry["skeletonTest"]["credible"] is False and entry["skeletonTest"]["pAdjusted"] > 0.05
    assert entry["backtest"]["heldBackSessions"] == 57
    assert "{{test_label}}" in entry["verifyCommand"] and entry["preconditions"] and entry["postconditions"]
    assert run.counts["candidates"] == 0 and run.counts["reported"] == 1


@pytest.mark.django_db
def test_the_reported_group_of_the_real_sessions_is_proposed_by_a_reviewer_with_its_contract_and_evidence(swebench_dir, reviewer):
    # given: the real outcomes, under which the miner reports its group and proposes nothing
    agent = _import_swebench()
    run = mining_run_execute(agent=agent, support_threshold=20)
    assert run.counts["candidates"] == 0
    # when: a reviewer proposes it anyway, saying why
    with pytest.raises(ValidationError, match="needs a reason"):
        mining_report_propose(run=run, intent_name="resolve_issue", user=reviewer, reason="")
    version = mining_report_propose(run=run, intent_name="resolve_issue", user=reviewer, reason="the backtest leans its way")
    # then: a CANDIDATE with the coding contract and the run's evidence, unchanged, plus who and why
    assert version.status == "CANDIDATE" and version.mining_run == run and version.proposed_by == reviewer
    assert version.skeleton == SWEBENCH_SKELETON and "{{test_label}}" in version.verify_command
    assert version.preconditions and version.postconditions
    evidence = version.evidence
    assert evidence["distinctTasks"] == evidence["support"] == 41 and evidence["unit"] == "distinct tasks"
    assert evidence["skeletonTest"]["credible"] is False and evidence["backtest"]["heldBackSessions"] == 57
    assert evidence["outcomes"]["resolvedTasks"] == 136 and evidence["outcomes"]["failedTasks"] == 38
    assert evidence["proposedDespite"]["reason"] == "the backtest leans its way" and evidence["proposedDespite"]["pAdjusted"] > 0.05
    assert render_procedure(version.to_dict()).splitlines()[-1] == f"Verify: {version.verify_command}"
    # the run says so, and the same group is not proposed twice
    run.refresh_from_db()
    assert run.report[0]["version"]["pk"] == version.pk
    with pytest.raises(ValidationError, match="already proposed"):
        mining_report_propose(run=run, intent_name="resolve_issue", user=reviewer, reason="again")


@pytest.mark.django_db
def test_a_credible_coding_group_becomes_a_candidate_with_a_verify_command(swebench_dir, client, admin_user):
    # given: the real sessions, with outcomes that the skeleton separates (see the conftest helper)
    agent = _import_swebench()
    assert swebench_outcomes_separated_by_skeleton(agent) > 0
    # when
    run = mining_run_execute(agent=agent, support_threshold=20)
    # then
    version = ProcedureVersion.objects.get(mining_run=run)
    assert version.skeleton == SWEBENCH_SKELETON
    assert version.verify_command and "{{test_label}}" in version.verify_command
    assert version.preconditions and version.postconditions
    evidence = version.evidence
    assert evidence["support"] == evidence["distinctTasks"] >= 20 and evidence["unit"] == "distinct tasks"
    assert evidence["proposed"] is True and evidence["skeletonTest"]["credible"] is True
    assert evidence["backtest"]["heldBackSessions"] == 57
    assert evidence["verifySupport"] >= 1 and evidence["orderContrast"]
    assert any("edit the source before you reproduce the issue" in f["feature"] for f in evidence["orderContrast"])
    rendered = render_procedure(version.to_dict())
    assert rendered.splitlines()[-1] == f"Verify: {version.verify_command}"
    # the candidate page shows the activities, the contract and the evidence of the coding session
    client.force_login(admin_user)
    page = client.get(reverse("reviews:version", args=[version.pk])).content.decode()
    assert 'id="coding-contract"' in page and version.verify_command in page
    assert "Order of the work: resolved vs unresolved sessions" in page
    assert "→ {{script}} (script)" in page or "→ {{source_file}} (source)" in page
