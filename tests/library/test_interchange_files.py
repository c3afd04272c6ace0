"""No procedure file stops `import_procedures` (issue 42 finding 5): deep nesting, a NUL, a lone
surrogate, an oversized file, a symbolic link, two files with one id — each is refused with its
path and reason, and the other files are compared and imported; `--check` too. A sync given part
of an agent's files asks no retirement of the procedures it was not given.

Run on PostgreSQL (DATABASE_URL: a NUL raised DataError there) and on SQLite (without it: a lone
surrogate raised UnicodeEncodeError)."""

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

from library.interchange import file_checks as interchange_files
from library.interchange.procedure_files import export_library, import_library, library_differences
from library.models import Procedure, ProcedureVersion, Status
from reviews.models import DemotionProposal
from tests.reviews.operations_helpers import activate

pytestmark = pytest.mark.django_db


def _fresh_file(key: str = "refund.fresh") -> dict:
    """A good file of a procedure the library does not have: imported as a CANDIDATE."""
    return {
        "format": "procmem.procedure/1",
        "id": key,
        "agent": "support_agent",
        "intent": "refund_over_limit",
        "versions": [
            {
                "version": 1,
                "status": "ACTIVE",
                "appliesWhen": "A refund is asked for an order that arrived broken.",
                "steps": ["Look up the order.", "Ask for a photo of the damage."],
                "requiredTools": [],
                "forbiddenActions": [],
                "evidence": {"sessions": 3},
                "approvedBy": "someone",
            }
        ],
    }


def _nested(depth: int, kind: str) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


def _deep_text(depth: int, kind: str) -> str:
    # written out, not through json.dumps (which recurses too)
    return ("[" * depth + "1" + "]" * depth) if kind == "list" else ('{"a":' * depth + "1" + "}" * depth)


# one hostile file: (name, how it is written, the reason the refusal must give)
def _hostile(draw_kind: str, depth: int, text: str, where: str) -> tuple[str, str]:
    document = _fresh_file(f"hostile.{draw_kind.replace('_', '-')}")
    version = document["versions"][0]
    if draw_kind == "deep_file":
        return _deep_text(depth, "list"), "deeper than 64 levels"
    if draw_kind == "deep_evidence":
        body = json.dumps(document).replace('{"sessions": 3}', _deep_text(depth, "dict"))
        return body, "deeper than 64 levels"
    if draw_kind == "nul":
        target = {"evidence": version["evidence"], "approvedBy": version}[where]
        key = "note" if where == "evidence" else "approvedBy"
        target[key] = text[:3] + "\x00" + text[3:]
        return json.dumps(document), "contains a NUL character"
    if draw_kind == "surrogate":
        version["appliesWhen"] = f"{text} {{SURROGATE}} when a refund is asked."
        return json.dumps(document).replace("{SURROGATE}", "\\ud800"), "contains a lone surrogate"
    raise AssertionError(draw_kind)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kinds=st.lists(
        st.sampled_from(["deep_file", "deep_evidence", "nul", "surrogate"]), min_size=1, max_size=4, unique=True
    ),
    depth=st.sampled_from([65, 1_000, 100_000]),
    text=st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12),
    where=st.sampled_from(["evidence", "approvedBy"]),
    as_files=st.booleans(),
)
def test_any_hostile_file_is_refused_with_its_path_and_the_others_go_on(candidate, kinds, depth, text, where, as_files):
    tmp = Path(tempfile.mkdtemp(prefix="procmem-hostile-"))
    try:
        export_library(tmp)
        agent_dir = tmp / "support_agent"
        (agent_dir / "refund.fresh.json").write_text(json.dumps(_fresh_file()))
        expected: dict[str, str] = {}
        for kind in kinds:
            body, reason = _hostile(kind, depth, text, where)
            path = agent_dir / f"{kind}.json"
            path.write_text(body, encoding="utf-8", errors="surrogatepass")
            expected[str(path)] = reason
        paths = [tmp] if not as_files else sorted(agent_dir.iterdir())

        comparison = library_differences(paths)
        assert {str(e.path): e.message for e in comparison.errors}.keys() == expected.keys()
        for error in comparison.errors:
            assert expected[str(error.path)] in error.message, error
        assert [(d.key, d.kind) for d in comparison.differences] == [("refund.fresh", "new procedure")]

        with transaction.atomic():
            report = import_library(paths)
            assert {str(e.path) for e in report.errors} == expected.keys()
            assert report.created == ["support_agent/refund.fresh v1"]
            assert "support_agent/refund.over_limit v1" in report.skipped
            assert not Procedure.objects.filter(key__startswith="hostile").exists()
            assert ProcedureVersion.objects.get(procedure__key="refund.fresh").status == Status.CANDIDATE
            transaction.set_rollback(True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_command_reports_each_bad_file_and_imports_the_rest(candidate, tmp_path):
    # given a directory with a good new file, a file nested 100,000 levels, a NUL and a surrogate
    agent_dir = tmp_path / "support_agent"
    agent_dir.mkdir()
    (agent_dir / "refund.fresh.json").write_text(json.dumps(_fresh_file()))
    (agent_dir / "deep.json").write_text(_deep_text(100_000, "list"))
    nul = _fresh_file("nul.one")
    nul["versions"][0]["evidence"] = {"note": "a\x00b"}
    (agent_dir / "nul.json").write_text(json.dumps(nul))
    (agent_dir / "surrogate.json").write_text(json.dumps(_fresh_file("sur.one")).replace("broken.", "\\udc80."))
    for check in (True, False):
        out, err = io.StringIO(), io.StringIO()
        # when
        with pytest.raises(CommandError):
            call_command("import_procedures", str(tmp_path), *(["--check"] if check else []), stdout=out, stderr=err)
        # then
        refused = err.getvalue()
        assert f"{agent_dir / 'deep.json'}: (file): is nested too deep to read (deeper than 64 levels)" in refused
        assert f"{agent_dir / 'nul.json'}: versions[0].evidence.note: contains a NUL character" in refused
        assert f"{agent_dir / 'surrogate.json'}: versions[0].appliesWhen: contains a lone surrogate" in refused
        assert (
            ("new procedure: only in" in out.getvalue())
            if check
            else ("candidate support_agent/refund.fresh v1" in out.getvalue())
        )
    assert not Procedure.objects.filter(key__in=["nul.one", "sur.one"]).exists()


def test_a_file_over_the_size_limit_is_refused_unread(candidate, tmp_path):
    agent_dir = tmp_path / "support_agent"
    agent_dir.mkdir()
    big = _fresh_file("big.one")
    big["versions"][0]["evidence"] = {"padding": "x" * interchange_files.MAX_FILE_BYTES}
    (agent_dir / "big.json").write_text(json.dumps(big))
    (agent_dir / "refund.fresh.json").write_text(json.dumps(_fresh_file()))
    report = import_library([tmp_path])
    [error] = report.errors
    assert error.path == agent_dir / "big.json" and "a procedure file may hold 5,242,880" in error.message
    assert report.created == ["support_agent/refund.fresh v1"]


def test_symbolic_links_are_refused_not_followed(candidate, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "linked.json").write_text(json.dumps(_fresh_file("linked.one")))
    agent_dir = tmp_path / "repo" / "support_agent"
    agent_dir.mkdir(parents=True)
    (agent_dir / "refund.fresh.json").write_text(json.dumps(_fresh_file()))
    (agent_dir / "linked.json").symlink_to(outside / "linked.json")
    (agent_dir / "more").symlink_to(outside, target_is_directory=True)
    report = import_library([tmp_path / "repo", agent_dir / "linked.json"])
    refusals = sorted((str(e.path), e.message) for e in report.errors)
    assert refusals == [
        (str(agent_dir / "linked.json"), "is a symbolic link; give the file or directory itself"),
        (str(agent_dir / "linked.json"), "is a symbolic link; not followed"),
        (str(agent_dir / "more"), "is a symbolic link to a directory; not followed"),
    ]
    assert report.created == ["support_agent/refund.fresh v1"]
    assert not Procedure.objects.filter(key="linked.one").exists()


def test_two_files_with_one_id_are_both_refused_naming_each_other(candidate, tmp_path):
    first, second = tmp_path / "a" / "support_agent" / "x.json", tmp_path / "b" / "support_agent" / "y.json"
    for path, step in ((first, "Look up the order."), (second, "Call the customer.")):
        path.parent.mkdir(parents=True)
        document = _fresh_file("refund.twice")
        document["versions"][0]["steps"] = [step]
        path.write_text(json.dumps(document))
    report = import_library([tmp_path / "a", tmp_path / "b"])
    assert sorted((str(e.path), e.field, e.message) for e in report.errors) == [
        (
            str(first),
            "id",
            f"'refund.twice' of agent 'support_agent' is also the id in {second}: one file per procedure",
        ),
        (
            str(second),
            "id",
            f"'refund.twice' of agent 'support_agent' is also the id in {first}: one file per procedure",
        ),
    ]
    assert report.created == [] and not Procedure.objects.filter(key="refund.twice").exists()


@pytest.fixture
def two_served(candidate, other_procedure, approver, admin_user):
    activate(candidate, approver)
    activate(other_procedure.versions.get(), admin_user)


def test_a_sync_of_some_files_asks_no_retirement_and_says_so(two_served, tmp_path):
    export_library(tmp_path)
    agent_dir = tmp_path / "support_agent"
    out = io.StringIO()
    call_command("import_procedures", str(agent_dir / "order.status.json"), "--sync", "--as-user", "admin", stdout=out)
    assert not DemotionProposal.objects.exists()
    assert "partial support_agent: only single files of this agent were given, not its directory" in out.getvalue()
    checked = io.StringIO()
    call_command("import_procedures", str(agent_dir / "order.status.json"), "--check", stdout=checked)
    assert "removed" not in checked.getvalue() and "partial support_agent" in checked.getvalue()

    # a refused file in the agent's directory: its procedure is not taken for removed
    (agent_dir / "refund.over_limit.json").write_text(_deep_text(1000, "dict"))
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 file refused"):
        call_command(
            "import_procedures", str(tmp_path), "--sync", "--as-user", "admin", stdout=out, stderr=io.StringIO()
        )
    assert not DemotionProposal.objects.exists()
    assert "partial support_agent: a file of this agent was refused" in out.getvalue()

    # the whole directory without that file: now the removal is real
    (agent_dir / "refund.over_limit.json").unlink()
    out = io.StringIO()
    call_command("import_procedures", str(tmp_path), "--sync", "--as-user", "admin", stdout=out)
    assert "retirement requested support_agent/refund.over_limit v1" in out.getvalue()
    assert DemotionProposal.objects.count() == 1 and "partial" not in out.getvalue()
