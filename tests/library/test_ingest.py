"""library/ingest/ (formats, reader, store) and manage.py import_sessions / purge_raw_sessions."""

import io
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from library.ingest.formats import (
    ImportOptions,
    ItemInvalid,
    parse_adk,
    parse_item,
    parse_openai,
    parse_procmem,
    taubench_intent,
)
from library.ingest.reader import iter_json_items
from library.ingest.store import sessions_purge_raw, sessions_store
from library.models import AgentSession, Intent


def procmem_item(session_id="s-1", **overrides):
    item = {
        "session_id": session_id,
        "agent": "support_agent",
        "intent": "refund_over_limit",
        "task": "I'm Anna Schmidt (anna@example.com), refund ORD-12345 please",
        "outcome": {"resolved": True, "escalated": False, "rating": 5},
        "tool_calls": [
            {"name": "lookupOrder", "args": {"order_id": "ORD-12345"}, "ok": True},
            {
                "name": "createApproval",
                "args": {"order_id": "ORD-12345", "customer_email": "anna@example.com"},
                "ok": True,
            },
        ],
        "injected": [{"id": "refund.over_limit", "version": 3}],
        "instruction_chars": 2100,
        "model": "gpt-4o",
        "ended_at": "2026-11-20T10:00:00Z",
    }
    item.update(overrides)
    return item


# ---------------------------------------------------------------------------------------------- parsers


def test_procmem_item_parses_every_field():
    session = parse_procmem(procmem_item())
    assert session.session_id == "s-1" and session.intent == "refund_over_limit"
    assert session.resolved is True and session.escalated is False and session.rating == 5.0
    assert session.skeleton == ["lookupOrder", "createApproval"]
    assert session.injected == [{"id": "refund.over_limit", "version": 3}]
    assert session.instruction_chars == 2100 and session.model == "gpt-4o"
    assert session.ended_at.isoformat() == "2026-11-20T10:00:00+00:00"


def test_procmem_errors_name_every_bad_field():
    bad = procmem_item(
        session_id="",
        outcome={"resolved": "yes"},
        tool_calls=[{"name": "lookupOrder"}, {"name": "///"}, {"name": "x", "args": [1]}],
        injected=[{"id": "refund.over_limit", "version": 0}],
        instruction_chars=-1,
        ended_at="yesterday",
    )
    with pytest.raises(ItemInvalid) as caught:
        parse_procmem(bad)
    fields = {error.field for error in caught.value.errors}
    assert fields == {
        "session_id",
        "outcome.resolved",
        "tool_calls[1].name",
        "tool_calls[2].args",
        "injected[0].version",
        "instruction_chars",
        "ended_at",
    }


def test_openai_taubench_item_outcome_escalation_and_intent():
    item = {
        "task_id": 7,
        "trial": 2,
        "reward": 1.0,
        "info": {"task": {"actions": [{"name": "get_user_details"}, {"name": "cancel_reservation"}]}},
        "traj": [
            {"role": "system", "content": "policy"},
            {"role": "user", "content": "Cancel my trip please"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"function": {"name": "get_user_details", "arguments": '{"user_id": "mia_li_3668"}'}}],
            },
            {"role": "tool", "name": "get_user_details", "content": '{"email": "mia@example.com"}'},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"function": {"name": "transfer_to_human_agents", "arguments": '{"summary": "x"}'}}],
            },
            {"role": "assistant", "content": "Transferring you."},
        ],
    }
    session = parse_openai(item, ImportOptions(intent_from="taubench-actions", id_prefix="f/", model="gpt-4o"))
    assert session.session_id == "f/task7-trial2"
    assert session.intent == "cancel_reservation"
    assert session.resolved is True and session.escalated is True
    assert session.skeleton == ["get_user_details", "transfer_to_human_agents"]
    assert session.tool_calls[0]["args"] == {"user_id": "mia_li_3668"}
    assert (
        session.task == "Cancel my trip please" and session.reply == "Transferring you." and session.model == "gpt-4o"
    )
    assert session.structured == ['{"email": "mia@example.com"}']


def test_taubench_intent_uses_write_actions_only():
    assert taubench_intent(
        [{"name": "get_user_details"}, {"name": "update_reservation_flights"}, {"name": "cancel_reservation"}]
    ) == ("cancel_reservation-update_reservation_flights")
    assert taubench_intent([{"name": "get_reservation_details"}]) == "no_write_action"


def test_adk_session_events():
    item = {
        "id": "adk-1",
        "state": {
            "intent": "order_status",
            "outcome": {"resolved": False},
            "procmem:injected": [{"id": "order.status", "version": 2}],
        },
        "events": [
            {"author": "user", "content": {"parts": [{"text": "Where is ORD-12345?"}]}},
            {
                "author": "agent",
                "content": {"parts": [{"functionCall": {"name": "lookupOrder", "args": {"order_id": "ORD-12345"}}}]},
            },
            {
                "author": "agent",
                "content": {
                    "parts": [{"functionResponse": {"name": "lookupOrder", "response": {"status": "shipped"}}}]
                },
            },
            {"author": "agent", "content": {"parts": [{"text": "It shipped."}]}},
        ],
        "lastUpdateTime": 1764410000.0,
    }
    session = parse_adk(item)
    assert session.session_id == "adk-1" and session.intent == "order_status" and session.resolved is False
    assert session.skeleton == ["lookupOrder"] and session.injected == [{"id": "order.status", "version": 2}]
    assert session.task == "Where is ORD-12345?" and session.reply == "It shipped." and session.ended_at is not None
    assert parse_item(item).source_format == "adk"


def test_intent_field_and_map():
    options = ImportOptions(intent_field="meta.route", intent_map={"r1": "refund_over_limit"})
    assert parse_procmem(procmem_item(intent=None, meta={"route": "r1"}), options).intent == "refund_over_limit"
    by_id = ImportOptions(intent_map={"s-9": "order_status"})
    assert parse_procmem(procmem_item("s-9", intent=None), by_id).intent == "order_status"
    with pytest.raises(ItemInvalid, match="not an intent name"):
        parse_procmem(procmem_item(intent="Refund!"))


# ---------------------------------------------------------------------------------------------- streaming


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 1 << 20])
def test_iter_json_items_list_and_lines_in_any_chunking(chunk_size):
    items = [{"a": i, "text": 'é,[]{}"' * i} for i in range(5)] + [3, "x", None]
    as_list = json.dumps(items, indent=1).encode()
    as_lines = ("\n".join(json.dumps(i) for i in items) + "\n").encode()
    assert list(iter_json_items(io.BytesIO(as_list), chunk_size=chunk_size)) == items
    assert list(iter_json_items(io.BytesIO(as_lines), chunk_size=chunk_size)) == items


def test_iter_json_items_names_the_bad_item():
    with pytest.raises(ValueError, match=r"item 1 \(line 1\): invalid JSON"):
        list(iter_json_items(io.BytesIO(b'[{"a": 1}, {"a": ]'), chunk_size=4))
    with pytest.raises(ValueError, match="not closed"):
        list(iter_json_items(io.BytesIO(b'[{"a": 1}, '), chunk_size=4))


# ---------------------------------------------------------------------------------------------- storing


@pytest.mark.django_db
def test_store_redacts_before_storing_and_is_idempotent(agent):
    agent.redaction_patterns = [{"label": "order_id", "regex": r"\bORD-\d{4,}\b"}]
    agent.save()
    first = sessions_store(
        agent=agent, sessions=[parse_procmem(procmem_item("s-1")), parse_procmem(procmem_item("s-1"))]
    )
    assert first.stored == ["s-1"] and first.duplicate == ["s-1"]
    row = AgentSession.objects.get(agent=agent, session_id="s-1")
    excerpt = json.dumps(row.redacted_excerpt)
    assert "Anna" not in excerpt and "anna@example.com" not in excerpt and "ORD-12345" not in excerpt
    assert "{{email_address}}" in excerpt and "{{order_id}}" in excerpt
    assert row.skeleton == ["lookupOrder", "createApproval"] and row.intent.name == "refund_over_limit"
    assert (
        row.injected == [{"id": "refund.over_limit", "version": 3}]
        and row.instruction_chars == 2100
        and row.model == "gpt-4o"
    )
    # a resend changes nothing, even with other content
    again = sessions_store(agent=agent, sessions=[parse_procmem(procmem_item("s-1", task="changed"))])
    assert again.stored == [] and again.duplicate == ["s-1"]
    assert AgentSession.objects.get(pk=row.pk).task == row.task


@pytest.mark.django_db
def test_unknown_intents_are_created_for_the_agent(agent):
    sessions_store(agent=agent, sessions=[parse_procmem(procmem_item("s-2", intent="brand_new"))])
    assert Intent.objects.filter(agent=agent, name="brand_new").exists()


@pytest.mark.django_db
def test_zero_retention_never_stores_raw_content(agent, settings):
    settings.PROCMEM_RAW_RETENTION_DAYS = 0
    sessions_store(agent=agent, sessions=[parse_procmem(procmem_item("s-3"))])
    row = AgentSession.objects.get(session_id="s-3")
    assert (
        row.raw_purged
        and row.task == ""
        and row.tool_calls == [{"name": "lookupOrder", "ok": True}, {"name": "createApproval", "ok": True}]
    )
    assert row.skeleton == ["lookupOrder", "createApproval"] and row.redacted_excerpt


@pytest.mark.django_db
def test_purge_drops_raw_content_past_retention_only(agent):
    sessions_store(agent=agent, sessions=[parse_procmem(procmem_item("old")), parse_procmem(procmem_item("new"))])
    AgentSession.objects.filter(session_id="old").update(received_at=timezone.now() - timedelta(days=31))
    assert sessions_purge_raw(older_than_days=30) == 1
    old, new = AgentSession.objects.get(session_id="old"), AgentSession.objects.get(session_id="new")
    assert old.raw_purged and old.task == "" and all("args" not in c for c in old.tool_calls)
    assert old.skeleton == ["lookupOrder", "createApproval"] and old.redacted_excerpt
    assert not new.raw_purged and new.tool_calls[0]["args"] == {"order_id": "ORD-12345"}
    out = io.StringIO()
    call_command("purge_raw_sessions", "--days", "0", stdout=out)
    assert "Purged the raw content of 1 session." in out.getvalue()


# ---------------------------------------------------------------------------------------------- the command


@pytest.mark.django_db
def test_import_sessions_command_stores_good_items_and_names_bad_ones(agent, tmp_path):
    path = tmp_path / "sessions.jsonl"
    lines = [procmem_item("a"), procmem_item("b", tool_calls=[{"name": 5}]), procmem_item("c")]
    path.write_text("\n".join(json.dumps(line) for line in lines))
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 item refused"):
        call_command(
            "import_sessions", str(path), "--agent", agent.name, "--no-progress", stdout=io.StringIO(), stderr=err
        )
    assert "line 2: (b) tool_calls[0].name" in err.getvalue()
    assert set(AgentSession.objects.values_list("session_id", flat=True)) == {"a", "c"}


@pytest.mark.django_db
def test_import_sessions_command_needs_a_known_agent_or_creates_it(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps([procmem_item("a")]))
    with pytest.raises(CommandError, match="Unknown agent 'shop'"):
        call_command("import_sessions", str(path), "--agent", "shop", "--no-progress")
    out = io.StringIO()
    call_command("import_sessions", str(path), "--agent", "shop", "--create-agent", "--no-progress", stdout=out)
    assert "shop: 1 stored, 0 duplicate, 0 refused." in out.getvalue()
    from library.models import Agent

    assert Agent.objects.get(name="shop").tools == ["createApproval", "lookupOrder"]


@pytest.mark.django_db
def test_import_sessions_intent_map_file(agent, tmp_path):
    data = tmp_path / "s.jsonl"
    data.write_text(json.dumps(procmem_item("m-1", intent=None, route="R7")) + "\n")
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"R7": "order_status"}))
    call_command(
        "import_sessions",
        str(data),
        "--agent",
        agent.name,
        "--intent-field",
        "route",
        "--intent-map",
        str(mapping),
        "--no-progress",
        stdout=io.StringIO(),
    )
    assert AgentSession.objects.get(session_id="m-1").intent.name == "order_status"
