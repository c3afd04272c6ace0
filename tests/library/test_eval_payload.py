"""What an eval replays for a version is what agents are served for it: the same rendering, byte
for byte, so that an approval rests on the exact text agents will receive. The one difference is the
candidate's provenance in its first line: replayed before its approval it says "not approved: a
candidate under evaluation", served after it "approved by <approver> on <date>"."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from library import services
from library.api.tokens import token_create
from library.demo import seed_demo
from library.evals import eval_runs
from library.models import ApiToken, EvalRun, RegressionCase, Source
from tests import evals_support
from tests.evals_support import DEMO_CANDIDATE_STEPS

pytestmark = pytest.mark.usefixtures("readonly_shares_default")

# Lessons as people write them: the renderer drops a leading "Do not"/"Never", so that agents read
# "Do not: promise a refund date." and not "Do not: Never promise a refund date.".
LESSONS = [
    "Never promise a refund date.",
    "Do not refund an order outside its return window.",
    "  share the approval link with the customer  ",
]


def served_texts(client, agent, token: str) -> dict[tuple[str, int], str]:
    """(id, version) → `rendered`, as GET /api/v1/agents/<agent>/procedures serves them."""
    response = client.get(reverse("api:active_set", kwargs={"agent": agent.name}), HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    return {(p["id"], p["version"]): p["rendered"] for p in response.json()["procedures"]}


def test_an_eval_replays_the_bytes_the_agent_api_serves(client, django_capture_on_commit_callbacks):
    # given the demo agent with a runner that keeps what it receives, and a candidate with lessons
    demo = seed_demo()
    agent = demo.agent
    users = {u.username: u for u in get_user_model().objects.all()}
    agent.eval_runner, agent.eval_python_path = "python", "tests.evals_support:capturing_runner"
    agent.save()
    candidate = services.procedure_propose(
        agent=agent,
        intent=agent.intents.get(name="refund_over_limit"),
        key="refund.over_limit",
        applies_when="The customer asks for money back for an expensive order of hundreds of EUR, more than the agent may refund on its own.",
        steps=DEMO_CANDIDATE_STEPS,
        required_tools=["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"],
        forbidden_actions=LESSONS,
        source=Source.MINED,
        actor_label="miner",
    )
    evals_support.RECEIVED.clear()
    # when an eval run replays it (the tasks run in-process) and the approver approves it
    with django_capture_on_commit_callbacks(execute=True):
        run = eval_runs.eval_run_start(version=candidate, user=users["reviewer"])
    run.refresh_from_db()
    assert (run.state, run.verdict) == (EvalRun.State.DONE, EvalRun.Verdict.PASS), run.failure_reason
    services.version_approve(version=candidate, user=users["approver"], comment="the replay passed")
    # then the agent API serves, byte for byte, the text the replays injected for each version
    token = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=users["admin"])[1]
    served = served_texts(client, agent, token)
    candidate_text = served[("refund.over_limit", candidate.number)]
    candidate.refresh_from_db()
    candidate_approved_on = candidate.approved_at.date().isoformat()
    assert "Do not: promise a refund date." in candidate_text.splitlines()
    compared: dict[tuple[str, int], int] = {}
    for received in evals_support.RECEIVED:
        for record in received["procedures"]:
            key = (record["id"], record["version"])
            if key not in served:
                continue  # the version the candidate replaced: retired by the approval, no longer served
            if key == ("refund.over_limit", candidate.number):
                replayed_first, _, replayed_body = record["rendered"].partition("\n")
                served_first, _, served_body = served[key].partition("\n")
                assert replayed_body.encode("utf-8") == served_body.encode("utf-8"), key
                assert replayed_first.endswith("not approved: a candidate under evaluation)")
                assert served_first.endswith(f"approved by approver on {candidate_approved_on})")
                assert record["rendered"] in received["instruction"].split("\n\n")
            else:
                assert record["rendered"].encode("utf-8") == served[key].encode("utf-8"), key
                assert served[key] in received["instruction"].split("\n\n")
            compared[key] = compared.get(key, 0) + 1
    cases = RegressionCase.objects.filter(agent=agent, is_active=True, intent__name="refund_over_limit").count()
    assert (
        compared[("refund.over_limit", candidate.number)] == cases > 0
    )  # the candidate arm of each case of its intent
    assert len(compared) >= 2  # and the other procedures of the active set, in both arms


def _old_rule(run, case, arm):
    """The selection replays made before they selected as agents do: the case's intent's versions,
    the candidate first, the others by key, up to the cap."""
    from library.models import ProcedureVersion

    baseline = list(
        ProcedureVersion.objects.filter(pk__in=[b["id"] for b in run.baseline_versions]).select_related("procedure")
    )
    versions = (
        baseline
        if arm == "baseline"
        else [run.version, *[v for v in baseline if v.procedure_id != run.version.procedure_id]]
    )
    versions = [v for v in versions if v.procedure.intent_id == case.intent_id]
    first = [v for v in versions if v.pk == run.version_id]
    rest = sorted((v for v in versions if v.pk != run.version_id), key=lambda v: v.procedure.key)
    return (first + rest)[: run.version.procedure.agent.injection_cap]


def test_where_the_served_selection_agrees_with_the_old_rule_every_case_keeps_its_outcome(
    django_capture_on_commit_callbacks,
):
    # given the demo candidate's eval, replayed with the served selection
    from library.evals.checks import check_case
    from library.evals.payload import case_payload
    from library.evals.simulator import simulate
    from library.evals.verdict import PairedOutcome, Thresholds, judge
    from library.models import EvalCaseResult

    demo = seed_demo()
    users = {u.username: u for u in get_user_model().objects.all()}
    candidate = evals_support.propose_demo_candidate(demo.agent)
    with django_capture_on_commit_callbacks(execute=True):
        run = eval_runs.eval_run_start(version=candidate, user=users["reviewer"])
    run.refresh_from_db()
    # when each case-arm is replayed again with what the old rule injected
    old_outcomes: dict[int, dict] = {}
    agreed = differed = 0
    for row in EvalCaseResult.objects.filter(run=run).select_related("case__intent"):
        old = _old_rule(run, row.case, row.arm)
        records = [dict(v.to_dict(), intent=v.procedure.intent.name) for v in old]
        output = simulate(case=case_payload(row.case), procedures=records)
        passed = not check_case(
            expected_tools=row.case.expected_tools,
            forbidden_tools=row.case.forbidden_tools,
            reply_must_match=row.case.reply_must_match,
            reply_must_not_match=row.case.reply_must_not_match,
            tool_calls=output["tool_calls"],
            reply=output["reply"],
        )
        old_outcomes.setdefault(row.case_id, {"intent": row.case.intent.name})[row.arm] = passed
        # then wherever the two selections agree, the outcome is the same: no case changes cell silently
        if [(v.procedure.key, v.number) for v in old] == [(p["id"], p["version"]) for p in row.injected]:
            agreed += 1
            assert passed == row.passed, (row.case.name, row.arm)
        else:
            differed += 1  # recorded on the row (injected) and shown side by side on the panel
    assert agreed >= 30 and differed >= 1
    # and the verdict is the one the old rule gave
    old = judge(
        [
            PairedOutcome(case_id=k, intent=v["intent"], baseline=v["baseline"], candidate=v["candidate"])
            for k, v in sorted(old_outcomes.items())
        ],
        target_intent="refund_over_limit",
        thresholds=Thresholds.from_dict(run.thresholds),
    )
    assert old["verdict"] == run.verdict == "pass"
