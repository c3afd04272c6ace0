"""The library in git (issue 29 part 1): the export carries every field (scope, releases, tombstones),
`import_procedures --check` reports differences and writes nothing, `--sync` turns them into what
the library allows, and export → import → export rebuilds a fresh library from the files alone that
holds what they hold (erased versions as nothing), whose own export is a fixed point (Hypothesis)."""

from __future__ import annotations

import io
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from library import services
from library.interchange.procedure_files import export_library, import_library, library_differences
from library.models import Agent, AuditEvent, Procedure, ProcedureVersion, Source, Status
from reviews.models import DemotionProposal
from tests.conftest import make_passing_eval
from tests.reviews.conftest import approved_in_staging  # noqa: F401 (a fixture the release test uses)
from tests.reviews.operations_helpers import activate

pytestmark = pytest.mark.django_db


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.json"))}


def test_an_erased_version_exports_as_its_tombstone_and_reimports_as_nothing(candidate, admin_user, tmp_path):
    services.version_revise(
        version=candidate,
        user=admin_user,
        applies_when=candidate.applies_when,
        steps=[*candidate.steps, "Say goodbye politely."],
        required_tools=candidate.required_tools,
        forbidden_actions=candidate.forbidden_actions,
    )
    tombstone = services.version_erase(version=candidate, user=admin_user, ground="personal_data", reason="request 1")
    [path] = export_library(tmp_path / "a")
    first, second = json.loads(path.read_text())["versions"]
    assert first == {
        "version": 1,
        "status": "ERASED",
        "tombstone": {
            "reference": tombstone.reference,
            "contentHash": candidate.content_hash,
            "statusBefore": "REJECTED",
            "ground": "personal_data",
            "reason": "request 1",
            "erasedBy": "admin",
            "erasedAt": tombstone.erased_at.isoformat().replace("+00:00", "Z"),
        },
    }
    assert second["basedOn"] == 1 and second["source"] == "revision"
    report = import_library([tmp_path / "a"])
    assert report.errors == [] and report.created == []
    assert "support_agent/refund.over_limit v1 (erased: its tombstone)" in report.skipped
    export_library(tmp_path / "b")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert ProcedureVersion.objects.count() == 2


def test_an_empty_library_exports_an_empty_valid_export(db, tmp_path):
    out = io.StringIO()
    call_command("export_procedures", str(tmp_path / "repo"), stdout=out)
    assert "Nothing to export" in out.getvalue() and (tmp_path / "repo").is_dir()
    call_command("import_procedures", str(tmp_path / "repo"), "--check", stdout=io.StringIO())  # agrees: exit 0


def test_check_reports_each_difference_and_writes_nothing(candidate, other_procedure, approver, admin_user, tmp_path):
    activate(candidate, approver)
    export_library(tmp_path)
    call_command("import_procedures", str(tmp_path), "--check", stdout=io.StringIO())  # the same: exit 0
    agent_dir = tmp_path / "support_agent"
    changed = json.loads((agent_dir / "refund.over_limit.json").read_text())
    changed["versions"].append(
        {
            **changed["versions"][-1],
            "version": 2,
            "status": "CANDIDATE",
            "steps": [*changed["versions"][-1]["steps"], "Close the ticket."],
        }
    )
    changed["priority"] = 3
    (agent_dir / "refund.over_limit.json").write_text(json.dumps(changed))
    new = json.loads((agent_dir / "order.status.json").read_text())
    new["id"] = "order.new"
    (agent_dir / "order.new.json").write_text(json.dumps(new))
    (agent_dir / "broken.json").write_text("{")
    counts = (
        ProcedureVersion.objects.count(),
        AuditEvent.objects.count(),
        Procedure.objects.get(key="refund.over_limit").priority,
    )

    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="3 differences between the files and the library, 1 bad file"):
        call_command("import_procedures", str(tmp_path), "--check", stdout=out, stderr=err)
    lines = out.getvalue()
    assert "support_agent/refund.over_limit: new version: v2 of" in lines
    assert "support_agent/refund.over_limit: scope: priority 0 in the library, 3 in the file" in lines
    assert "support_agent/order.new: new procedure" in lines
    assert "broken.json: (file): is not valid JSON" in err.getvalue()
    assert (
        ProcedureVersion.objects.count(),
        AuditEvent.objects.count(),
        Procedure.objects.get(key="refund.over_limit").priority,
    ) == counts

    # a removed file of a served procedure is a difference too
    (agent_dir / "refund.over_limit.json").unlink()
    (agent_dir / "order.new.json").unlink()
    (agent_dir / "broken.json").unlink()
    kinds = [(d.key, d.kind) for d in library_differences([tmp_path]).differences]
    assert kinds == [("refund.over_limit", "removed")]


def test_sync_makes_candidates_scope_changes_and_retirement_requests_never_active(
    candidate, other_procedure, approver, admin_user, tmp_path
):
    active = activate(candidate, approver)
    other_version = other_procedure.versions.get()
    activate(other_version, admin_user)
    export_library(tmp_path)
    agent_dir = tmp_path / "support_agent"
    changed = json.loads((agent_dir / "order.status.json").read_text())
    changed["versions"].append(
        {
            **changed["versions"][-1],
            "version": 2,
            "status": "ACTIVE",
            "approvedBy": "someone",
            "steps": [*changed["versions"][-1]["steps"], "Close the ticket."],
        }
    )
    changed["confidence"] = "high"
    (agent_dir / "order.status.json").write_text(json.dumps(changed))
    (agent_dir / "refund.over_limit.json").unlink()
    (agent_dir / "bad.json").write_text(
        json.dumps({"id": "bad.one", "intent": "order_status", "versions": [{"steps": []}]})
    )

    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="1 file refused"):
        call_command("import_procedures", str(tmp_path), "--sync", "--as-user", "admin", stdout=out, stderr=err)
    assert "bad.json: versions[0].appliesWhen" in err.getvalue()
    # the changed file's newest version is a CANDIDATE, whatever the file says
    new = ProcedureVersion.objects.get(procedure=other_procedure, number=2)
    assert new.status == Status.CANDIDATE and new.source == Source.IMPORTED and new.approved_by is None
    assert other_procedure.versions.get(number=1).status == Status.ACTIVE
    # the scope change went through the scope service, in the audit log
    other_procedure.refresh_from_db()
    assert other_procedure.confidence == "high"
    assert AuditEvent.objects.filter(action=AuditEvent.Action.SCOPE, procedure=other_procedure).exists()
    # the removed file is a retirement request; the version stays ACTIVE until an admin confirms
    proposal = DemotionProposal.objects.get(version=active)
    assert proposal.kind == "removed_file" and proposal.state == "open"
    active.refresh_from_db()
    assert active.status == Status.ACTIVE
    assert "retirement requested support_agent/refund.over_limit v1" in out.getvalue()
    # a second sync changes nothing more
    before = (ProcedureVersion.objects.count(), DemotionProposal.objects.count())
    (agent_dir / "bad.json").unlink()
    call_command("import_procedures", str(tmp_path), "--sync", "--as-user", "admin", stdout=io.StringIO())
    assert (ProcedureVersion.objects.count(), DemotionProposal.objects.count()) == before


def test_check_reports_where_the_library_is_ahead_of_the_files(
    candidate, other_procedure, approver, admin_user, tmp_path
):
    """The files are the record: an export made before the library changed differs from it. Erased
    content still in a file, a version only the library has, a status and a release that moved on
    are each a difference; --sync cannot change the files, so it lists them as not applied and
    writes nothing for them."""
    # given: an export, then v2 of order.status proposed, refund.over_limit v1 approved, and
    # order.status v1 erased (a personal-data request) in the library
    old = tmp_path / "old"
    export_library(old)
    order_v1 = other_procedure.versions.get()
    services.version_revise(
        version=order_v1,
        user=admin_user,
        applies_when=order_v1.applies_when,
        steps=[*order_v1.steps, "Close the ticket."],
        required_tools=order_v1.required_tools,
        forbidden_actions=order_v1.forbidden_actions,
    )
    activate(candidate, approver)
    tombstone = services.version_erase(version=order_v1, user=admin_user, ground="personal_data", reason="request 7")
    counts = (ProcedureVersion.objects.count(), AuditEvent.objects.count(), DemotionProposal.objects.count())

    # when
    out = io.StringIO()
    with pytest.raises(CommandError, match="3 differences"):
        call_command("import_procedures", str(old), "--check", stdout=out, stderr=io.StringIO())
    # then
    lines = out.getvalue()
    assert (
        f"support_agent/order.status: erased: v1 of {old}/support_agent/order.status.json holds the content of v1, "
        f"which the library erased ({tombstone.reference})"
    ) in lines
    assert (
        f"support_agent/order.status: library only: v2 (CANDIDATE) is not in {old}/support_agent/order.status.json"
        in lines
    )
    assert (
        "support_agent/refund.over_limit: status: v1 is ACTIVE in the library, CANDIDATE in the file (its v1)" in lines
    )
    sync = io.StringIO()
    call_command("import_procedures", str(old), "--sync", "--as-user", "admin", stdout=sync)
    assert sync.getvalue().count("  not applied ") == 3 and "export_procedures writes" in sync.getvalue()
    assert (ProcedureVersion.objects.count(), AuditEvent.objects.count(), DemotionProposal.objects.count()) == counts
    # and: a new export agrees again, without the erased content
    new = tmp_path / "new"
    export_library(new)
    assert library_differences([new]).differences == []
    assert "Read the carrier status." not in (new / "support_agent" / "order.status.json").read_text()


def test_check_reports_a_release_the_file_does_not_have(approved_in_staging, tmp_path):
    v1, v2 = approved_in_staging
    export_library(tmp_path)
    path = tmp_path / "support_agent" / "refund.over_limit.json"
    data = json.loads(path.read_text())
    assert data["releases"] == {"staging": v2.number}
    data["releases"] = {}
    path.write_text(json.dumps(data))
    [difference] = library_differences([tmp_path]).differences
    assert (difference.kind, difference.detail) == (
        "releases",
        f"staging serves v{v2.number} in the library, v- in the file",
    )
    data["releases"] = {"staging": "two"}
    path.write_text(json.dumps(data))
    [error] = library_differences([tmp_path]).errors
    assert (error.path, error.field, error.message) == (path, "releases.staging", "must be a positive version number")


# ---------------------------------------------------------------------------------------------- round trip

_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(
    lambda t: t.strip() == t and t.strip()
)
_version = st.fixed_dictionaries(
    {
        "applies_when": _text,
        "steps": st.lists(_text, min_size=1, max_size=3),
        "erase": st.booleans(),
        "forbidden_actions": st.lists(_text, max_size=2),
        "preconditions": st.lists(_text, max_size=2),
        "postconditions": st.lists(_text, max_size=2),
        "verify_command": st.one_of(st.just(""), _text),
    }
)
_procedure = st.fixed_dictionaries(
    {
        "versions": st.lists(_version, min_size=1, max_size=3),
        "roles": st.lists(st.sampled_from(["billing", "tier2", "admin"]), unique=True, max_size=2),
        "priority": st.integers(-5, 5),
        "confidence": st.sampled_from(["low", "medium", "high"]),
        "activate_first": st.booleans(),
    }
)


class _Rollback(Exception):
    pass


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(library=st.lists(_procedure, min_size=1, max_size=3))
def test_export_import_export_is_byte_identical(agent, intent, admin_user, library):
    tmp = Path(tempfile.mkdtemp(prefix="procmem-roundtrip-"))
    try:
        with transaction.atomic():
            for index, spec in enumerate(library):
                previous = None
                for number, version in enumerate(spec["versions"], start=1):
                    steps = [f"{step} ({index}.{number}.{i})" for i, step in enumerate(version["steps"])]
                    content = {
                        name: version[name]
                        for name in ("forbidden_actions", "preconditions", "postconditions", "verify_command")
                    }
                    if previous is None:
                        made = services.procedure_propose(
                            agent=agent,
                            intent=intent,
                            key=f"gen.p{index}",
                            applies_when=version["applies_when"],
                            steps=steps,
                            required_tools=[],
                            source=Source.MANUAL,
                            proposed_by=None,
                            **content,
                        )
                        procedure = made.procedure
                        procedure.roles, procedure.priority, procedure.confidence = (
                            spec["roles"],
                            spec["priority"],
                            spec["confidence"],
                        )
                        procedure.save(update_fields=["roles", "priority", "confidence"])
                        if spec["activate_first"]:
                            make_passing_eval(made)
                            services.version_approve(
                                version=made, user=admin_user, comment="gen", acknowledge_conflicts=True
                            )
                    else:
                        made = services.version_revise(
                            version=previous,
                            user=admin_user,
                            applies_when=version["applies_when"],
                            steps=steps,
                            required_tools=[],
                            **content,
                        )
                    previous = made
                for number, version in enumerate(spec["versions"], start=1):
                    if version["erase"]:
                        target = ProcedureVersion.objects.get(
                            procedure__key=f"gen.p{index}", procedure__agent=agent, number=number
                        )
                        services.version_erase(
                            version=target, user=admin_user, ground="other", reason=f"gen {index}.{number}"
                        )
            export_library(tmp / "a", agents=[agent])
            assert library_differences([tmp / "a"]).differences == []
            report = import_library([tmp / "a"])
            assert report.errors == [] and report.created == []  # into the same library: nothing new
            # a fresh library (an empty agent of the same name) rebuilt from the files alone
            fresh = _fresh_agent(agent)
            report = import_library([tmp / "a"], create_intents=True)
            assert report.errors == []
            export_library(tmp / "b", agents=[fresh])
            _assert_rebuilt_from(_files(tmp / "a"), _files(tmp / "b"))
            # and the rebuilt library's export is a fixed point: rebuilt once more, byte-identical
            again = _fresh_agent(fresh)
            assert import_library([tmp / "b"], create_intents=True).errors == []
            export_library(tmp / "c", agents=[again])
            assert _files(tmp / "b") == _files(tmp / "c")
            raise _Rollback
    except _Rollback:
        pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _fresh_agent(agent: Agent) -> Agent:
    """Moves `agent` (and its library) aside under another name and creates an empty agent with its
    name and tools, which the files then name."""
    Agent.objects.filter(pk=agent.pk).update(name=f"{agent.name}-{agent.pk}")
    return Agent.objects.create(name=agent.name, tools=agent.tools)


_CONTENT = ("appliesWhen", "steps", "requiredTools", "forbiddenActions", "evidence", "preconditions")
_CONTENT += ("postconditions", "verifyCommand")


def _assert_rebuilt_from(exported: dict[str, bytes], rebuilt: dict[str, bytes]) -> None:
    """The library rebuilt from `exported` holds each procedure with its scope and every version
    that has content, in order, as a CANDIDATE (import never approves); an erased version is its
    tombstone and is not rebuilt, so a procedure erased whole has no file."""
    expected_paths = set()
    for path, raw in exported.items():
        source = json.loads(raw)
        kept = [v for v in source["versions"] if v["status"] != Status.ERASED]
        if not kept:
            continue
        expected_paths.add(path)
        copy = json.loads(rebuilt[path])
        scope = ("id", "agent", "intent", "namespace", "priority", "confidence")
        assert {k: copy[k] for k in scope} == {k: source[k] for k in scope}
        assert copy["roles"] == sorted(source["roles"])  # a set, kept sorted (clean_roles)
        assert copy["releases"] == {}
        assert [v["version"] for v in copy["versions"]] == list(range(1, len(kept) + 1))
        for made, original in zip(copy["versions"], kept, strict=True):
            assert {k: made.get(k) for k in _CONTENT} == {k: original.get(k) for k in _CONTENT}
            assert (made["status"], made["source"], made["approvedBy"]) == (Status.CANDIDATE, "imported", None)
    assert set(rebuilt) == expected_paths


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "id",
                    "intent",
                    "agent",
                    "versions",
                    "namespace",
                    "roles",
                    "priority",
                    "confidence",
                    "status",
                    "version",
                    "tombstone",
                    "appliesWhen",
                    "steps",
                    "requiredTools",
                    "forbiddenActions",
                    "evidence",
                    "verifyCommand",
                ]
            ),
            children,
            max_size=6,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=_json)
def test_check_and_import_report_any_bad_file_and_go_on(candidate, document):
    """A file of any JSON shape is either read or reported with its path; the good file beside it
    is still compared and imported, and nothing of the bad one is stored."""
    tmp = Path(tempfile.mkdtemp(prefix="procmem-fuzz-"))
    try:
        export_library(tmp)
        (tmp / "support_agent" / "fuzz.json").write_text(json.dumps(document))
        comparison = library_differences([tmp])
        assert all(e.path.name == "fuzz.json" for e in comparison.errors)
        with transaction.atomic():
            report = import_library([tmp])
            assert all(e.path.name == "fuzz.json" for e in report.errors)
            assert "support_agent/refund.over_limit v1" in report.skipped
            transaction.set_rollback(True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
