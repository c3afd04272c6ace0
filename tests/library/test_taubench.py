"""Real data: tau-bench's 200 GPT-4o airline sessions (public_data/taubench, README there).

Imported with the one documented command, mined with a support threshold that fits its size, and
checked against what the resolved sessions actually did; and every piece of personal data in those
sessions is looked for in everything a reviewer can open."""

import io
import json
import re
from collections import defaultdict

import pytest
from django.core.management import CommandError, call_command

from library.evals.cases import regression_case_from_session
from library.models import AgentSession, Intent, MiningRun, ProcedureVersion, Source
from library.services import procedure_propose
from tests.conftest import TAUBENCH_DIR, require_taubench
from tests.library.taubench_retail import retail_sessions

DATA = TAUBENCH_DIR / "gpt-4o-airline.json"
READ_PREFIXES = ("get_", "search_", "list_", "calculate", "think")
THRESHOLD = 2

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture(scope="module")
def raw():
    require_taubench()
    return json.loads(DATA.read_text())


@pytest.fixture
def imported(raw):
    out = io.StringIO()
    call_command(
        "import_sessions",
        str(DATA),
        "--agent",
        "airline",
        "--create-agent",
        "--intent-from",
        "taubench-actions",
        "--model",
        "gpt-4o",
        "--id-prefix",
        "gpt-4o-airline/",
        "--no-progress",
        stdout=out,
    )
    assert "airline: 200 stored, 0 duplicate, 0 refused." in out.getvalue()
    call_command("mine", "--agent", "airline", "--threshold", str(THRESHOLD), stdout=io.StringIO())
    return MiningRun.objects.get(agent__name="airline")


def _tools(session):
    return [call["function"]["name"] for message in session["traj"] for call in (message.get("tool_calls") or [])]


def _skeleton(tools):
    reduced = []
    for tool in tools:
        if tool != "think" and (not reduced or reduced[-1] != tool):
            reduced.append(tool)
            if tool == "transfer_to_human_agents":  # a terminal call ends the procedure
                break
    return tuple(reduced)


def test_sessions_keep_outcome_model_and_the_derived_intent(raw, imported):
    assert AgentSession.objects.filter(agent__name="airline").count() == 200
    assert AgentSession.objects.filter(agent__name="airline", resolved=True).count() == sum(
        1 for s in raw if s["reward"] == 1.0
    )
    escalated = sum(1 for s in raw if "transfer_to_human_agents" in _tools(s))
    assert AgentSession.objects.filter(agent__name="airline").values("task_key").distinct().count() == 50
    assert AgentSession.objects.filter(agent__name="airline", escalated=True).count() == escalated
    assert set(AgentSession.objects.filter(agent__name="airline").values_list("model", flat=True)) == {"gpt-4o"}
    assert AgentSession.objects.filter(agent__name="airline").values("intent").distinct().count() == 12


def _intent(session):
    writes = sorted({a["name"] for a in session["info"]["task"]["actions"] if not a["name"].startswith(READ_PREFIXES)})
    return "-".join(writes) or "no_write_action"


def _mined_part(raw):
    """The sessions the miner mines: per intent all but the newest quarter (the file has no end
    times, so import order decides), with at least 3 tool calls besides think."""
    by_intent = defaultdict(list)
    for session in raw:
        by_intent[_intent(session)].append(session)
    mined = {}
    for intent, sessions in by_intent.items():
        older = sessions[: len(sessions) - len(sessions) // 4]
        mined[intent] = [s for s in older if sum(1 for t in _tools(s) if t != "think") >= 3]
    return mined


def _drafts(run):
    """Every candidate of the run: the proposed versions and the reported (not proposed) drafts."""
    drafts = [
        {
            "intent": v.procedure.intent.name,
            "skeleton": v.skeleton,
            "steps": v.steps,
            "forbidden": v.forbidden_actions,
            "support": v.evidence["support"],
            "test": v.evidence["skeletonTest"],
            "proposed": True,
        }
        for v in ProcedureVersion.objects.filter(mining_run=run).select_related("procedure__intent")
    ]
    drafts += [
        {
            "intent": e["intent"],
            "skeleton": e["skeleton"],
            "steps": e["steps"],
            "forbidden": e["forbiddenActions"],
            "support": e["figures"]["support"],
            "test": e["skeletonTest"],
            "proposed": False,
        }
        for e in run.report
        if e.get("steps") is not None and e["status"] != "mined"
    ]
    return drafts


def test_support_counts_distinct_tasks_not_repeated_trials(raw, imported):
    mined = _mined_part(raw)
    drafts = _drafts(imported)
    assert drafts
    repeated = False
    for draft in drafts:
        sessions = [s for s in mined[draft["intent"]] if s["reward"] == 1.0]
        following = [s for s in sessions if list(_skeleton(_tools(s))) == draft["skeleton"]]
        tasks = {s["task_id"] for s in following}
        assert draft["support"] == len(tasks), draft["intent"]
        assert draft["test"]["resolvedOf"] == len({s["task_id"] for s in sessions})
        if len(following) > len(tasks):
            repeated = True
    assert repeated  # some group has repeated trials of one task, and they counted once


def test_no_step_or_forbidden_action_holds_an_id_of_the_airline_world(imported):
    ids = _airline_ids()
    assert len(ids) > 2000
    text = "\n".join(line for draft in _drafts(imported) for line in draft["steps"] + draft["forbidden"])
    assert text
    words = set(re.findall(r"[A-Za-z0-9_#\-]+", text))
    assert not (words & ids), sorted(words & ids)[:10]


def test_result_summaries_keep_the_reservation_kind_and_no_id_of_the_world(imported):
    ids = _airline_ids()
    summaries = [
        call["result"]
        for excerpt in AgentSession.objects.filter(agent__name="airline").values_list("redacted_excerpt", flat=True)
        for call in excerpt
        if call.get("role") == "tool_call" and call.get("result")
    ]
    reservations = [s for s in summaries if "cabin" in s]
    assert reservations and {s["cabin"] for s in reservations} <= {"basic_economy", "economy", "business"}
    values = {str(v) for s in summaries for v in s.values()}
    assert not (values & ids) and not any(any(c.isdigit() for c in v) for v in values)


def test_a_transfer_candidate_ends_with_the_transfer(imported):
    with_transfer = [d for d in _drafts(imported) if "transfer_to_human_agents" in d["skeleton"]]
    assert with_transfer
    for draft in with_transfer:
        assert draft["skeleton"][-1] == "transfer_to_human_agents", draft["intent"]
        assert "transfer_to_human_agents" in draft["steps"][-1]


def test_no_proposed_candidate_has_a_lift_interval_reaching_below_one(imported):
    for draft in _drafts(imported):
        low = draft["test"]["liftLow"]
        if draft["proposed"]:
            assert low is not None and low > 1, draft["intent"]
    # what is only reported says why
    for entry in imported.report:
        assert entry["reason"] and entry["status"]


def test_the_run_report_lists_every_intent_of_the_import(raw, imported):
    assert {entry["intent"] for entry in imported.report} == {_intent(s) for s in raw}
    assert len({entry["intent"] for entry in imported.report}) == 12


def test_backtest_on_the_newest_trials(raw, imported):
    by_intent = defaultdict(list)
    for session in raw:
        by_intent[_intent(session)].append(session)
    for draft_entry in [e for e in imported.report if e.get("backtest")]:
        back = draft_entry["backtest"]
        newest = by_intent[draft_entry["intent"]][-(len(by_intent[draft_entry["intent"]]) // 4) :]
        assert back["heldBackSessions"] == len(newest)
        assert back["followers"]["of"] + back["others"]["of"] == len(newest)


def _airline_ids():
    """Every id of the airline world: user, reservation, payment and flight ids, airport codes."""
    world = TAUBENCH_DIR / "airline_db"
    users = json.loads((world / "users.json").read_text())
    reservations = json.loads((world / "reservations.json").read_text())
    ids = set(users) | set(reservations)
    for user in users.values():
        for key, method in (user.get("payment_methods") or {}).items():
            ids.add(key)
            if isinstance(method, dict) and method.get("id"):
                ids.add(method["id"])
        ids.update(user.get("reservations") or [])
    for reservation in reservations.values():
        ids.update(
            filter(None, (reservation.get("origin"), reservation.get("destination"), reservation.get("user_id")))
        )
        for flight in reservation.get("flights") or []:
            ids.update(filter(None, (flight.get("flight_number"), flight.get("origin"), flight.get("destination"))))
        for payment in reservation.get("payment_history") or []:
            if payment.get("payment_id"):
                ids.add(payment["payment_id"])
    return ids


def _personal_values(raw):
    values = {"user_id": set(), "email": set(), "dob": set(), "payment_id": set(), "name": set()}

    def walk(obj, parent=""):
        if isinstance(obj, dict):
            for key, value in obj.items():
                if re.fullmatch(r"(credit_card|gift_card|certificate|paypal)_\d+", key):
                    values["payment_id"].add(key)
                if isinstance(value, str):
                    if key == "user_id":
                        values["user_id"].add(value)
                    elif key == "email":
                        values["email"].add(value)
                    elif key == "dob":
                        values["dob"].add(value)
                    elif key in ("payment_id", "id") and re.fullmatch(r"[a-z_]+_\d+", value):
                        values["payment_id"].add(value)
                    elif key in ("first_name", "last_name"):
                        values["name"].add(value)
                walk(value, key)
        elif isinstance(obj, list):
            for item in obj:
                walk(item, parent)
        elif isinstance(obj, str) and obj[:1] in "{[":
            try:
                walk(json.loads(obj), parent)
            except ValueError:
                pass

    for session in raw:
        walk(session["info"]["task"])
        for message in session["traj"]:
            for call in message.get("tool_calls") or []:
                walk(json.loads(call["function"]["arguments"]))
            if message["role"] == "tool":
                walk(message["content"])
            if isinstance(message.get("content"), str):
                values["user_id"].update(re.findall(r"\b[a-z]+_[a-z]+_\d{4}\b", message["content"]))
    return values


def test_no_personal_data_survives_in_anything_a_reviewer_can_open(raw, imported):
    values = _personal_values(raw)
    assert all(values[kind] for kind in values), {k: len(v) for k, v in values.items()}
    reviewer_visible = [
        json.dumps(row)
        for row in AgentSession.objects.filter(agent__name="airline").values_list("redacted_excerpt", flat=True)
    ]
    for version in ProcedureVersion.objects.filter(procedure__agent__name="airline"):
        reviewer_visible.append(json.dumps(version.to_dict()))
        reviewer_visible.append(json.dumps(version.provenance))
    reviewer_visible.append(json.dumps(imported.skipped))
    reviewer_visible.append(json.dumps(imported.report))
    text = "\n".join(reviewer_visible)
    assert "{{user_id}}" in text and "{{person_name}}" in text  # the excerpts are there, redacted
    for kind in ("user_id", "email", "dob", "payment_id"):
        leaked = sorted(v for v in values[kind] if v in text)
        assert not leaked, f"{kind} leaked: {leaked[:5]}"
    leaked_names = sorted(name for name in values["name"] if re.search(rf"\b{re.escape(name)}\b", text))
    assert not leaked_names, f"names leaked: {leaked_names}"


# ------------------------------------------------------------------------------- the leak scanner


@pytest.fixture
def retail_imported(tmp_path):
    require_taubench()
    sessions = retail_sessions(TAUBENCH_DIR)
    path = tmp_path / "retail.json"
    path.write_text(json.dumps(sessions))
    out = io.StringIO()
    call_command(
        "import_sessions",
        str(path),
        "--agent",
        "retail",
        "--create-agent",
        "--format",
        "openai",
        "--intent-from",
        "taubench-actions",
        "--no-progress",
        stdout=out,
    )
    assert f"retail: {len(sessions)} stored, 0 duplicate, 0 refused." in out.getvalue()
    call_command("mine", "--agent", "retail", "--threshold", "2", stdout=io.StringIO())
    return sessions


def test_scan_finds_no_value_of_the_taubench_worlds_after_import_and_mining(imported, retail_imported, reviewer):
    # given every airline session and the retail tasks' sessions imported and mined, and a regression
    # case made from one resolved session of each agent
    for agent_name in ("airline", "retail"):
        session = (
            AgentSession.objects.filter(agent__name=agent_name, resolved=True, intent__isnull=False)
            .order_by("pk")
            .first()
        )
        regression_case_from_session(session=session, user=reviewer)
    # drafts from both: proposed candidates, or reported (not proposed) drafts in the run's report
    drafted = {
        v.procedure.agent.name
        for v in ProcedureVersion.objects.filter(procedure__agent__name__in=["airline", "retail"])
    }
    drafted |= {
        run.agent.name
        for run in MiningRun.objects.select_related("agent")
        if any(e.get("steps") for e in run.report or [])
    }
    assert drafted == {"airline", "retail"}
    # when the scanner looks for every personal value of the two worlds
    out = io.StringIO()
    try:
        call_command("scan_personal_data", "--taubench", str(TAUBENCH_DIR), "--json", stdout=out)
    except CommandError as exc:
        pytest.fail(f"{exc}\n{out.getvalue()[:4000]}")
    # then it found none, and it looked for all of them
    report = json.loads(out.getvalue())
    assert report["hits"] == []
    assert report["values"]["reservation_id"] == 2000 and report["values"]["order_id"] > 50
    assert all(report["values"][kind] > 10 for kind in ("name", "dob", "email", "address", "user_id", "payment_id"))


def test_no_retail_name_survives_alone_either(retail_imported):
    # the scanner looks for full names only (first names alone are ordinary words); here, with
    # the sessions' own people, each first and last name is looked for alone too
    names = set()
    for session in retail_imported:
        for action in session["info"]["task"]["actions"]:
            for key in ("first_name", "last_name"):
                if key in action["kwargs"]:
                    names.add(action["kwargs"][key])
        reply = session["messages"][-1]["content"]
        if reply.startswith("Thank you, "):
            names.update(reply.removeprefix("Thank you, ").split(".")[0].split())
    assert len(names) > 20
    visible = [
        json.dumps(row)
        for row in AgentSession.objects.filter(agent__name="retail").values_list("redacted_excerpt", flat=True)
    ]
    visible += [
        json.dumps(v.to_dict()) + json.dumps(v.provenance)
        for v in ProcedureVersion.objects.filter(procedure__agent__name="retail")
    ]
    text = "\n".join(visible)
    assert "{{person_name}}" in text and "{{order_id}}" in text
    leaked = sorted(name for name in names if re.search(rf"\b{re.escape(name)}\b", text))
    assert not leaked, leaked


def test_the_scanner_reports_each_leak_with_where_it_is(imported, tmp_path):
    # given a reservation id and a full name planted where a reviewer would see them
    intent = Intent.objects.filter(agent__name="airline", name="cancel_reservation").get()
    version = procedure_propose(
        agent=intent.agent,
        intent=intent,
        key="cancel.planted",
        applies_when="A customer cancels a reservation.",
        steps=[
            "Look up the reservation with get_reservation_details({{reservation_id}}).",
            "Cancel it with cancel_reservation({{reservation_id}}).",
            "Tell the customer.",
        ],
        required_tools=["get_reservation_details", "cancel_reservation"],
        forbidden_actions=[],
        source=Source.MANUAL,
        actor_label="test",
        evidence={"note": ["ok", {"who": "Mia Li"}]},
    )
    session = AgentSession.objects.filter(agent__name="airline").order_by("pk").first()
    AgentSession.objects.filter(pk=session.pk).update(
        redacted_excerpt=[{"role": "user", "text": "cancel 4WQ150 please"}]
    )
    values = tmp_path / "values.txt"
    values.write_text("name\tMia Li\nreservation_id\t4WQ150\n# a comment\n")
    # when the scanner runs with that list
    out = io.StringIO()
    with pytest.raises(CommandError, match=r"found: name \d+, reservation_id 1"):
        call_command("scan_personal_data", "--values", str(values), "--json", stdout=out)
    # then each hit names the model, the row, the field and the path inside it
    hits = json.loads(out.getvalue())["hits"]
    assert {
        "surface": "library.AgentSession",
        "pk": session.pk,
        "field": "redacted_excerpt",
        "path": "[0].text",
        "kind": "reservation_id",
        "value": "4WQ150",
    } in hits
    assert {
        "surface": "library.ProcedureVersion",
        "pk": version.pk,
        "field": "evidence",
        "path": "note[1].who",
        "kind": "name",
        "value": "Mia Li",
    } in hits
    assert any(h["surface"] == "export" and h["path"].endswith(".who") for h in hits)  # the export shows evidence too


def test_nothing_proposed_that_trial_3_contradicts(imported):
    # mined on trials 0-2 (the older three quarters), judged on trial 3 by the gate's own estimator
    for entry in imported.report:
        if entry["status"] in ("mined", "quarantined"):
            assert not entry["backtest"]["contradicted"], entry["intent"]
        if entry.get("withinTask"):
            assert (
                "method" in entry["backtest"]["withinTask"] and entry["withinTask"]["unit"] == "sessions, within tasks"
            )
