"""Demo sessions for the seed (deterministic: the same sessions every time), ingested through the
same parser and store service as real ones and then mined, so that the demo's candidate
`refund.over_limit` v2 comes out of data exactly as docs/design.md tells it:

- refund_over_limit: 140 resolved, 60 failed.
  118 resolved: lookupOrder → checkReturnWindow → createApproval → replyTemplates('approval_pending');
  22 resolved refuse without an approval (12 outside the return window, 10 not refundable at all).
  51 failed promise the refund (replyTemplates('refund_promised')) and never ask for approval;
  9 failed promise it first and create the approval afterwards — only 9 of 60 call createApproval.
- refund_within_limit, order_status, address_change: sessions that follow the procedures the seed
  already has (the miner skips them as covered), plus sessions without intent or outcome, counted
  as unlabelled.

Every session carries fake personal data (names, e-mails, phones, order ids like ORD-12345) so
that the redacted excerpts show what redaction does.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from typing import Any

from ..ingest.formats import ImportOptions, parse_procmem
from ..ingest.store import sessions_store
from ..models import Agent, MiningRun

FIRST = ["Anna", "Ben", "Chiara", "David", "Elif", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Keiko", "Liam", "Maya", "Noah", "Olga", "Pablo"]
LAST = ["Schmidt", "Okafor", "Rossi", "Novak", "Yilmaz", "Haddad", "Kim", "Moreau", "Silva", "Berg", "Tanaka", "Walsh", "Cohen", "Larsen"]
START = datetime(2026, 11, 1, 8, 0, tzinfo=timezone.utc)


def _person(rng: random.Random) -> dict[str, str]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    return {
        "first": first,
        "last": last,
        "email": f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@example.com",
        "phone": f"+1 415 555 {rng.randint(1000, 9999)}",
        "order": f"ORD-{rng.randint(10000, 99999)}",
        "amount": rng.choice([240, 310, 480, 650, 820, 1200]),
    }


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "ok": True}


def _session(index: int, intent: str | None, person: dict[str, str], calls: list[dict], resolved: bool | None,
             task: str, reply: str) -> dict[str, Any]:
    return {
        "session_id": f"demo-{intent or 'unlabelled'}-{index:04d}",
        "agent": "support_agent",
        "intent": intent,
        "task": task,
        "outcome": None if resolved is None else {"resolved": resolved, "escalated": False, "rating": 5 if resolved else 2},
        "tool_calls": calls,
        "tool_results": [{"order_id": person["order"], "customer": {"name": f"{person['first']} {person['last']}", "email": person["email"], "phone": person["phone"]}}],
        "injected": [{"id": "refund.over_limit", "version": 1}] if intent == "refund_over_limit" else [],
        "instruction_chars": 1800 + index % 400,
        "model": "demo-model-1",
        "ended_at": (START + timedelta(minutes=7 * index)).isoformat(),
        "reply": reply,
    }


def demo_session_items() -> list[dict[str, Any]]:
    rng = random.Random(20261101)
    items: list[dict[str, Any]] = []
    index = 0

    def add(intent, kind, resolved, calls_for, task_for, reply_for, count):
        nonlocal index
        for _ in range(count):
            person = _person(rng)
            items.append(_session(index, intent, person, calls_for(person), resolved, task_for(person), reply_for(person)))
            index += 1

    refund_task = lambda p: (  # noqa: E731
        f"Hi, I'm {p['first']} {p['last']} ({p['email']}, {p['phone']}). Order {p['order']} arrived broken; "
        f"I want my ${p['amount']} back."
    )
    add("refund_over_limit", "approved", True,
        lambda p: [_call("lookupOrder", order_id=p["order"]), _call("checkReturnWindow", order_id=p["order"]),
                   _call("createApproval", order_id=p["order"], amount=p["amount"], customer_email=p["email"]),
                   _call("replyTemplates", template="approval_pending", order_id=p["order"])],
        refund_task, lambda p: f"Thanks {p['first']}, I have asked a manager to approve the refund for {p['order']}; you will hear within 2 days.", 118)
    add("refund_over_limit", "outside_window", True,
        lambda p: [_call("lookupOrder", order_id=p["order"]), _call("checkReturnWindow", order_id=p["order"]),
                   _call("replyTemplates", template="refund_denied", order_id=p["order"])],
        refund_task, lambda p: f"Sorry {p['first']}, {p['order']} is outside its return window.", 12)
    add("refund_over_limit", "not_refundable", True,
        lambda p: [_call("lookupOrder", order_id=p["order"]),
                   _call("replyTemplates", template="not_refundable", order_id=p["order"])],
        refund_task, lambda p: f"Sorry {p['first']}, gift cards like {p['order']} cannot be refunded.", 10)
    add("refund_over_limit", "promised", False,
        lambda p: [_call("lookupOrder", order_id=p["order"]), _call("checkReturnWindow", order_id=p["order"]),
                   _call("replyTemplates", template="refund_promised", order_id=p["order"])],
        refund_task, lambda p: f"Good news {p['first']}, your ${p['amount']} will be back on your card tomorrow!", 51)
    add("refund_over_limit", "promised_then_approval", False,
        lambda p: [_call("lookupOrder", order_id=p["order"]), _call("checkReturnWindow", order_id=p["order"]),
                   _call("replyTemplates", template="refund_promised", order_id=p["order"]),
                   _call("createApproval", order_id=p["order"], amount=p["amount"], customer_email=p["email"])],
        refund_task, lambda p: f"{p['first']}, your refund is confirmed; I also filed the paperwork.", 9)
    add("refund_within_limit", "ok", True,
        lambda p: [_call("lookupOrder", order_id=p["order"]), _call("checkReturnWindow", order_id=p["order"]),
                   _call("replyTemplates", template="refund_confirmed", order_id=p["order"])],
        lambda p: f"This is {p['first']} {p['last']}, please refund the $25 for {p['order']}.",
        lambda p: f"Done, {p['first']}: the refund for {p['order']} is on its way.", 30)
    add("order_status", "ok", True,
        lambda p: [_call("lookupOrder", order_id=p["order"]), _call("replyTemplates", template="order_status", order_id=p["order"])],
        lambda p: f"Where is my order {p['order']}? Call me at {p['phone']}. {p['first']} {p['last']}",
        lambda p: f"Hi {p['first']}, {p['order']} arrives on Thursday.", 40)
    add("address_change", "ok", True,
        lambda p: [_call("lookupOrder", order_id=p["order"]),
                   _call("replyTemplates", template="address_changed", order_id=p["order"], address=f"{rng.randint(1, 999)} Harbor Street")],
        lambda p: f"My name is {p['first']} {p['last']}, please send {p['order']} to 12 Harbor Street instead.",
        lambda p: f"Done, {p['first']}.", 25)
    add(None, "unlabelled", True,
        lambda p: [_call("lookupOrder", order_id=p["order"]), _call("replyTemplates", template="order_status", order_id=p["order"])],
        lambda p: f"Hello, {p['first']} here, {p['email']}", lambda p: "Anything else?", 15)
    add("order_status", "no_outcome", None,
        lambda p: [_call("lookupOrder", order_id=p["order"])],
        lambda p: f"Order {p['order']}?", lambda p: "", 10)
    return items


def seed_demo_sessions(agent: Agent) -> MiningRun:
    """Stores the demo sessions for `agent` and mines them (idempotent: sessions are stored once;
    a second mining run finds the candidate covered). Returns the mining run."""
    from ..mining.runs import mining_run_execute

    sessions = [parse_procmem(item, ImportOptions()) for item in demo_session_items()]
    sessions_store(agent=agent, sessions=sessions)
    return mining_run_execute(agent=agent)
