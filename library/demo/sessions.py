"""Demo sessions for the seed (deterministic: the same sessions every time), ingested through the
same parser and store service as real ones and then mined, so that the demo's candidate
`refund.over_limit` v2 comes out of data exactly as docs/design.md tells it:

- refund_over_limit: 140 resolved, 60 failed (each session its own task), mined; and 66 newer sessions
  held back for the backtest (see the end of demo_session_items).
  118 resolved: lookupOrder → checkReturnWindow → createApproval → replyTemplates('approval_pending');
  22 resolved refuse without an approval (12 outside the return window, 10 not refundable at all).
  51 failed promise the refund (replyTemplates('refund_promised')) and never ask for approval;
  9 failed promise it first and create the approval afterwards — only 9 of 60 call createApproval.
- refund_within_limit, order_status, address_change: sessions that follow the procedures the seed
  already has (the miner skips them as covered), plus sessions without intent or outcome, counted
  as unlabelled.

Sessions are spread over the last SPREAD_DAYS days before the seed (`as_lived`), each intent's in
the order they are generated (the newest last; the kinds of an intent mixed, so that every day
looks like the story and no day ends it with only failures or sessions without outcome), and the order questions tell what an approval
changes: before order.status v2 was approved they received v1 and were resolved about half the
time, afterwards they receive v2 and are resolved nine times in ten.

Every session carries fake personal data (names, e-mails, phones, order ids like ORD-12345) so
that the redacted excerpts show what redaction does.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone as django_timezone

from ..ingest.formats import ImportOptions, parse_procmem
from ..ingest.store import sessions_store
from ..mining.mining_runs import mining_run_execute
from ..models import Agent, MiningRun

FIRST = [
    "Anna",
    "Ben",
    "Chiara",
    "David",
    "Elif",
    "Farid",
    "Grace",
    "Hugo",
    "Ines",
    "Jonas",
    "Keiko",
    "Liam",
    "Maya",
    "Noah",
    "Olga",
    "Pablo",
]
LAST = [
    "Schmidt",
    "Okafor",
    "Rossi",
    "Novak",
    "Yilmaz",
    "Haddad",
    "Kim",
    "Moreau",
    "Silva",
    "Berg",
    "Tanaka",
    "Walsh",
    "Cohen",
    "Larsen",
]
START = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)


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


def _calls(*steps: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """The tool calls of one kind of session, for a customer: each step a tool called with the
    customer's order (createApproval with the amount and e-mail too), `reply:<template>` the
    replyTemplates call that answers."""

    def calls(p: dict[str, Any]) -> list[dict[str, Any]]:
        made = []
        for step in steps:
            if step.startswith("reply:"):
                made.append(_call("replyTemplates", template=step.removeprefix("reply:"), order_id=p["order"]))
            elif step == "createApproval":
                made.append(_call("createApproval", order_id=p["order"], amount=p["amount"], customer_email=p["email"]))
            else:
                made.append(_call(step, order_id=p["order"]))
        return made

    return calls


def _session(
    index: int,
    intent: str | None,
    person: dict[str, str],
    calls: list[dict],
    resolved: bool | None,
    task: str,
    reply: str,
) -> dict[str, Any]:
    return {
        "session_id": f"demo-{intent or 'unlabelled'}-{index:04d}",
        # every demo customer brings their own task (the redacted requests look alike)
        "task_key": f"demo-task-{index:04d}",
        "agent": "support_agent",
        "intent": intent,
        "task": task,
        "outcome": None
        if resolved is None
        else {"resolved": resolved, "escalated": False, "rating": 5 if resolved else 2},
        "tool_calls": calls,
        "tool_results": [
            {
                "order_id": person["order"],
                "customer": {
                    "name": f"{person['first']} {person['last']}",
                    "email": person["email"],
                    "phone": person["phone"],
                },
            }
        ],
        "injected": [{"id": "refund.over_limit", "version": 1}] if intent == "refund_over_limit" else [],
        "instruction_chars": 1800 + index % 400,
        "model": "demo-model-1",
        "ended_at": (START + timedelta(minutes=7 * index)).isoformat(),
        "reply": reply,
    }


def _mixed(items: list[dict[str, Any]], kinds: list[str]) -> list[dict[str, Any]]:
    """The items reordered so that every kind is spread evenly through the list (the k-th of n
    items of a kind goes to about position (k + 1/2) / n); stable, so deterministic."""
    seen: dict[str, int] = {}
    totals = {kind: kinds.count(kind) for kind in kinds}
    keyed = []
    for position, (item, kind) in enumerate(zip(items, kinds)):
        keyed.append(((seen.get(kind, 0) + 0.5) / totals[kind], position, item))
        seen[kind] = seen.get(kind, 0) + 1
    return [item for _key, _position, item in sorted(keyed, key=lambda k: (k[0], k[1]))]


def demo_session_items() -> list[dict[str, Any]]:
    rng = random.Random(20261101)
    items: list[dict[str, Any]] = []
    kinds: list[str] = []
    index = 0

    def add(intent, kind, resolved, calls_for, task_for, reply_for, count):
        nonlocal index
        for _ in range(count):
            person = _person(rng)
            items.append(
                _session(index, intent, person, calls_for(person), resolved, task_for(person), reply_for(person))
            )
            kinds.append(kind)
            index += 1

    refund_task = lambda p: (  # noqa: E731
        f"Hi, I'm {p['first']} {p['last']} ({p['email']}, {p['phone']}). Order {p['order']} arrived broken; "
        f"I want my {p['amount']:,} EUR back."
    )
    # the refund_over_limit kinds: resolved, tool calls, reply
    refund_kinds = {
        "approved": (
            True,
            _calls("lookupOrder", "checkReturnWindow", "createApproval", "reply:approval_pending"),
            lambda p: (
                f"Thanks {p['first']}, I have asked a manager to approve the refund for {p['order']}; you will hear within 2 days."
            ),
        ),
        "outside_window": (
            True,
            _calls("lookupOrder", "checkReturnWindow", "reply:refund_denied"),
            lambda p: f"Sorry {p['first']}, {p['order']} is outside its return window.",
        ),
        "not_refundable": (
            True,
            _calls("lookupOrder", "reply:not_refundable"),
            lambda p: f"Sorry {p['first']}, gift cards like {p['order']} cannot be refunded.",
        ),
        "promised": (
            False,
            _calls("lookupOrder", "checkReturnWindow", "reply:refund_promised"),
            lambda p: f"Good news {p['first']}, your {p['amount']:,} EUR will be back on your card tomorrow!",
        ),
        "promised_then_approval": (
            False,
            _calls("lookupOrder", "checkReturnWindow", "reply:refund_promised", "createApproval"),
            lambda p: f"{p['first']}, your refund is confirmed; I also filed the paperwork.",
        ),
        # the newer approvals, held back for the backtest (below)
        "approved_newer": (
            True,
            _calls("lookupOrder", "checkReturnWindow", "createApproval", "reply:approval_pending"),
            lambda p: f"Thanks {p['first']}, a manager approves the refund for {p['order']} within 2 days.",
        ),
        "approved_gave_up": (
            False,
            _calls("lookupOrder", "checkReturnWindow", "createApproval", "reply:approval_pending"),
            lambda p: f"{p['first']}, the approval for {p['order']} is still pending.",
        ),
    }

    def refunds(*counts: tuple[str, int]) -> None:
        for kind, count in counts:
            resolved, calls_for, reply_for = refund_kinds[kind]
            add("refund_over_limit", kind, resolved, calls_for, refund_task, reply_for, count)

    refunds(
        ("approved", 118),
        ("outside_window", 12),
        ("not_refundable", 10),
        ("promised", 51),
        ("promised_then_approval", 9),
    )
    # the 200 over-limit refunds above happened mixed, not kind after kind (sessions are timed in this order)
    items[:200] = _mixed(items[:200], kinds[:200])
    add(
        "refund_within_limit",
        "ok",
        True,
        _calls("lookupOrder", "checkReturnWindow", "reply:refund_confirmed"),
        lambda p: f"This is {p['first']} {p['last']}, please refund the 25 EUR for {p['order']}.",
        lambda p: f"Done, {p['first']}: the refund for {p['order']} is on its way.",
        30,
    )
    add(
        "order_status",
        "ok",
        True,
        _calls("lookupOrder", "reply:order_status"),
        lambda p: f"Where is my order {p['order']}? Call me at {p['phone']}. {p['first']} {p['last']}",
        lambda p: f"Hi {p['first']}, {p['order']} arrives on Thursday.",
        120,
    )
    add(
        "address_change",
        "ok",
        True,
        lambda p: [
            _call("lookupOrder", order_id=p["order"]),
            _call(
                "replyTemplates",
                template="address_changed",
                order_id=p["order"],
                address=f"{rng.randint(1, 999)} Harbor Street",
            ),
        ],
        lambda p: f"My name is {p['first']} {p['last']}, please send {p['order']} to 12 Harbor Street instead.",
        lambda p: f"Done, {p['first']}.",
        25,
    )
    add(
        None,
        "unlabelled",
        True,
        _calls("lookupOrder", "reply:order_status"),
        lambda p: f"Hello, {p['first']} here, {p['email']}",
        lambda p: "Anything else?",
        15,
    )
    add("order_status", "no_outcome", None, _calls("lookupOrder"), lambda p: f"Order {p['order']}?", lambda p: "", 10)
    # The newest refund_over_limit sessions: the quarter of the intent (66 of 266) that the miner holds
    # back to backtest its candidate. 33 follow the approval procedure (30 resolved, 3 failed: the
    # customer gave up waiting), 33 do not (8 resolved refusals, 25 failed promises).
    refunds(("approved_newer", 30), ("approved_gave_up", 3), ("outside_window", 8), ("promised", 25))
    # ... which also happened mixed: generated kind after kind, the last 25 (the last three days)
    # would all be failed promises, and the charts would fall off a cliff at the end
    items[-66:] = _mixed(items[-66:], kinds[-66:])
    # the order questions without an outcome come in all along, not in the last days only
    _mix_in_place(items, kinds, lambda item: item["intent"] == "order_status")
    return items


def _mix_in_place(items: list[dict[str, Any]], kinds: list[str], chosen: Callable[[dict[str, Any]], bool]) -> None:
    """The chosen items (not adjacent in the list) spread by kind (`_mixed`), in the same places."""
    places = [n for n, item in enumerate(items) if chosen(item)]
    for place, item in zip(places, _mixed([items[n] for n in places], [kinds[n] for n in places])):
        items[place] = item


SPREAD_DAYS = 29


def as_lived(items: list[dict[str, Any]], *, now: datetime, order_status_v2_at: datetime) -> list[dict[str, Any]]:
    """The sessions with end times spread evenly over the SPREAD_DAYS days before `now`, each
    intent's in generation order, and the order questions' procedure and outcome following the
    order.status v1 → v2 approval at `order_status_v2_at` (about 54% resolved before, 90% after).
    Deterministic for a given `now`."""
    start = now - timedelta(days=SPREAD_DAYS)
    span = (now - timedelta(hours=1) - start).total_seconds()
    by_intent: dict[str | None, list[dict[str, Any]]] = {}
    for item in items:
        by_intent.setdefault(item["intent"], []).append(item)
    lived = []
    labelled = {False: 0, True: 0}  # order questions with an outcome so far, before and after v2
    for group in by_intent.values():
        for position, item in enumerate(group):
            item = dict(item)
            ended = start + timedelta(seconds=span * (position + 0.5) / len(group))
            item["ended_at"] = ended.isoformat()
            if item["intent"] == "refund_within_limit":
                item["injected"] = [{"id": "refund.within_limit", "version": 1}]
            if item["intent"] == "order_status":
                after = ended >= order_status_v2_at
                item["injected"] = [{"id": "order.status", "version": 2 if after else 1}]
            if item["intent"] == "order_status" and item["outcome"] is not None:
                # 9 in 10 after, 5 in 9 before, spread evenly (each day close to the rate; a
                # pattern of the position alone made alternate days 100 % and 20 %)
                share = (9, 10) if after else (5, 9)
                k = labelled[after]
                labelled[after] += 1
                resolved = (k + 1) * share[0] // share[1] > k * share[0] // share[1]
                item["outcome"] = {"resolved": resolved, "escalated": False, "rating": 5 if resolved else 2}
                if not resolved:
                    item["reply"] = "It is on its way, I cannot say more."
            lived.append(item)
    return lived


def seed_demo_sessions(
    agent: Agent, *, now: datetime | None = None, order_status_v2_at: datetime | None = None
) -> MiningRun:
    """Stores the demo sessions for `agent` and mines them (idempotent: sessions are stored once;
    a second mining run finds the candidate covered). Returns the mining run."""

    now = now or django_timezone.now()
    order_status_v2_at = order_status_v2_at or now - timedelta(days=12)
    items = as_lived(demo_session_items(), now=now, order_status_v2_at=order_status_v2_at)
    sessions = [parse_procmem(item, ImportOptions()) for item in items]
    sessions_store(agent=agent, sessions=sessions, channel="client")
    return mining_run_execute(agent=agent)
