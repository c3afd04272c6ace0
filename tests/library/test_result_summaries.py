"""What the store keeps of tool results: a small summary of enum-like values per call, in every format
that carries results; never ids, names, amounts, dates or the result itself."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from library.ingest.formats import parse_adk, parse_openai, parse_procmem
from library.ingest.store import build_excerpt, redactor_for, result_summary
from library.models import Agent
from library.redaction.redactor import Redactor

RESERVATION = {
    "reservation_id": "JG7FMM",
    "user_id": "omar_davis_3817",
    "origin": "MCO",
    "flight_type": "one_way",
    "cabin": "business",
    "created_at": "2024-05-11T08:28:51",
    "total_baggages": 3,
    "insurance": "yes",
    "status": "cancelled",
    "passengers": [{"first_name": "Omar", "last_name": "Davis"}],
    "payment": {"method": "credit_card", "id": "credit_card_4421486"},
    "refundable": True,
    "note": "Customer Omar Davis called twice",
}


def _calls(excerpt):
    return [e for e in excerpt if e["role"] == "tool_call"]


def test_the_summary_keeps_enum_like_values_only():
    summary = result_summary(json.dumps(RESERVATION), Redactor())
    assert summary == {
        "flight_type": "one_way",
        "cabin": "business",
        "insurance": "yes",
        "status": "cancelled",
        "payment.method": "credit_card",
        "refundable": True,
    }


def test_a_value_the_session_shows_as_personal_is_dropped(db):  # a new Agent takes the default namespace
    session = parse_procmem(
        {
            "session_id": "s1",
            "task": "I am Omar Davis",
            "tool_calls": [{"name": "getUser", "args": {}, "result": {"tier": "gold", "nickname": "Omar"}}],
        }
    )
    redactor = redactor_for(session, Agent(name="a").redaction_patterns)
    assert result_summary(session.tool_calls[0]["result"], redactor) == {"tier": "gold"}


def test_openai_results_reach_the_excerpt_but_not_the_raw_calls(db):
    from library.ingest.store import sessions_store

    item = {
        "task_id": 7,
        "trial": 0,
        "reward": 1.0,
        "traj": [
            {"role": "user", "content": "cancel my trip JG7FMM"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "function": {
                            "name": "get_reservation_details",
                            "arguments": json.dumps({"reservation_id": "JG7FMM"}),
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": json.dumps(RESERVATION)},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c2",
                        "function": {
                            "name": "cancel_reservation",
                            "arguments": json.dumps({"reservation_id": "JG7FMM"}),
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c2", "content": "Error: not allowed"},
        ],
    }
    agent = Agent.objects.create(name="airline")
    sessions_store(agent=agent, sessions=[parse_openai(item)])
    stored = agent.sessions.get()
    lookup, cancel = _calls(stored.redacted_excerpt)
    assert lookup["result"]["cabin"] == "business" and "reservation_id" not in lookup["result"]
    assert "result" not in cancel and cancel["ok"] is False
    assert all("result" not in call for call in stored.tool_calls)
    assert (
        "JG7FMM" not in json.dumps(stored.redacted_excerpt)
        and "omar" not in json.dumps(stored.redacted_excerpt).lower()
    )


def test_adk_results_are_summarised_for_the_agents_own_calls(db):
    item = {
        "id": "adk-1",
        "state": {"outcome": {"resolved": True}},
        "events": [
            {"author": "user", "content": {"parts": [{"text": "where is my order"}]}},
            {
                "author": "support",
                "content": {"parts": [{"functionCall": {"name": "lookupOrder", "args": {"order_id": "A1"}}}]},
            },
            {
                "author": "support",
                "content": {
                    "parts": [
                        {"functionResponse": {"name": "lookupOrder", "response": {"shipping": "express", "id": "A1"}}}
                    ]
                },
            },
        ],
    }
    session = parse_adk(item)
    [call] = _calls(build_excerpt(session, redactor_for(session, Agent(name="a").redaction_patterns)))
    assert call["result"] == {"shipping": "express"}


def test_procmem_calls_carry_their_result():
    session = parse_procmem(
        {
            "session_id": "p1",
            "tool_calls": [{"name": "lookupOrder", "args": {}, "result": {"state": "open", "total": 12.5}}],
        }
    )
    [call] = _calls(build_excerpt(session, Redactor()))
    assert call["result"] == {"state": "open"}


@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=30),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=6),
        max_leaves=30,
    )
)
def test_any_result_gives_a_small_flat_summary(result):
    for value in (result, json.dumps(result)):
        summary = result_summary(value, Redactor())
        assert len(summary) <= 12
        assert all(
            isinstance(v, bool) or (isinstance(v, str) and not any(c.isdigit() for c in v)) for v in summary.values()
        )
