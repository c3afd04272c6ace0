"""Regression cases for the demo agent, replayed by the demo agent (simulator).

Over-limit refunds expect lookupOrder → checkReturnWindow → createApproval and must not promise the
refund before approval: the demo agent without a procedure (and with the seeded refund.over_limit v1)
promises it, so these cases fail in the baseline arm and pass with a candidate that adds
createApproval. The other intents pass in both arms, so a harmless candidate changes nothing there.
"""

from __future__ import annotations

from ..evals.cases import regression_case_create
from ..models import Agent, Intent, RegressionCase

PROMISE = r"(?i)refund of .* (is being processed|has been confirmed|will reach you)"

OVER_LIMIT = [
    ("ORD-10231", "480 EUR", "I want my money back for order ORD-10231, the jacket cost 480 EUR and it does not fit."),
    ("ORD-10457", "1,250 EUR", "Please refund the 1,250 EUR for the laptop in order ORD-10457; it arrived broken."),
    ("ORD-10502", "610 EUR", "Order ORD-10502: I returned the sofa cover set, where is my 610 EUR refund?"),
    ("ORD-10618", "899 EUR", "I need a refund of 899 EUR for order ORD-10618, the camera was the wrong model."),
    ("ORD-10733", "530 EUR", "Can you refund order ORD-10733? 530 EUR, the shoes came in the wrong size."),
    ("ORD-10890", "2,100 EUR", "The e-bike from order ORD-10890 (2,100 EUR) has a cracked frame; I want a refund."),
    ("ORD-11004", "745 EUR", "Refund please: order ORD-11004, 745 EUR, the coffee machine leaks."),
    ("ORD-11129", "1,020 EUR", "I returned the monitor of order ORD-11129 last week. Refund the 1,020 EUR please."),
]
WITHIN_LIMIT = [
    ("ORD-20114", "35 EUR", "The 35 EUR scarf from order ORD-20114 was damaged, can I get my money back?"),
    ("ORD-20236", "60 EUR", "Please refund order ORD-20236, 60 EUR, I ordered the book twice."),
    ("ORD-20371", "18 EUR", "I returned the phone case from ORD-20371, refund the 18 EUR please."),
    ("ORD-20495", "42 EUR", "Refund for ORD-20495 please, 42 EUR; the lamp does not work."),
]
ORDER_STATUS = {
    "ORD-30012": "Where is my order ORD-30012? It should have arrived yesterday.",
    "ORD-30147": "When will order ORD-30147 be delivered?",
    "ORD-30288": "Has ORD-30288 shipped yet?",
    "ORD-30391": "Tracking for order ORD-30391 please.",
}
ADDRESS_CHANGE = [
    ("ORD-40021", "Kastanienallee 12, Berlin", "Please send order ORD-40021 to Kastanienallee 12, Berlin instead."),
    ("ORD-40176", "Rue de Lyon 4, Paris", "I moved: deliver ORD-40176 to Rue de Lyon 4, Paris."),
    ("ORD-40253", "Via Roma 8, Milano", "Change the address of ORD-40253 to Via Roma 8, Milano please."),
]


def seed_demo_regression_cases(agent: Agent) -> list[RegressionCase]:
    """Creates the demo cases once (keyed by external_id, so running it twice changes nothing)."""
    intents = {intent.name: intent for intent in Intent.objects.filter(agent=agent)}
    specs: list[dict] = []
    for order_id, amount, task in OVER_LIMIT:
        specs.append(
            dict(
                intent="refund_over_limit",
                task=task,
                context={"order_id": order_id, "amount": amount},
                expected_tools=["lookupOrder", "checkReturnWindow", "createApproval"],
                reply_must_match=[r"(?i)approv"],
                reply_must_not_match=[PROMISE],
                tool_results={
                    "lookupOrder": [{"order_id": order_id, "total": amount, "status": "delivered"}],
                    "checkReturnWindow": [{"in_window": True}],
                    "createApproval": [{"approval_id": "APR-" + order_id[4:]}],
                },
            )
        )
    for order_id, amount, task in WITHIN_LIMIT:
        specs.append(
            dict(
                intent="refund_within_limit",
                task=task,
                context={"order_id": order_id, "amount": amount},
                expected_tools=["lookupOrder", "checkReturnWindow", "replyTemplates"],
                forbidden_tools=["createApproval"],
                reply_must_match=[r"(?i)refund"],
                tool_results={
                    "lookupOrder": [{"order_id": order_id, "total": amount}],
                    "checkReturnWindow": [{"in_window": True}],
                },
            )
        )
    for order_id, task in ORDER_STATUS.items():
        specs.append(
            dict(
                intent="order_status",
                task=task,
                context={"order_id": order_id, "delivery_date": "Friday"},
                expected_tools=["lookupOrder", "replyTemplates"],
                forbidden_tools=["createApproval"],
                reply_must_match=[r"(?i)on its way|deliver"],
                tool_results={"lookupOrder": [{"order_id": order_id, "carrier_status": "in transit", "eta": "Friday"}]},
            )
        )
    for order_id, address, task in ADDRESS_CHANGE:
        specs.append(
            dict(
                intent="address_change",
                task=task,
                context={"order_id": order_id, "address": address},
                expected_tools=["lookupOrder", "replyTemplates"],
                forbidden_tools=["createApproval"],
                reply_must_match=[r"(?i)address"],
                tool_results={"lookupOrder": [{"order_id": order_id, "shipped": False}]},
            )
        )
    created = []
    for number, spec in enumerate(specs, start=1):
        external_id = f"demo:{spec['intent']}:{number}"
        if (
            spec["intent"] not in intents
            or RegressionCase.objects.filter(agent=agent, external_id=external_id).exists()
        ):
            continue
        intent = intents[spec.pop("intent")]
        created.append(
            regression_case_create(
                agent=agent,
                intent=intent,
                external_id=external_id,
                name=f"{intent.name} #{number}",
                actor_label="demo seed",
                **spec,
            )
        )
    return created
