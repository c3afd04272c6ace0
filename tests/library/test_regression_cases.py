"""Regression cases: JSONL import (all or nothing, idempotent), tau2-bench task files, sessions made
into cases, and the management command."""

from __future__ import annotations

import functools
import json

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import CommandError, call_command

from library.evals.cases import (
    CaseImportError,
    import_cases,
    parse_jsonl,
    parse_tau2,
    regression_case_create,
    regression_case_from_session,
    tau2_intent,
)
from library.ingest.formats import taubench_intent
from library.models import Agent, AgentSession, AuditEvent, RegressionCase
from library.scans.personal_data import scan, taubench_values
from public_data import data_dir
from tests.conftest import _missing

pytestmark = pytest.mark.django_db

# tau2-bench's task files (public_data/taubench; TAU2_DATA_DIR, then TAUBENCH_DIR, overrides).
TAU2 = data_dir("tau2")


def needs_tau2(test):
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        if not (TAU2 / "tau2_airline_tasks.json").exists():
            _missing(
                f"tau2-bench tasks not found at {TAU2} (public_data/taubench unless TAU2_DATA_DIR or TAUBENCH_DIR is set)"
            )
        return test(*args, **kwargs)

    return wrapper


def line(**data) -> str:
    return json.dumps({"intent": "refund_over_limit", "task": "Refund ORD-1 please", **data})


def test_jsonl_import_stores_every_field_and_skips_known_external_ids(agent, reviewer):
    text = [
        line(
            name="first",
            expected_tools=["lookupOrder", {"name": "createApproval", "args": {"order_id": "ORD-1"}}],
            forbidden_tools=[{"name": "replyTemplates", "before": "createApproval"}],
            reply_must_match=["approv"],
            context={"order_id": "ORD-1"},
            tool_results={"lookupOrder": [{"total": 480}]},
            external_id="crm-1",
        ),
        "",
        line(intent="order_status", task="Where is ORD-2?"),
    ]
    report = import_cases(parse_jsonl(text, source="cases.jsonl"), agent=agent, user=reviewer)
    assert len(report.created) == 2
    case = RegressionCase.objects.get(external_id="crm-1")
    # redacted like session evidence, with one placeholder per value across task, context and arguments
    assert case.task == "Refund {{order_id}} please" and case.context == {"order_id": "{{order_id}}"}
    assert case.expected_tools[1] == {"name": "createApproval", "args": {"order_id": "{{order_id}}"}}
    assert case.tool_results == {"lookupOrder": [{"total": 480}]} and case.created_by == reviewer
    again = import_cases(parse_jsonl(text[:1], source="cases.jsonl"), agent=agent)
    assert (len(again.created), len(again.skipped)) == (0, 1)


@pytest.mark.parametrize(
    "bad, where, field",
    [
        ("{not json", "cases.jsonl:2", "(line)"),
        (json.dumps({"task": "x"}), "cases.jsonl:2", "intent"),
        (line(task=" "), "cases.jsonl:2", "task"),
        (line(expected_tools="lookupOrder"), "cases.jsonl:2", "expected_tools"),
        (line(reply_must_match=["("]), "cases.jsonl:2", "reply_must_match"),
    ],
)
def test_a_malformed_line_stores_nothing_and_names_line_and_field(agent, bad, where, field):
    with pytest.raises(CaseImportError) as excinfo:
        import_cases(parse_jsonl([line(), bad], source="cases.jsonl"), agent=agent)
    assert (excinfo.value.where, excinfo.value.field) == (where, field)
    assert not RegressionCase.objects.exists()


def test_an_unknown_intent_stores_nothing_unless_intents_may_be_created(agent):
    items = parse_jsonl([line(), line(intent="gift_cards")], source="c.jsonl")
    with pytest.raises(CaseImportError, match="c.jsonl:2: intent: agent support_agent has no intent 'gift_cards'"):
        import_cases(items, agent=agent)
    assert not RegressionCase.objects.exists()
    report = import_cases(items, agent=agent, create_intents=True)
    assert report.intents_created == ["gift_cards"] and len(report.created) == 2


def test_only_reviewers_create_cases(agent, intent, outsider):
    with pytest.raises(PermissionDenied):
        regression_case_create(agent=agent, intent=intent, user=outsider, task="Refund please")


@needs_tau2
def test_tau2_task_files_import_as_cases():
    airline = parse_tau2(TAU2 / "tau2_airline_tasks.json")
    retail = parse_tau2(TAU2 / "tau2_retail_tasks.json")
    assert (len(airline), len(retail)) == (50, 114)
    _where, first_retail = retail[0]
    raw = json.loads((TAU2 / "tau2_retail_tasks.json").read_text())[0]
    assert first_retail["task"] == raw["user_scenario"]["instructions"]["reason_for_call"]
    assert first_retail["expected_tools"] == [
        {"name": a["name"], "args": a["arguments"]} for a in raw["evaluation_criteria"]["actions"]
    ]
    assert first_retail["intent"] == "exchange_delivered_order_items"
    assert "cancel_pending_order" in first_retail["forbidden_tools"]  # a write the gold actions do not make
    assert first_retail["external_id"] == "tau2:retail:0"
    # a task without gold writes (a refusal) forbids every write tool
    _where, refusal = airline[0]
    assert (
        refusal["intent"] == "no_write_action"
        and refusal["expected_tools"] == []
        and "cancel_reservation" in refusal["forbidden_tools"]
    )


@needs_tau2
def test_tau2_cases_reach_reviewers_without_a_personal_value_of_the_worlds():
    # given both tau2 task files, whose tasks, known info and gold arguments name the worlds' people
    # ("You're Chen Smith, living in Jacksonville 32278", user ids, birth dates, payment ids)
    for domain in ("airline", "retail"):
        call_command(
            "import_regression_cases",
            str(TAU2 / f"tau2_{domain}_tasks.json"),
            "--tau2",
            "--agent",
            domain,
            "--create-agent",
            "--create-intents",
        )
    # then no value of the worlds is stored in a case or in the audit rows that record them
    hits = scan(taubench_values(TAU2))
    assert hits == [], [hit.to_dict() for hit in hits[:5]]
    # and a case keeps its placeholders coherent between the task's context and the expected calls
    case = RegressionCase.objects.get(external_id="tau2:airline:39")
    assert "{{user_id}}" in case.context["known_info"]
    assert case.expected_tools[0] == {"name": "get_user_details", "args": {"user_id": "{{user_id}}"}}


@needs_tau2
def test_cases_stored_before_imports_were_redacted_are_redacted_again():
    # given both tau2 task files stored as an older release stored them: the raw task, known info
    # and gold arguments, with the worlds' names, user ids, birth dates and payment ids
    from io import StringIO

    from library.models import Intent

    stored = 0
    for domain in ("airline", "retail"):
        agent = Agent.objects.create(name=domain)
        for _, data in parse_tau2(TAU2 / f"tau2_{domain}_tasks.json"):
            intent, _ = Intent.objects.get_or_create(agent=agent, name=data["intent"])
            fields = {
                key: data[key]
                for key in (
                    "name",
                    "task",
                    "context",
                    "expected_tools",
                    "forbidden_tools",
                    "reply_must_match",
                    "tool_results",
                )
                if key in data
            }
            RegressionCase.objects.create(agent=agent, intent=intent, external_id=data["external_id"], **fields)
            stored += 1
    values = taubench_values(TAU2)
    assert scan(values), "the raw cases hold the worlds' values"
    # when the stored data is redacted again
    out = StringIO()
    call_command("redact_stored", stdout=out)
    # then no value of the worlds is left in a case, nor written into the audit rows of the change
    changed = int(out.getvalue().split(" and ")[1].split()[0])
    assert 0.9 * stored <= changed <= stored
    hits = scan(values)
    assert hits == [], [hit.to_dict() for hit in hits[:5]]
    audits = AuditEvent.objects.filter(action=AuditEvent.Action.CASE_CHANGE, actor_label="redact_stored")
    assert audits.count() == changed and set(audits[0].after) == {"case", "fields"}
    # and the placeholders agree between the task's known info and the expected calls, as on import
    case = RegressionCase.objects.get(external_id="tau2:airline:39")
    assert "{{user_id}}" in case.context["known_info"]
    assert case.expected_tools[0] == {"name": "get_user_details", "args": {"user_id": "{{user_id}}"}}
    # and a second run changes nothing
    call_command("redact_stored", "--agent", "airline", stdout=out)
    assert out.getvalue().endswith("Redacted 0 stored excerpts and 0 regression cases again.\n")


def test_redacting_again_names_an_unknown_agent():
    with pytest.raises(CommandError, match="Unknown agent 'nobody'"):
        call_command("redact_stored", "--agent", "nobody")


def test_tau2_intent_from_the_gold_writes():
    assert tau2_intent(
        [{"name": "get_user_details"}, {"name": "cancel_reservation"}, {"name": "book_reservation"}]
    ) == ("book_reservation-cancel_reservation")
    assert tau2_intent([{"name": "get_order_details"}]) == "no_write_action"  # as the sessions' label says
    # the same label import_sessions gives a session with these gold actions, escalation included
    actions = [{"name": "find_user_id_by_email"}, {"name": "transfer_to_human_agents"}]
    assert tau2_intent(actions) == taubench_intent(actions) == "transfer_to_human_agents"


@needs_tau2
def test_the_import_command_reads_tau2_and_jsonl(tmp_path, capsys):
    call_command(
        "import_regression_cases",
        str(TAU2 / "tau2_airline_tasks.json"),
        "--tau2",
        "--agent",
        "airline",
        "--create-agent",
        "--create-intents",
    )
    agent = Agent.objects.get(name="airline")
    assert agent.regression_cases.count() == 50 and "cancel_reservation" in agent.tools
    call_command("import_regression_cases", str(TAU2 / "tau2_airline_tasks.json"), "--tau2", "--agent", "airline")
    assert agent.regression_cases.count() == 50  # the second import skips them all
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line() + "\n{oops\n")
    with pytest.raises(CommandError, match=r"Nothing was imported\. .*bad.jsonl:2: \(line\)"):
        call_command("import_regression_cases", str(bad), "--agent", "airline")


def test_a_session_becomes_a_case(agent, intent, reviewer):
    session = AgentSession.objects.create(
        agent=agent,
        session_id="s-42",
        intent=intent,
        task="Refund ORD-9 (900 EUR) please",
        resolved=True,
        escalated=False,
        skeleton=["lookupOrder", "checkReturnWindow", "createApproval"],
        tool_calls=[
            {"name": "lookupOrder", "args": {"order_id": "ORD-9"}, "ok": True, "result": {"total": 900}},
            {"name": "checkReturnWindow", "args": {"order_id": "ORD-9"}, "ok": True, "result": {"in_window": True}},
            {"name": "createApproval", "args": {"order_id": "ORD-9"}, "ok": True},
        ],
    )
    case = regression_case_from_session(session=session, user=reviewer)
    assert (case.task, case.intent, case.source_session) == ("Refund {{order_id}} (900 EUR) please", intent, session)
    assert case.expected_tools == ["lookupOrder", "checkReturnWindow", "createApproval"]
    assert case.tool_results == {"lookupOrder": [{"total": 900}], "checkReturnWindow": [{"in_window": True}]}
    assert case.context == {"order_id": "{{order_id}}"}
    assert regression_case_from_session(session=session, user=reviewer).pk == case.pk  # once per session


def test_a_case_made_from_a_session_shows_no_personal_data(agent, intent, reviewer):
    # given a session whose raw task, arguments and results name the customer
    session = AgentSession.objects.create(
        agent=agent,
        session_id="s-43",
        intent=intent,
        resolved=True,
        escalated=False,
        skeleton=["get_user_details"],
        task="Hi, I'm Mia Li (mia_li_3668), reservation VAAOXJ, born 1990-04-05",
        tool_calls=[
            {
                "name": "get_user_details",
                "args": {"user_id": "mia_li_3668"},
                "ok": True,
                "result": {
                    "name": {"first_name": "Mia", "last_name": "Li"},
                    "dob": "1990-04-05",
                    "reservations": ["VAAOXJ"],
                },
            }
        ],
    )
    # when a reviewer turns it into a case
    case = regression_case_from_session(session=session, user=reviewer)
    # then the case, and the audit row that records it, carry placeholders only
    audit_row = AuditEvent.objects.filter(action=AuditEvent.Action.CASE_CHANGE).latest("pk")
    stored = json.dumps([case.task, case.context, case.tool_results, audit_row.after])
    for value in ("Mia", 'Li"', "mia_li_3668", "VAAOXJ", "1990-04-05"):
        assert value not in stored, value
    assert case.task == "Hi, I'm {{person_name}} ({{user_id}}), reservation {{reservation_id}}, born {{birth_date}}"
    assert case.tool_results["get_user_details"][0]["reservations"] == ["{{reservation_id}}"]


def test_a_failed_or_purged_session_is_handled(agent, intent, reviewer):
    failed = AgentSession.objects.create(
        agent=agent, session_id="s-1", intent=intent, task="x", resolved=False, skeleton=["lookupOrder"]
    )
    assert regression_case_from_session(session=failed, user=reviewer).expected_tools == []
    purged = AgentSession.objects.create(agent=agent, session_id="s-2", intent=intent, task="", raw_purged=True)
    with pytest.raises(ValidationError, match="purged"):
        regression_case_from_session(session=purged, user=reviewer)
    unlabelled = AgentSession.objects.create(agent=agent, session_id="s-3", task="x")
    with pytest.raises(ValidationError, match="no intent"):
        regression_case_from_session(session=unlabelled, user=reviewer)
