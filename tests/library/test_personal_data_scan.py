"""scan_personal_data and the path from a health-records agent's sessions to a candidate: search
calls with names and birth dates in query strings, FHIR Patient resources in the results, record
numbers — none of it may reach the candidate's evidence, steps or the excerpts."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from library.ingest.formats import parse_procmem
from library.ingest.store import sessions_store
from library.mining.mining_runs import mining_run_execute
from library.models import Agent, AgentSession, ProcedureVersion
from library.scans.personal_data import KnownValue, Matcher, values_from_file

pytestmark = pytest.mark.django_db

PATIENTS = [
    ("Eve", "Holt", "1961-07-30", "S6534835"),
    ("Tomasz", "Wojcik", "1975-01-12", "S7012345"),
    ("Amara", "Okafor", "1988-09-03", "S5550199"),
]


def _session(index: int, first: str, last: str, dob: str, mrn: str) -> dict:
    patient = {
        "resourceType": "Patient",
        "id": f"pat-{index:04d}",
        "identifier": [{"system": "urn:mrn", "value": mrn}],
        "name": [{"use": "official", "family": last, "given": [first]}],
        "birthDate": dob,
    }
    return {
        "session_id": f"fhir-{index}",
        "intent": "lab_results",
        "task": f"Hello, this is {first} {last}, born {dob}. What were my last lab results? My record number is {mrn}.",
        "outcome": {"resolved": True, "escalated": False},
        "tool_calls": [
            {"name": "fhir_get", "args": {"request": f"Patient?name={first}%20{last}&birthdate={dob}"}, "ok": True},
            {"name": "fhir_get", "args": {"request": f"Observation?patient=pat-{index:04d}&code=718-7"}, "ok": True},
            {"name": "reply", "args": {"text": f"{first}, your haemoglobin for record {mrn} is normal."}, "ok": True},
        ],
        "reply": f"Goodbye {first} {last}.",
        "tool_results": [{"resourceType": "Bundle", "entry": [{"resource": patient}]}],
    }


def test_health_records_sessions_leave_no_name_dob_or_record_number_in_candidates(tmp_path):
    # given a health-records agent whose sessions search patients by name and birth date
    agent = Agent.objects.create(name="clinic", tools=["fhir_get", "reply"], support_threshold=1)
    sessions = [parse_procmem(_session(i, *p)) for i, p in enumerate(PATIENTS * 2)]
    sessions_store(agent=agent, sessions=sessions)
    # when they are mined into a candidate
    run = mining_run_execute(agent=agent, support_threshold=1)  # one task, asked by six patients
    # (six sessions make a draft: proposed as a candidate, or reported in the run when not credible)
    drafts = [v.to_dict() for v in ProcedureVersion.objects.filter(procedure__agent=agent)] + [
        e for e in run.report if e.get("steps")
    ]
    assert len(drafts) == 1, run.report
    # then the scanner finds no patient's name, DOB, record number or patient id anywhere
    values = tmp_path / "patients.json"
    values.write_text(
        json.dumps(
            [{"value": f"{f} {l}", "kind": "name"} for f, l, _, _ in PATIENTS]
            + [{"value": v, "kind": k} for _, _, dob, mrn in PATIENTS for v, k in ((dob, "dob"), (mrn, "record"))]
            + [{"value": f"pat-{i:04d}", "kind": "patient_id"} for i in range(len(PATIENTS) * 2)]
        )
    )
    out = io.StringIO()
    call_command("scan_personal_data", "--values", str(values), stdout=out)
    assert "No personal values found." in out.getvalue()
    # and not a first or last name alone either
    visible = json.dumps(
        [drafts, list(AgentSession.objects.filter(agent=agent).values_list("redacted_excerpt", flat=True))]
    )
    for first, last, _, _ in PATIENTS:
        assert first not in visible and last not in visible
    assert "Patient?name={{person_name}}&birthdate={{birth_date}}" in visible


def test_values_file_formats_and_errors(tmp_path):
    text = tmp_path / "v.txt"
    text.write_text("# comment\nname\tMia Li\nmia_li_3668\n\n")
    assert values_from_file(text) == [KnownValue("Mia Li", "name"), KnownValue("mia_li_3668", "other")]
    bad = tmp_path / "bad.json"
    bad.write_text('["ok", 5]')
    with pytest.raises(ValueError, match=r"item 1"):
        values_from_file(bad)
    with pytest.raises(CommandError, match=r"--values .*bad.json: .*item 1"):
        call_command("scan_personal_data", "--values", str(bad))
    with pytest.raises(CommandError, match="Nothing to look for"):
        call_command("scan_personal_data")


def test_matcher_needs_word_boundaries_and_ignores_short_values():
    matcher = Matcher(
        [KnownValue("Mia Li", "name"), KnownValue("4WQ150", "reservation_id"), KnownValue("USA", "other")]
    )
    assert [v.value for v in matcher.find("mia li booked 4wq150 in the USA")] == ["Mia Li", "4WQ150"]
    assert matcher.find("Mia Lin booked X4WQ150") == []


def test_excerpts_stored_under_older_rules_are_redacted_again():
    # given an excerpt stored before reservation ids and FHIR name parts were recognised
    agent = Agent.objects.create(name="old_airline", tools=["get_reservation_details"])
    old = AgentSession.objects.create(
        agent=agent,
        session_id="old-1",
        task="Hi, cancel ZFA04Y for Okafor please",
        skeleton=["get_reservation_details"],
        tool_calls=[
            {"name": "get_reservation_details", "args": {"reservation_id": "ZFA04Y", "family": "Okafor"}, "ok": True}
        ],
        redacted_excerpt=[
            {"role": "user", "text": "Hi, cancel ZFA04Y for Okafor please"},
            {
                "role": "tool_call",
                "tool": "get_reservation_details",
                "args": {"reservation_id": "ZFA04Y", "family": "Okafor"},
                "ok": True,
            },
        ],
    )
    purged = AgentSession.objects.create(
        agent=agent,
        session_id="old-2",
        raw_purged=True,
        skeleton=["get_reservation_details"],
        redacted_excerpt=[
            {"role": "tool_call", "tool": "get_reservation_details", "args": {"reservation_id": "VAAOXJ"}, "ok": True},
            {"role": "assistant", "text": "VAAOXJ is cancelled."},
        ],
    )
    # when the stored excerpts are redacted again
    out = io.StringIO()
    call_command("redact_stored", "--agent", "old_airline", stdout=out)
    # then the ids and the name are gone, from raw arguments and from the excerpt's own arguments
    assert "Redacted 2 stored excerpts and 0 regression cases again." in out.getvalue()
    old.refresh_from_db()
    purged.refresh_from_db()
    assert old.redacted_excerpt[0]["text"] == "Hi, cancel {{reservation_id}} for {{person_name}} please"
    assert old.redacted_excerpt[1]["args"] == {"reservation_id": "{{reservation_id}}", "family": "{{person_name}}"}
    assert purged.redacted_excerpt[1]["text"] == "{{reservation_id}} is cancelled."
    # and a second run changes nothing
    call_command("redact_stored", stdout=out)
    assert "Redacted 0 stored excerpts and 0 regression cases again." in out.getvalue()
