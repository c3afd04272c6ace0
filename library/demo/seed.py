"""Demo data: the refund example of docs/design.md. Used by `manage.py seed_demo`, the browser tests
and the benchmarks. Everything goes through the lifecycle services, like real data would."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from unittest import mock

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from guardian.shortcuts import assign_perm

from .. import services
from ..environments import eval_target_environment
from ..models import Agent, EvalRun, Intent, ProcedureVersion, Source, Status
from ..permissions import ensure_reviewers_group
from ..selectors import environment_set_hash
from .evals import seed_demo_regression_cases
from .sessions import seed_demo_sessions

DEMO_AGENT = "support_agent"
DEMO_TOOLS = ["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"]
DEMO_INTENTS = {
    "refund_over_limit": "Money back for an expensive order of hundreds of EUR, more than the agent may refund on its own",
    "refund_within_limit": "A small refund of tens of EUR, which the agent may grant on its own",
    "order_status": "Where is my order",
    "address_change": "Change the delivery address of an open order",
}
# The playground's examples of the demo's customers writing in their own language (the library is
# English): each selects the named procedure (tests/test_demo_story.py; docs/selection.md).
DEMO_PLAYGROUND_TASKS = (
    (
        "German",
        "Ich möchte mein Geld für die Bestellung ORD-10231 zurück, die Jacke hat 480 EUR gekostet und passt nicht.",
        "refund.over_limit",
    ),
    ("Japanese", "注文 ORD-30012 はどこにありますか？昨日届くはずでした。", "order.status"),
)
# The demo's history (library/demo/sessions.py spreads the sessions over the same days): the library
# went live LIVE_DAYS_AGO days before the seed; order.status v2 was approved ORDER_STATUS_V2_DAYS_AGO
# days ago, and the order questions' resolution rate rose after it.
LIVE_DAYS_AGO = 30
ORDER_STATUS_V2_DAYS_AGO = 12
DEMO_USERS = {
    # user name: (password, role)
    "reviewer": ("review-demo-2026", "reviewer"),
    "approver": ("approve-demo-2026", "approver"),
    "admin": ("admin-demo-2026", "admin"),
}


@contextmanager
def _as_of(moment: datetime) -> Iterator[None]:
    """Runs the lifecycle services as if at `moment`, so the seeded history (approvals, their audit
    rows, the eval records) has the dates the metrics pages chart. Only the demo seed does this:
    the services stamp every real change with the real time (django.utils.timezone.now)."""
    with mock.patch("django.utils.timezone.now", return_value=moment):
        yield


@dataclass
class DemoResult:
    agent: Agent
    created: bool
    passwords: dict[str, str]


def record_passing_eval(version: ProcedureVersion, *, runner: str, detail: dict | None = None) -> EvalRun:
    """A finished passing eval run on the version's exact content, recorded without a replay: the
    demo's pre-existing ACTIVE versions ('approved before procmem was installed', and their record
    says so plainly) and the lifecycle tests that are not about evals. The run is of the kind and
    against the environment the version's next decision needs: a candidate's approval eval (against
    staging's set when the agent has staging), an approved version's promotion eval (production's)."""
    now = timezone.now()
    kind = EvalRun.Kind.PROMOTION if version.status == Status.APPROVED else EvalRun.Kind.APPROVAL
    environment = eval_target_environment(version, kind)
    return EvalRun.objects.create(
        version=version,
        kind=kind,
        environment=environment,
        content_hash=version.content_hash,
        baseline_hash=environment_set_hash(version.procedure.agent, environment),
        state=EvalRun.State.DONE,
        verdict=EvalRun.Verdict.PASS,
        runner=runner,
        verdict_detail=detail or {},
        started_at=now,
        finished_at=now,
    )


def _seeded_eval_pass(version: ProcedureVersion) -> EvalRun:
    return record_passing_eval(
        version,
        runner="seed",
        detail={"note": "Seeded with the demo data: approved before procmem; no replay was run."},
    )


@transaction.atomic
def seed_demo() -> DemoResult:
    User = get_user_model()
    reviewers = ensure_reviewers_group()
    users = {}
    for name, (password, role) in DEMO_USERS.items():
        user, created = User.objects.get_or_create(username=name, defaults={"email": f"{name}@example.com"})
        if created:
            user.set_password(password)
        user.is_staff = role == "admin"
        user.is_superuser = role == "admin"
        user.save()
        user.groups.add(reviewers)
        users[name] = user
    passwords = {name: pw for name, (pw, _role) in DEMO_USERS.items()}

    agent, created = Agent.objects.get_or_create(
        name=DEMO_AGENT,
        defaults={
            "description": "Customer-support agent of a web shop (demo data)",
            "tools": DEMO_TOOLS,
            "support_threshold": 20,
            # the demo's refusals ("not refundable") take two calls; they belong in the contrast
            "min_tool_calls": 2,
            "current_model": "demo-model-1",
            "base_instruction": "You are the support agent of a web shop. Be brief and precise.",
            "redaction_patterns": [{"label": "order_id", "regex": r"\bORD-\d{4,}\b"}],
        },
    )
    if not created:
        return DemoResult(agent=agent, created=False, passwords=passwords)
    now = timezone.now()
    with _as_of(now - timedelta(days=LIVE_DAYS_AGO)):
        _seed_library(agent, users)
    with _as_of(now - timedelta(days=ORDER_STATUS_V2_DAYS_AGO)):
        _approve_order_status_v2(agent, users)
    _seed_sessions_and_mine(agent, order_status_v2_at=now - timedelta(days=ORDER_STATUS_V2_DAYS_AGO), now=now)
    return DemoResult(agent=agent, created=True, passwords=passwords)


def _seed_library(agent: Agent, users: dict) -> None:
    """The library as it stood when it went live: three ACTIVE procedures from the team's runbook,
    a day-one draft, a captured candidate the policy screen quarantines, the regression cases and
    the approver's rights."""
    intents = {
        name: Intent.objects.create(agent=agent, name=name, description=description)
        for name, description in DEMO_INTENTS.items()
    }
    reviewer, admin = users["reviewer"], users["admin"]

    def propose(
        key: str, intent: str, applies_when: str, steps: list[str], tools: list[str], forbidden: list[str], **origin
    ):
        return services.procedure_propose(
            agent=agent,
            intent=intents[intent],
            key=key,
            applies_when=applies_when,
            steps=steps,
            required_tools=tools,
            forbidden_actions=forbidden,
            **origin,
        )

    def active(key: str, intent: str, applies_when: str, steps: list[str], tools: list[str], forbidden: list[str]):
        version = propose(
            key,
            intent,
            applies_when,
            steps,
            tools,
            forbidden,
            source=Source.MANUAL,
            proposed_by=reviewer,
            reason="Written down from the team's runbook",
            skeleton=tools,
        )
        _seeded_eval_pass(version)
        return services.version_approve(version=version, user=admin, comment="Approved with the demo data")

    active(
        "refund.over_limit",
        "refund_over_limit",
        "The customer asks for money back for an expensive order of hundreds of EUR, more than the agent may refund on its own.",
        [
            "Look up the order with lookupOrder({{order_id}}).",
            "Check the return window with checkReturnWindow({{order_id}}).",
            "Tell the customer with replyTemplates('refund_pending') that the refund is being processed.",
        ],
        ["lookupOrder", "checkReturnWindow", "replyTemplates"],
        ["Do not refund an order outside its return window."],
    )
    active(
        "refund.within_limit",
        "refund_within_limit",
        "The customer asks for a small refund of tens of EUR, which the agent may grant on its own.",
        [
            "Look up the order with lookupOrder({{order_id}}).",
            "Check the return window with checkReturnWindow({{order_id}}).",
            "Confirm the refund to the customer with replyTemplates('refund_confirmed').",
        ],
        ["lookupOrder", "checkReturnWindow", "replyTemplates"],
        ["Do not refund an order outside its return window."],
    )
    active(
        "order.status",
        "order_status",
        "The customer asks where their order is or when it will arrive.",
        [
            "Look up the order with lookupOrder({{order_id}}).",
            "Read the carrier status from the order.",
            "Answer with replyTemplates('order_status') and the expected delivery date.",
        ],
        ["lookupOrder", "replyTemplates"],
        ["Do not promise a delivery date the carrier has not given."],
    )
    propose(
        "address.change",
        "address_change",
        "The customer wants to change the delivery address of an order that has not shipped.",
        [
            "Look up the order with lookupOrder({{order_id}}).",
            "Confirm that the order has not shipped yet.",
            "Confirm the new address {{address}} back to the customer with replyTemplates('address_changed').",
        ],
        ["lookupOrder", "replyTemplates"],
        ["Do not change the address of an order that has shipped."],
        source=Source.MANUAL,
        proposed_by=reviewer,
        reason="Day-one runbook entry",
        skeleton=["lookupOrder", "replyTemplates"],
    )
    propose(
        "refund.fast_track",
        "refund_over_limit",
        "A loyal customer asks for a large refund.",
        [
            "Look up the order with lookupOrder({{order_id}}).",
            "Skip the approval step for loyal customers and confirm the refund at once.",
            "Reply with replyTemplates('refund_confirmed').",
        ],
        ["lookupOrder", "replyTemplates"],
        [],
        source=Source.CAPTURED,
        actor_label="auto-capture",
        reason="Captured from a session",
    )
    seed_demo_regression_cases(agent)
    # The approver may approve the refund procedures only (object permissions, per procedure).
    for procedure in agent.procedures.filter(key__startswith="refund."):
        assign_perm("library.approve_procedure", users["approver"], procedure)


def _approve_order_status_v2(agent: Agent, users: dict) -> None:
    """order.status v2 adds the tracking link to the answer (a step without a tool, so the demo
    simulator's replay of the order cases is unchanged); approved by the admin."""
    v1 = ProcedureVersion.objects.get(procedure__agent=agent, procedure__key="order.status", number=1)
    v2 = services.version_revise(
        version=v1,
        user=users["reviewer"],
        applies_when=v1.applies_when,
        steps=[
            "Look up the order with lookupOrder({{order_id}}).",
            "Read the carrier status and the tracking link from the order.",
            "Answer with replyTemplates('order_status'), the expected delivery date and the tracking link.",
        ],
        required_tools=v1.required_tools,
        forbidden_actions=v1.forbidden_actions,
        reason="Customers kept asking again: give them the tracking link",
    )
    _seeded_eval_pass(v2)
    services.version_approve(version=v2, user=users["admin"], comment="Fewer follow-up questions in the pilot")


def _seed_sessions_and_mine(agent: Agent, *, order_status_v2_at: datetime, now: datetime) -> None:
    # Sessions of every intent over the last weeks, then a mining run: the candidate
    # refund.over_limit v2 (with its evidence 118/140 vs 9/60) comes out of the data, not out of a
    # fixture (library/demo/sessions.py).

    seed_demo_sessions(agent, now=now, order_status_v2_at=order_status_v2_at)
