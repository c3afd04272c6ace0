"""Mining coding agents' sessions: the phase skeleton, the coding contract, and what the 231 real
SWE-bench sessions give: one candidate per task family from resolved traces, with its verify command,
evidence and recovery notes (library/coding/procedures.py, families.py, library/mining/coding_runs.py)."""

import io

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse

from library.agents.settings import agent_settings_update
from library.coding.procedures import coding_skeleton
from library.mining.groups import Status
from library.mining.mining_runs import mining_run_execute
from library.mining.skeletons import SKELETONS, MiningParams, skeleton_function
from library.models import Agent, AgentSession, ProcedureVersion

from ..conftest import SWEBENCH_RESULTS, SWEBENCH_TRAJS


def test_coding_skeleton_keeps_each_phase_at_its_first_occurrence_and_is_idempotent():
    steps = [
        "environment",
        "search",
        "read:source",
        "search",
        "edit:script",
        "run:script",
        "edit:source",
        "run:script",
        "vcs",
        "test",
        "edit:test",
        "test",
        "submit",
    ]
    skeleton = coding_skeleton(steps)
    assert skeleton == ("search", "read", "reproduce", "edit", "test", "write-test", "submit")
    assert coding_skeleton(skeleton) == skeleton


def test_one_skeleton_function_per_agent_kind():
    assert set(SKELETONS) == {"tools", "coding"}
    assert skeleton_function(MiningParams(agent_kind="coding"))(["search", "search", "edit:source"], ()) == (
        "search",
        "edit",
    )
    assert skeleton_function(MiningParams())(["a", "a", "think", "b"], ("think",)) == ("a", "b")
    # the tool agents' terminal tools are taken and ignored by the coding skeleton
    assert skeleton_function(MiningParams(agent_kind="coding"))(["search", "edit:source"], (), ("search",)) == (
        "search",
        "edit",
    )


def _import_swebench():
    call_command(
        "import_sessions",
        str(SWEBENCH_TRAJS),
        "--format",
        "mini-swe-agent",
        "--outcomes",
        str(SWEBENCH_RESULTS),
        "--agent",
        "swe-gemini",
        "--create-agent",
        "--no-progress",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    return Agent.objects.get(name="swe-gemini")


@pytest.mark.django_db
@pytest.mark.timeout(900)  # imports the 231 sessions and mines them twice
def test_mining_the_231_real_sessions_proposes_one_candidate_per_task_family_with_its_verify_command(
    swebench_dir, client, admin_user
):
    # given: the 231 Gemini 3 Pro sessions on SWE-bench Verified's Django tasks, 179 resolved
    agent = _import_swebench()
    assert AgentSession.objects.filter(agent=agent).values("task_key").distinct().count() == 231
    # the submit call keeps the files the final patch changed (the family's area)
    calls = AgentSession.objects.get(agent=agent, session_id="django__django-10097").tool_calls
    assert calls[-1]["args"]["files"] == ["django/core/validators.py"]
    # when
    run = mining_run_execute(agent=agent)
    # then: no outcome gate and nothing held back; one candidate per family with 2 or more resolved
    # sessions that ran a passing test command
    versions = {v.procedure.key: v for v in ProcedureVersion.objects.filter(mining_run=run).select_related("procedure")}
    assert {
        "fix.django.db",
        "fix.django.core",
        "fix.django.forms",
        "fix.django.contrib.admin",
        "fix.django.utils",
    } <= set(versions)
    assert run.counts["candidates"] == len(versions) >= 8 and run.parameters["minTraces"] == 2
    for key, version in versions.items():
        evidence = version.evidence
        assert (
            version.status == "CANDIDATE"
            and version.verify_command
            and "runtests.py {{test_label}}" in version.verify_command
        )
        assert evidence["family"]["key"].startswith("django/django:django/") and evidence["contrast"]["gate"] is False
        assert evidence["verifyPassRate"]["count"] >= 2 and len(evidence["traces"]) >= 2
        assert version.postconditions[-1] == f"The verify command passes: {version.verify_command}"
        assert any(p.startswith("Changed: django/") for p in version.postconditions)
    db = versions["fix.django.db"].evidence
    assert db["verifyPassRate"]["of"] == db["contrast"]["resolved"] >= 80 and db["contrast"]["failed"] >= 20
    # a runner that failed and a corrected one that passed, in 3 sessions: a recovery note
    (note,) = [n for n in db["recoveryNotes"] if n["kind"] == "runner"]
    assert (
        note["traces"] == 3
        and note["failed"] == "python3 -m django.test {{test_file}}"
        and "No module named django.test" in note["text"]
    )
    assert any(f"Note: {note['text']}" in step for step in versions["fix.django.db"].steps)
    assert all(len(v.steps) <= 8 for v in versions.values())  # approvable: the notes are in the test step
    # the families that yielded nothing are in the report, each with why
    skipped = [e for e in run.report if e["status"] not in ("mined", "quarantined")]
    assert skipped and all(e["reason"] and e["family"] for e in skipped)
    assert {e["status"] for e in skipped} <= {
        Status.BELOW_THRESHOLD,
        Status.NO_RESOLVED,
        Status.NO_VERIFY_COMMAND,
        "no edited source file",
    }
    assert any(e["family"] == "django/django:django/views" and e["status"] == Status.NO_VERIFY_COMMAND for e in skipped)
    # the candidate page shows the family, the verify command, the contrast and the notes
    client.force_login(admin_user)
    page = client.get(reverse("reviews:version", args=[versions["fix.django.db"].pk])).content.decode()
    assert (
        'id="evidence-family"' in page and "django/django:django/db" in page and 'id="evidence-recovery-notes"' in page
    )
    assert "(shown, not a gate)" in page and "./tests/runtests.py {{test_label}}" in page
    run_page = client.get(reverse("reviews:mining_run", args=[run.pk])).content.decode()
    assert "family <code>django/django:django/views</code>" in run_page
    # mining again proposes nothing new: the same content is already a candidate
    again = mining_run_execute(agent=agent)
    assert again.counts["candidates"] == 0 and {e["status"] for e in again.report} >= {"duplicate"}


@pytest.mark.django_db
@pytest.mark.timeout(900)  # imports and mines the 231 sessions
def test_an_admin_rule_regroups_the_families_and_min_traces_is_per_agent(swebench_dir):
    agent = _import_swebench()
    agent = agent_settings_update(
        agent=agent,
        user=None,
        actor_label="test",
        changes={
            "coding_min_traces": 10,
            "coding_family_rules": [{"prefix": "django/db/migrations", "family": "django/db/migrations"}],
        },
    )
    run = mining_run_execute(agent=agent)
    keys = set(ProcedureVersion.objects.filter(mining_run=run).values_list("procedure__key", flat=True))
    assert "fix.django.db.migrations" in keys and "fix.django.conf" not in keys
    assert any(e["family"] == "django/django:django/conf" and e["status"] == Status.BELOW_THRESHOLD for e in run.report)
    with pytest.raises(ValidationError, match="needs a non-empty prefix"):
        agent_settings_update(
            agent=agent, user=None, actor_label="test", changes={"coding_family_rules": [{"prefix": ""}]}
        )


@pytest.mark.django_db
def test_a_purged_session_is_read_from_its_excerpt_in_the_sessions_order():
    # given: a coding agent's three sessions, the second past the retention window (only its excerpt keeps commands)
    from library.mining.coding_runs import _excerpts, _traces

    agent = Agent.objects.create(name="coder", kind=Agent.Kind.CODING, min_tool_calls=2)
    call = {"name": "bash", "args": {"command": "cat setup.py", "output": ""}, "ok": True}
    AgentSession.objects.create(agent=agent, session_id="a", task_key="r__r-1", tool_calls=[call, call])
    AgentSession.objects.create(
        agent=agent,
        session_id="b",
        task_key="r__r-2",
        raw_purged=True,
        tool_calls=[],
        redacted_excerpt=[
            {"role": "user", "content": "fix it"},
            {"role": "tool_call", "tool": "bash", "args": {"command": "ls"}, "ok": True},
            {"role": "tool_call", "tool": "bash", "args": {"command": "pytest"}, "ok": False},
        ],
    )
    AgentSession.objects.create(agent=agent, session_id="c", task_key="r__r-3", tool_calls=[call])
    # when
    traces, intents, too_short = _traces(agent)
    # then: the purged one in its place, its calls from the excerpt; the short one counted
    assert [t.session_id for t in traces] == ["a", "b"]
    assert traces[1].calls == [
        {"name": "bash", "args": {"command": "ls"}, "ok": True},
        {"name": "bash", "args": {"command": "pytest"}, "ok": False},
    ]
    assert intents == {"a": None, "b": None} and too_short == 1
    assert _excerpts(agent, {"b", "c"}) == {"b": AgentSession.objects.get(session_id="b").redacted_excerpt, "c": []}
