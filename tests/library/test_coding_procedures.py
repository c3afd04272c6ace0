"""Coding procedures: preconditions, postconditions and a verify command in the record, the hash,
the rule "no verify command, no coding procedure", the rendering and the review diff."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, InternalError, connection, transaction

from library import services
from library.models import Agent, Intent, ProcedureVersion, Source, content_hash
from procmem_client.rendering import render_procedure
from reviews.diff import compare_versions

pytestmark = pytest.mark.django_db

CODING = dict(
    applies_when="A bug report names a failing behaviour of the code.",
    steps=[
        "Search the code for the symbol named in the report.",
        "Write a script that reproduces the bug and run it.",
        "Edit the source file.",
        "Run the tests of the module.",
    ],
    required_tools=[],
    forbidden_actions=["Do not edit the source before the bug is reproduced."],
    preconditions=["A test or script that reproduces the issue fails."],
    postconditions=["The edited source file.", "The reproducing test passes."],
    verify_command="./tests/runtests.py {{test_label}}",
)


@pytest.fixture
def coder(db):
    agent = Agent.objects.create(name="coder", kind=Agent.Kind.CODING)
    return agent, Intent.objects.create(agent=agent, name="resolve_issue")


def propose(agent, intent, key="fix.reproduce_first", **overrides):
    return services.procedure_propose(
        agent=agent, intent=intent, key=key, source=Source.MANUAL, actor_label="test", **{**CODING, **overrides}
    )


def test_no_verify_command_no_coding_procedure(coder):
    agent, intent = coder
    with pytest.raises(ValidationError) as caught:
        propose(agent, intent, verify_command="  ")
    assert "verifyCommand" in caught.value.message_dict
    assert not ProcedureVersion.objects.filter(procedure__agent=agent).exists()


def test_the_coding_fields_are_content(coder):
    agent, intent = coder
    version = propose(agent, intent)
    assert version.verify_command == CODING["verify_command"] and version.preconditions == CODING["preconditions"]
    assert version.content_hash == version.compute_content_hash()
    assert version.content_hash != content_hash(
        **{k: CODING[k] for k in ("applies_when", "steps", "required_tools", "forbidden_actions")}
    )
    other = propose(agent, intent, key="fix.other", verify_command="python -m pytest")
    assert other.content_hash != version.content_hash


def test_a_procedure_without_them_keeps_its_hash_and_record():
    base = {k: CODING[k] for k in ("applies_when", "steps", "required_tools", "forbidden_actions")}
    assert content_hash(**base) == content_hash(**base, preconditions=[], postconditions=[], verify_command="")


def test_record_carries_the_optional_fields_only_when_set(coder, candidate):
    agent, intent = coder
    record = propose(agent, intent).to_dict()
    assert record["preconditions"] == CODING["preconditions"] and record["verifyCommand"] == CODING["verify_command"]
    assert not {"preconditions", "postconditions", "verifyCommand"} & set(candidate.to_dict())


def test_rendering_adds_before_after_and_verify_lines(coder):
    agent, intent = coder
    text = render_procedure(propose(agent, intent).to_dict())
    lines = text.splitlines()
    assert (
        lines[0]
        == "Procedure fix.reproduce_first v1 (source: written by reviewers; not approved: a candidate under evaluation)"
    )
    assert lines[1] == "Before: A test or script that reproduces the issue fails."
    assert lines[2].startswith("1. Search")
    assert lines[-2] == "After: The edited source file. The reproducing test passes."
    assert lines[-1] == "Verify: ./tests/runtests.py {{test_label}}"


def test_an_edit_keeps_or_changes_them_and_the_diff_compares_them(coder, reviewer):
    agent, intent = coder
    version = propose(agent, intent)
    kept = services.version_revise(
        version=version,
        user=reviewer,
        **{k: CODING[k] for k in ("applies_when", "required_tools", "forbidden_actions")},
        steps=CODING["steps"] + ["Submit."],
    )
    assert kept.verify_command == version.verify_command and kept.postconditions == version.postconditions
    with pytest.raises(ValidationError):
        services.version_revise(
            version=kept,
            user=reviewer,
            **{k: CODING[k] for k in ("applies_when", "steps", "required_tools", "forbidden_actions")},
            verify_command="",
        )
    changed = services.version_revise(
        version=kept,
        user=reviewer,
        **{k: CODING[k] for k in ("applies_when", "required_tools", "forbidden_actions")},
        steps=kept.steps,
        verify_command="python -m pytest {{test_file}}",
    )
    fields = {f.name: f for f in compare_versions(kept, changed)}
    assert fields["verifyCommand"].has_changed() and not fields["postconditions"].has_changed()
    assert not fields["steps"].has_changed()


def test_tool_agents_diff_shows_the_four_fields_only(candidate):
    assert [f.name for f in compare_versions(None, candidate)] == [
        "appliesWhen",
        "steps",
        "requiredTools",
        "forbiddenActions",
    ]


def test_the_database_refuses_changing_a_verify_command(coder):
    agent, intent = coder
    version = propose(agent, intent)
    with pytest.raises((IntegrityError, InternalError)):
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(
                    "UPDATE library_procedureversion SET verify_command = 'true' WHERE id = %s", [version.pk]
                )
    assert ProcedureVersion.objects.get(pk=version.pk).verify_command == CODING["verify_command"]


def test_erasure_wipes_the_coding_fields_and_the_database_refuses_an_erasure_that_keeps_them(coder):
    from django.utils import timezone

    from library.models import Status, VersionTombstone
    from tests.reviews.operations_helpers import agent_manager

    agent, intent = coder
    manager = agent_manager(agent)
    kept, erased = propose(agent, intent), propose(agent, intent, key="fix.other")
    # a raw wipe of every other content column that keeps the verify command is refused, tombstone or not
    VersionTombstone.objects.create(
        version=kept,
        procedure_key=kept.procedure.key,
        number=kept.number,
        content_hash=kept.content_hash,
        status_before=kept.status,
        ground=VersionTombstone.Ground.OTHER,
        reason="test",
        erased_by=manager,
        erased_at=timezone.now(),
    )
    with pytest.raises((IntegrityError, InternalError)):
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(
                    "UPDATE library_procedureversion SET status='ERASED', applies_when='', steps='[]', required_tools='[]', "
                    "forbidden_actions='[]', skeleton='[]', quarantine_reasons='[]', evidence='{}', provenance='{}', "
                    "preconditions='[]', postconditions='[]' WHERE id=%s",
                    [kept.pk],
                )
    assert ProcedureVersion.objects.get(pk=kept.pk).verify_command == CODING["verify_command"]
    # the service wipes them with the rest
    services.version_erase(
        version=erased, user=manager, ground=VersionTombstone.Ground.OTHER, reason="poisoned command"
    )
    erased.refresh_from_db()
    assert erased.status == Status.ERASED
    assert (erased.preconditions, erased.postconditions, erased.verify_command) == ([], [], "")
