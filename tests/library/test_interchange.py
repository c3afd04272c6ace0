"""Import/export of procedures as JSON files (a library under code review in git)."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from library import services
from library.interchange.procedure_files import ImportFileError, export_library, import_library
from library.models import Agent, ProcedureVersion, Status
from tests.conftest import make_passing_eval

pytestmark = pytest.mark.django_db


def test_export_layout_and_record_fields(candidate, approver, tmp_path):
    make_passing_eval(candidate)
    services.version_approve(version=candidate, user=approver)
    [path] = export_library(tmp_path)
    assert path == tmp_path / "support_agent" / "refund.over_limit.json"
    data = json.loads(path.read_text())
    assert data["id"] == "refund.over_limit" and data["intent"] == "refund_over_limit"
    record = data["versions"][0]
    assert set(record) == {
        "id",
        "version",
        "status",
        "appliesWhen",
        "steps",
        "requiredTools",
        "forbiddenActions",
        "evidence",
        "approvedBy",
        "approvedAt",
        "source",
        "basedOn",
        "proposedBy",
        "miningRun",
    }
    assert (record["proposedBy"], record["miningRun"], record["source"]) == ("proposer", None, "manual")
    assert {k: data[k] for k in ("namespace", "roles", "priority", "confidence", "releases")} == {
        "namespace": candidate.procedure.namespace.name,
        "roles": [],
        "priority": 0,
        "confidence": "medium",
        "releases": {},
    }
    assert record["status"] == "ACTIVE" and record["approvedBy"] == "approver"


def test_round_trip_into_a_fresh_library_arrives_as_candidates(candidate, approver, tmp_path, agent):
    make_passing_eval(candidate)
    services.version_approve(version=candidate, user=approver)
    export_library(tmp_path)
    exported = json.loads((tmp_path / "support_agent" / "refund.over_limit.json").read_text())
    # a second library with the same agent and intents
    other = Agent.objects.create(name="support_agent_copy", tools=agent.tools)
    other.intents.create(name="refund_over_limit")
    (tmp_path / "support_agent_copy").mkdir()
    exported["agent"] = "support_agent_copy"
    (tmp_path / "support_agent_copy" / "refund.over_limit.json").write_text(json.dumps(exported))
    report = import_library([tmp_path / "support_agent_copy"])
    assert report.created == ["support_agent_copy/refund.over_limit v1"]
    imported = ProcedureVersion.objects.get(procedure__agent=other)
    assert imported.status == Status.CANDIDATE  # never ACTIVE, whatever the file said
    assert imported.content_hash == candidate.content_hash
    assert imported.provenance["fileStatus"] == "ACTIVE" and imported.provenance["fileApprovedBy"] == "approver"
    assert imported.to_dict()["steps"] == candidate.steps


def test_reimport_of_same_content_changes_nothing(candidate, tmp_path):
    export_library(tmp_path)
    report = import_library([tmp_path])
    assert report.created == [] and report.skipped == ["support_agent/refund.over_limit v1"]
    assert ProcedureVersion.objects.count() == 1


def test_import_new_version_of_existing_procedure(candidate, tmp_path):
    export_library(tmp_path)
    path = tmp_path / "support_agent" / "refund.over_limit.json"
    data = json.loads(path.read_text())
    data["versions"][0]["steps"].append("Log the case with replyTemplates('closing').")
    path.write_text(json.dumps(data))
    report = import_library([tmp_path])
    assert report.created == ["support_agent/refund.over_limit v2"]


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d["versions"][0].update(steps="not a list"), "versions[0].steps"),
        (lambda d: d["versions"][0].pop("appliesWhen"), "versions[0].appliesWhen"),
        (lambda d: d["versions"][0].update(requiredTools=[1]), "versions[0].requiredTools"),
        (lambda d: d.update(id="Not A Key"), "id"),
        (lambda d: d.update(versions=[]), "versions"),
        (lambda d: d.update(intent="no_such_intent"), "intent"),
        (lambda d: d.update(agent="someone_else"), "agent"),
    ],
)
def test_malformed_file_is_reported_with_path_and_field_and_the_others_go_on(candidate, tmp_path, mutate, field):
    export_library(tmp_path)
    good = tmp_path / "support_agent" / "good.extra.json"
    good_data = json.loads((tmp_path / "support_agent" / "refund.over_limit.json").read_text())
    good_data["id"] = "good.extra"
    good_data["versions"][0]["appliesWhen"] = "A fresh procedure that would be created."
    good.write_text(json.dumps(good_data))
    bad = tmp_path / "support_agent" / "refund.over_limit.json"
    data = json.loads(bad.read_text())
    mutate(data)
    bad.write_text(json.dumps(data))
    before = ProcedureVersion.objects.count()
    report = import_library([tmp_path])
    [error] = report.errors
    assert isinstance(error, ImportFileError) and error.path == bad and error.field == field
    assert report.created == ["support_agent/good.extra v1"]  # the good file went on
    assert ProcedureVersion.objects.count() == before + 1


def test_invalid_json_named(agent, tmp_path):
    (tmp_path / "support_agent").mkdir()
    bad = tmp_path / "support_agent" / "x.y.json"
    bad.write_text("{not json")
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 file refused"):
        call_command("import_procedures", str(tmp_path), stderr=err)
    assert re.search(r"x\.y\.json: \(file\): is not valid JSON: line 1", err.getvalue())


def test_commands_round_trip(candidate, tmp_path, capsys):
    call_command("export_procedures", str(tmp_path))
    call_command("import_procedures", str(tmp_path))
    assert "already present were skipped" in capsys.readouterr().out


@pytest.mark.django_db
def test_nothing_to_export_says_so_and_writes_an_empty_valid_export(agent, tmp_path, capsys):
    target = tmp_path / "export"
    call_command("export_procedures", str(target), "--agent", agent.name)
    out = capsys.readouterr().out
    assert "Nothing to export" in out and agent.name in out
    assert target.is_dir() and not list(target.rglob("*"))
    call_command("import_procedures", str(target))  # valid: imports nothing
    assert not ProcedureVersion.objects.filter(procedure__agent=agent).exists()
