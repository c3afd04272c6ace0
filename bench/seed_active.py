"""Bench-only fast path: N ACTIVE procedure versions for one agent, in a few bulk statements.

Going through services.version_approve for each of 10,000 versions would re-hash the whole active
set per approval (quadratic). This path still satisfies every database trigger of
library/migrations/0002_invariants.py: versions are inserted as CANDIDATEs, each gets its own
finished, passing EvalRun on its exact content hash, and one UPDATE moves them CANDIDATE → ACTIVE
with an approver, a time and that run — the triggers check each row. It writes no audit rows, so
it is for benchmark databases only.
"""

from __future__ import annotations

import itertools

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from library.models import Agent, EvalRun, Intent, Procedure, ProcedureVersion, Source, Status, content_hash

TOOLS = [
    "lookupOrder",
    "checkReturnWindow",
    "createApproval",
    "replyTemplates",
    "get_user_details",
    "get_reservation_details",
    "search_direct_flight",
    "cancel_reservation",
    "update_reservation_flights",
    "update_reservation_baggages",
    "book_reservation",
    "send_certificate",
    "find_user_id_by_email",
    "get_order_details",
    "return_delivered_order_items",
    "exchange_delivered_order_items",
]
ACTIONS = [
    "cancel",
    "change",
    "refund",
    "return",
    "exchange",
    "upgrade",
    "downgrade",
    "rebook",
    "track",
    "split",
    "merge",
    "pause",
    "resume",
    "transfer",
    "verify",
    "dispute",
    "reissue",
    "extend",
    "shorten",
    "insure",
    "uninsure",
    "reprice",
    "replace",
    "repair",
    "renew",
    "close",
    "reopen",
    "escalate",
    "confirm",
    "review",
]
OBJECTS = [
    "a flight reservation",
    "a pending order",
    "a delivered order",
    "a gift card",
    "a travel certificate",
    "checked baggage",
    "a seat assignment",
    "a subscription",
    "a hotel booking",
    "a rental car",
    "a payment method",
    "a shipping address",
    "a loyalty account",
    "an invoice",
    "a warranty claim",
    "a travel insurance policy",
    "a meal preference",
    "a passenger name",
    "a connecting flight",
    "a return label",
    "a store credit",
    "a bank transfer",
    "a membership tier",
    "a promo code",
    "a delivery slot",
    "a damaged item",
    "a missing package",
    "a duplicate charge",
    "a price match",
    "a backorder",
]
QUALIFIERS = [
    "before it ships",
    "after the deadline",
    "for a family member",
    "because of a delay",
    "within 24 hours",
    "for a business trip",
    "on a holiday weekend",
    "after a price drop",
    "with a partial refund",
    "without a receipt",
    "for an international route",
    "after a failed payment",
]


def applies_when_texts(count: int) -> list[str]:
    combos = itertools.product(ACTIONS, OBJECTS, QUALIFIERS)
    texts = [f"The customer wants to {a} {o} {q}." for a, o, q in itertools.islice(combos, count)]
    if len(texts) < count:
        raise ValueError(f"at most {len(ACTIONS) * len(OBJECTS) * len(QUALIFIERS)} distinct texts")
    return texts


@transaction.atomic
def seed_active_procedures(*, agent_name: str, count: int, batch: int = 2000) -> Agent:
    """Creates the agent (all TOOLS) with `count` ACTIVE procedures. Refuses to add to an agent that
    already has procedures (a bench database is rebuilt, not topped up)."""
    agent, _ = Agent.objects.get_or_create(name=agent_name, defaults={"tools": TOOLS})
    if Procedure.objects.filter(agent=agent).exists():
        raise RuntimeError(f"agent {agent_name} already has procedures; use a fresh bench database")
    approver, _ = get_user_model().objects.get_or_create(
        username="bench_approver", defaults={"email": "bench@example.com"}
    )
    intents = [Intent.objects.get_or_create(agent=agent, name=f"intent_{i:02d}")[0] for i in range(20)]
    texts = applies_when_texts(count)
    now = timezone.now()
    for start in range(0, count, batch):
        chunk = range(start, min(start + batch, count))
        procedures = Procedure.objects.bulk_create(
            [Procedure(agent=agent, key=f"bench.p{i:05d}", intent=intents[i % len(intents)]) for i in chunk]
        )
        versions = []
        for procedure, i in zip(procedures, chunk):
            tools = [TOOLS[i % len(TOOLS)], TOOLS[(i * 7 + 3) % len(TOOLS)], "replyTemplates"]
            tools = list(dict.fromkeys(tools))
            steps = [
                f"Call {tools[0]}({{{{id}}}}) to read the record.",
                f"Check the rules with {tools[-1]}.",
                "Tell the customer the outcome.",
            ]
            forbidden = ["Do not promise an outcome before the check is done."]
            versions.append(
                ProcedureVersion(
                    procedure=procedure,
                    number=1,
                    status=Status.CANDIDATE,
                    applies_when=texts[i],
                    steps=steps,
                    required_tools=tools,
                    forbidden_actions=forbidden,
                    evidence={"support": 20 + i % 100, "contrast": {"resolved": 118, "failed": 9}},
                    content_hash=content_hash(
                        applies_when=texts[i], steps=steps, required_tools=tools, forbidden_actions=forbidden
                    ),
                    source=Source.IMPORTED,
                    provenance={"source": "bench"},
                )
            )
        versions = ProcedureVersion.objects.bulk_create(versions)
        EvalRun.objects.bulk_create(
            [
                EvalRun(
                    version=v,
                    content_hash=v.content_hash,
                    state=EvalRun.State.DONE,
                    verdict=EvalRun.Verdict.PASS,
                    runner="bench",
                    started_at=now,
                    finished_at=now,
                )
                for v in versions
            ]
        )
        with connection.cursor() as cursor:
            cursor.execute(
                f"""UPDATE {ProcedureVersion._meta.db_table} v
                       SET status = 'ACTIVE', approved_by_id = %s, approved_at = %s, status_changed_at = %s,
                           approval_eval_run_id = e.id, review_by = %s::date + 180
                      FROM {EvalRun._meta.db_table} e
                     WHERE e.version_id = v.id AND v.id = ANY(%s)""",
                [approver.pk, now, now, now.date(), [v.pk for v in versions]],
            )
    return agent
