"""Task keys in all three session formats, and ADK sessions keeping only the agent's own calls."""

import pytest

from library.ingest.formats import ImportOptions, ItemInvalid, parse_adk, parse_openai, parse_procmem
from library.ingest.store import sessions_store


def _procmem(**extra):
    return {
        "session_id": "s1",
        "intent": "order_status",
        "task": "Where is my order?",
        "outcome": {"resolved": True},
        "tool_calls": [{"name": "lookupOrder", "args": {}, "ok": True}],
        **extra,
    }


def test_procmem_task_key_and_its_validation():
    assert parse_procmem(_procmem(task_key="ticket-7")).task_key == "ticket-7"
    assert parse_procmem(_procmem()).task_key == ""
    with pytest.raises(ItemInvalid, match="task_key: must be a string"):
        parse_procmem(_procmem(task_key=["a"]))
    with pytest.raises(ItemInvalid, match="task_key: is longer than 200"):
        parse_procmem(_procmem(task_key="x" * 201))


def test_openai_task_key_from_field_or_taubench_task_id():
    item = {"task_id": 7, "trial": 2, "reward": 1.0, "traj": [{"role": "user", "content": "Hi"}]}
    assert parse_openai(item).task_key == "task:7"
    assert parse_openai({**item, "task_key": "mine"}).task_key == "mine"
    assert parse_openai({"session_id": "x", "messages": [{"role": "user", "content": "Hi"}]}).task_key == ""


def _adk(state=None):
    return {
        "id": "adk-1",
        "state": {"intent": "order_status", "outcome": {"resolved": True}, **(state or {})},
        "events": [
            {"author": "user", "content": {"parts": [{"text": "Where is ORD-12345?"}]}},
            {
                "author": "support",
                "content": {"parts": [{"functionCall": {"name": "lookupOrder", "args": {"order_id": "ORD-12345"}}}]},
            },
            {
                "author": "billing_helper",
                "content": {"parts": [{"functionCall": {"name": "chargeCard", "args": {"card": "4111"}}}]},
            },
            {
                "author": "billing_helper",
                "content": {"parts": [{"functionResponse": {"name": "chargeCard", "response": {"status": "error"}}}]},
            },
            {"author": "support", "content": {"parts": [{"functionCall": {"name": "replyTemplates", "args": {}}}]}},
        ],
    }


def test_adk_keeps_only_the_agents_own_calls_by_author():
    session = parse_adk(_adk({"task_key": "ticket-9"}))
    assert session.skeleton == ["lookupOrder", "replyTemplates"] and session.task_key == "ticket-9"
    assert all(call["ok"] for call in session.tool_calls)  # the sub-agent's error is not the agent's
    assert {"card": "4111"} in session.structured  # still read for redaction
    # an explicit author wins
    assert parse_adk(_adk(), ImportOptions(adk_author="billing_helper")).skeleton == ["chargeCard"]
    assert parse_adk(_adk({"procmem:author": "billing_helper"})).skeleton == ["chargeCard"]


@pytest.mark.django_db
def test_store_keys_a_session_without_task_key_by_its_redacted_request(agent):
    items = [
        _procmem(session_id=f"s{i}", task=f"I'm Carla Diaz (carla{i}@example.com), where is my order?")
        for i in range(3)
    ] + [
        _procmem(session_id="other", task="Please change my address"),
        _procmem(session_id="keyed", task_key="ticket-1"),
        _procmem(session_id="blank", task=""),
    ]
    sessions_store(agent=agent, sessions=[parse_procmem(item) for item in items])
    keys = dict(agent.sessions.values_list("session_id", "task_key"))
    # the e-mail differs, the redacted request does not: the same task
    assert keys["s0"] == keys["s1"] == keys["s2"] and keys["s0"].startswith("request:")
    assert keys["other"] != keys["s0"] and keys["keyed"] == "ticket-1" and keys["blank"] == ""
    assert "carla" not in keys["s0"]
