"""The eval replay injects what the agent would receive: each case selected by the select endpoint's
own code over each arm's served set (library/evals/payload.py). Two cases where the old rule (the
candidate first whenever its intent applies) and the served selection disagree, each run on a real
Celery worker process against PostgreSQL:

1. a candidate whose appliesWhen does not reach its intent's tasks: the old rule injected it in
   every case of its intent; the served selection never does → an approval blocker;
2. a candidate of one intent that outranks another intent's procedures under cap 2 (an agent that
   selects by the task text alone): the displaced procedure is reported, per case and per intent.

In both, every case's arm injects exactly what `GET /api/v1/agents/<agent>/select` returns for the
same task and the same set: the baseline arm against the agent itself, the candidate arm against a
twin agent whose ACTIVE set has the same content as that arm.
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
from library.models import (
    Agent,
    ApiToken,
    EvalCaseResult,
    EvalRun,
    Intent,
    ProcedureVersion,
    RegressionCase,
    Source,
    Status,
)
from tests.conftest import make_active
from tests.evals_support import DEMO_CANDIDATE_STEPS
from tests.library.test_eval_worker import finished, wait_for

pytestmark = [
    pytest.mark.celery_worker,
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True, databases=["default", "readonly"]),
]


def api_injected(agent: Agent, token: str, task: str, intent: str | None) -> list[str]:
    params = {"task": task, **({"intent": intent} if intent else {})}
    response = Client().get(
        reverse("api:select", kwargs={"agent": agent.name}), params, HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 200, response.content
    return [p["id"] for p in response.json()["injected"]]


def read_token(agent: Agent) -> str:
    admin = get_user_model().objects.get(username="admin")
    return token_create(agent=agent, scope=ApiToken.Scope.READ, name=f"read-{agent.name}", user=admin)[1]


def twin_of(agent: Agent, versions: list[ProcedureVersion]) -> Agent:
    """An agent with the same tools, cap and selection mode whose ACTIVE set has the content of
    `versions` (same keys, intents and texts: the same ranking)."""
    admin = get_user_model().objects.get(username="admin")
    twin = Agent.objects.create(
        name=f"{agent.name}_twin",
        tools=list(agent.tools),
        injection_cap=agent.injection_cap,
        selects_with_intent=agent.selects_with_intent,
        namespace=agent.namespace,
    )
    for version in versions:
        intent, _ = Intent.objects.get_or_create(agent=twin, name=version.procedure.intent.name)
        copy = services.procedure_propose(
            agent=twin,
            intent=intent,
            key=version.procedure.key,
            applies_when=version.applies_when,
            steps=list(version.steps),
            required_tools=list(version.required_tools),
            forbidden_actions=list(version.forbidden_actions),
            source=Source.MANUAL,
            proposed_by=get_user_model().objects.get(username="reviewer"),
        )
        make_active(copy, admin)
    return twin


def arm_versions(run: EvalRun) -> list[ProcedureVersion]:
    baseline = list(
        ProcedureVersion.objects.filter(pk__in=[b["id"] for b in run.baseline_versions]).select_related(
            "procedure__intent"
        )
    )
    return [v for v in baseline if v.procedure_id != run.version.procedure_id] + [run.version]


def assert_rows_match_the_select_endpoint(run: EvalRun, agent: Agent) -> None:
    """Each case's baseline arm injected what the agent's select endpoint returns now (the set is
    the pinned one), and its candidate arm what a twin serving the candidate arm's set returns."""
    twin = twin_of(agent, arm_versions(run))
    tokens = {"baseline": read_token(agent), "candidate": read_token(twin)}
    rows = EvalCaseResult.objects.filter(run=run).select_related("case__intent").order_by("case_id", "arm")
    compared = 0
    for row in rows:
        intent = row.case.intent.name if agent.selects_with_intent else None
        served = api_injected(agent if row.arm == "baseline" else twin, tokens[row.arm], row.case.task, intent)
        assert [p["id"] for p in row.injected] == served, (row.case.task, row.arm)
        assert len(row.rendered_hash) == 64
        compared += 1
    assert compared == 2 * RegressionCase.objects.filter(agent=agent, is_active=True).count()


def test_a_candidate_that_does_not_reach_its_tasks_is_not_injected_and_is_blocked(celery_worker_process):
    # given the demo, and a refund candidate whose appliesWhen speaks of something else: the old
    # rule put it first in every refund_over_limit case ("injected whenever it applies")
    demo = seed_demo()
    agent = demo.agent
    users = {u.username: u for u in get_user_model().objects.all()}
    candidate = services.procedure_propose(
        agent=agent,
        intent=agent.intents.get(name="refund_over_limit"),
        key="refund.over_limit",
        applies_when="The customer wants to change the delivery address of an order that has not shipped.",
        steps=DEMO_CANDIDATE_STEPS,
        required_tools=["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"],
        forbidden_actions=["Do not promise a refund before the approval is granted."],
        source=Source.MINED,
        actor_label="miner",
    )
    # when the eval runs on the worker
    run = eval_runs.eval_run_start(version=candidate, user=users["reviewer"])
    run = wait_for(lambda: finished(run.pk), timeout=180, worker=celery_worker_process, what="the eval run")
    assert run.state == EvalRun.State.DONE, run.failure_reason
    # then the served selection never injected it in its intent's cases
    selection = run.verdict_detail["selection"]
    assert (selection["targetCases"], selection["injectedIn"], selection["injectedShare"]) == (8, 0, 0.0)
    target_rows = EvalCaseResult.objects.filter(run=run, case__intent__name="refund_over_limit", arm="candidate")
    assert all(
        f"refund.over_limit v{candidate.number}" not in [f"{p['id']} v{p['version']}" for p in r.injected]
        for r in target_rows
    )
    # the run says so as a blocker (here the verdict fails too: nothing improved)
    blocker = services.selection_reach_blocker(run)
    assert "injected the candidate in 0 of 8 cases of its intent refund_over_limit" in blocker
    assert run.verdict == EvalRun.Verdict.FAIL
    # and every case injected what the select endpoint returns for the same task and set
    assert_rows_match_the_select_endpoint(run, agent)


def test_a_candidate_that_displaces_another_intents_procedure_under_cap_2_is_reported(celery_worker_process):
    # given the demo agent selecting by the task text alone (no intent filter), cap 2, with a
    # second order_status procedure, so that order questions get two procedures
    demo = seed_demo()
    agent = demo.agent
    agent.selects_with_intent, agent.injection_cap = False, 2
    agent.save()
    users = {u.username: u for u in get_user_model().objects.all()}
    tracking = services.procedure_propose(
        agent=agent,
        intent=agent.intents.get(name="order_status"),
        key="order.tracking",
        applies_when="The customer asks whether an order has shipped and for its tracking.",
        steps=[
            "Look up the order with lookupOrder({{order_id}}).",
            "Answer with replyTemplates('order_status') and the tracking link.",
        ],
        required_tools=["lookupOrder", "replyTemplates"],
        forbidden_actions=[],
        source=Source.MANUAL,
        proposed_by=users["reviewer"],
    )
    make_active(tracking, users["admin"])
    # and a refund_over_limit candidate whose appliesWhen reads like an order-status question
    candidate = services.procedure_propose(
        agent=agent,
        intent=agent.intents.get(name="refund_over_limit"),
        key="refund.delivery_check",
        applies_when="The customer asks where their order is, when it will be delivered, whether it has shipped, or for its tracking.",
        steps=DEMO_CANDIDATE_STEPS[:1] + DEMO_CANDIDATE_STEPS[2:],
        required_tools=["lookupOrder", "createApproval", "replyTemplates"],
        forbidden_actions=[],
        source=Source.MINED,
        actor_label="miner",
    )
    # when the eval runs on the worker
    run = eval_runs.eval_run_start(version=candidate, user=users["reviewer"])
    run = wait_for(lambda: finished(run.pk), timeout=180, worker=celery_worker_process, what="the eval run")
    assert run.state == EvalRun.State.DONE, run.failure_reason
    # then the procedures it pushed out of the cap are named, case by case, with their intent
    selection = run.verdict_detail["selection"]
    displaced = {(d["caseName"], d["procedure"]) for d in selection["displaced"]}
    assert displaced, selection
    assert {d["intent"] for d in selection["displaced"]} == {"order_status"}
    assert {p for _, p in displaced} <= {"order.status v2", "order.tracking v1"}
    for entry in selection["cases"]:
        if any(d["case"] == entry["case"] for d in selection["displaced"]):
            assert f"refund.delivery_check v{candidate.number}" in entry["candidate"]
            assert not entry["same"]
    # the other intent's result shows it
    order_status = next(i for i in run.verdict_detail["intents"] if i["intent"] == "order_status")
    assert order_status["displaced"] == len(selection["displaced"])
    # and every case injected what the select endpoint returns for the same task and set
    assert_rows_match_the_select_endpoint(run, agent)
    assert ProcedureVersion.objects.get(pk=candidate.pk).status == Status.CANDIDATE
