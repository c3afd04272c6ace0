"""Erasure with a tombstone: the service wipes content, evidence, embeddings and eval replies, keeps
a tombstone, and the agent JSON drops the version at once; the database allows exactly this change
(once, to the wiped values, with the tombstone present) and still refuses every other change to
content, through the ORM and through raw SQL."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, InternalError, connection, transaction
from django.urls import reverse
from django.utils import timezone

from library import services
from library.api.tokens import token_create
from library.models import (
    AuditEvent,
    EvalCaseResult,
    EvalRun,
    ProcedureVersion,
    RegressionCase,
    Source,
    Status,
    VersionEmbedding,
    VersionTombstone,
)
from reviews.models import Comment
from reviews.services import comment_create
from tests.conftest import make_active, make_passing_eval
from tests.reviews.operations_helpers import agent_manager

pytestmark = pytest.mark.django_db

DB_ERRORS = (IntegrityError, InternalError)
GROUND = VersionTombstone.Ground.PERSONAL_DATA


def refused(callable_):
    with pytest.raises(DB_ERRORS):
        with transaction.atomic():
            callable_()


def raw(sql: str, params: list | None = None):
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])


@pytest.fixture
def active(candidate, approver):
    make_active(candidate, approver)
    candidate.refresh_from_db()
    return candidate


@pytest.fixture
def manager(agent):
    return agent_manager(agent)


def _tombstone_row(version, user):
    return VersionTombstone.objects.create(
        version=version,
        procedure_key=version.procedure.key,
        number=version.number,
        content_hash=version.content_hash,
        status_before=version.status,
        ground=GROUND,
        reason="test",
        erased_by=user,
        erased_at=timezone.now(),
    )


# ------------------------------------------------------------------------------ the service


def test_erase_wipes_content_and_keeps_a_tombstone(active, manager, reviewer):
    # given: evidence, a comment, a stored embedding and an eval reply that echo the content
    comment_create(version=active, user=reviewer, body="Customer Jane Roe, order #W123")
    VersionEmbedding.objects.create(version=active, model_key="m", dimensions=1, vector=b"\x00\x00\x80?")
    case = RegressionCase.objects.create(agent=active.procedure.agent, intent=active.procedure.intent, task="t")
    run = EvalRun.objects.filter(version=active).first()
    EvalCaseResult.objects.create(
        run=run, case=case, arm="candidate", reply="Jane Roe's refund", tool_calls=[{"name": "x"}]
    )
    content_hash = active.content_hash
    # when
    tombstone = services.version_erase(version=active, user=manager, ground=GROUND, reason="data-subject request 114")
    # then
    active.refresh_from_db()
    assert active.status == Status.ERASED
    assert (active.applies_when, active.steps, active.required_tools, active.forbidden_actions) == ("", [], [], [])
    assert (active.evidence, active.provenance, active.skeleton, active.quarantine_reasons) == ({}, {}, [], [])
    assert active.content_hash == content_hash and active.number == 1
    assert active.search_vector is None
    assert (tombstone.version_id, tombstone.number, tombstone.content_hash) == (active.pk, 1, content_hash)
    assert (tombstone.erased_by, tombstone.ground, tombstone.reason, tombstone.status_before) == (
        manager,
        GROUND,
        "data-subject request 114",
        "ACTIVE",
    )
    assert not VersionEmbedding.objects.filter(version=active).exists()
    assert list(EvalCaseResult.objects.filter(run=run).values_list("reply", "tool_calls")) == [("", [])]
    assert Comment.objects.get(version=active).body == "(erased with the version)"
    event = AuditEvent.objects.get(action=AuditEvent.Action.ERASE)
    assert (event.actor, event.version, event.before["status"], event.after["status"]) == (
        manager,
        active,
        "ACTIVE",
        "ERASED",
    )
    assert "Jane" not in str(event.before) + str(event.after)


def test_erase_is_refused_twice_and_without_ground_or_reason(active, manager):
    with pytest.raises(ValidationError):
        services.version_erase(version=active, user=manager, ground=GROUND, reason="  ")
    with pytest.raises(ValidationError):
        services.version_erase(version=active, user=manager, ground="because", reason="x")
    services.version_erase(version=active, user=manager, ground=GROUND, reason="x")
    with pytest.raises(services.LifecycleError, match="already erased"):
        services.version_erase(version=active, user=manager, ground=GROUND, reason="again")
    assert VersionTombstone.objects.count() == 1


def test_erase_needs_the_manage_right(active, approver, reviewer, outsider):
    for user in (approver, reviewer, outsider):
        with pytest.raises(PermissionDenied):
            services.version_erase(version=active, user=user, ground=GROUND, reason="x")
    active.refresh_from_db()
    assert active.status == Status.ACTIVE and not VersionTombstone.objects.exists()


def test_a_candidate_can_be_erased_and_its_unfinished_eval_is_cancelled(candidate, manager):
    run = EvalRun.objects.create(version=candidate, content_hash=candidate.content_hash, state=EvalRun.State.RUNNING)
    services.version_erase(version=candidate, user=manager, ground=VersionTombstone.Ground.POISONED, reason="injection")
    run.refresh_from_db()
    assert run.state == EvalRun.State.CANCELLED
    candidate.refresh_from_db()
    assert candidate.status == Status.ERASED


def test_erased_version_leaves_the_agent_json_and_the_etag_changes(
    client, agent, active, manager, readonly_shares_default
):
    token = token_create(agent=agent, scope="read", name="erase-test")[1]
    url = reverse("api:active_set", args=[agent.name])
    headers = {"Authorization": f"Bearer {token}"}
    before = client.get(url, headers=headers)
    assert [p["id"] for p in before.json()["procedures"]] == ["refund.over_limit"]
    services.version_erase(version=active, user=manager, ground=GROUND, reason="x")
    after = client.get(url, headers={**headers, "If-None-Match": before["ETag"]})
    assert after.status_code == 200
    assert after.json()["procedures"] == [] and after["ETag"] != before["ETag"]
    assert "refund" not in after.content.decode().lower().replace("refund.over_limit", "")


# ------------------------------------------------------------------------------ the database (PostgreSQL)


WIPE_SQL = (
    "UPDATE library_procedureversion SET status='ERASED', applies_when='', steps='[]', required_tools='[]', "
    "forbidden_actions='[]', skeleton='[]', quarantine_reasons='[]', evidence='{}', provenance='{}' WHERE id=%s"
)


@pytest.mark.postgres
def test_db_refuses_erasure_without_a_tombstone_raw_and_orm(active):
    refused(lambda: raw(WIPE_SQL, [active.pk]))
    refused(
        lambda: ProcedureVersion.objects.filter(pk=active.pk).update(
            status=Status.ERASED,
            applies_when="",
            steps=[],
            required_tools=[],
            forbidden_actions=[],
            skeleton=[],
            quarantine_reasons=[],
            evidence={},
            provenance={},
        )
    )


@pytest.mark.postgres
def test_db_allows_the_wipe_with_a_tombstone_but_not_a_partial_or_rewritten_one(active, manager):
    _tombstone_row(active, manager)
    # a partial wipe (steps kept) and a rewrite under the ERASED flag are refused
    refused(lambda: raw(WIPE_SQL.replace("steps='[]'", "steps='[\"keep\"]'"), [active.pk]))
    refused(lambda: raw(WIPE_SQL.replace("applies_when=''", "applies_when='new text'"), [active.pk]))
    # erasure may not touch the kept columns (hash, number, approval)
    refused(lambda: raw(WIPE_SQL.replace("status='ERASED',", "status='ERASED', content_hash='x',"), [active.pk]))
    refused(lambda: raw(WIPE_SQL.replace("status='ERASED',", "status='ERASED', number=7,"), [active.pk]))
    refused(lambda: raw(WIPE_SQL.replace("status='ERASED',", "status='ERASED', approved_by_id=NULL,"), [active.pk]))
    # the exact wipe passes
    with transaction.atomic():
        raw(WIPE_SQL, [active.pk])
    active.refresh_from_db()
    assert active.status == Status.ERASED and active.steps == []


@pytest.mark.postgres
def test_db_refuses_content_change_without_erasure_even_with_a_tombstone(active, manager):
    _tombstone_row(active, manager)
    refused(lambda: ProcedureVersion.objects.filter(pk=active.pk).update(steps=[]))
    refused(lambda: raw("UPDATE library_procedureversion SET applies_when='', steps='[]' WHERE id=%s", [active.pk]))
    # a wipe that leaves the status alone is a content change, refused
    refused(lambda: raw(WIPE_SQL.replace("status='ERASED', ", ""), [active.pk]))


@pytest.mark.postgres
def test_db_keeps_an_erased_version_frozen_and_its_tombstone(active, manager):
    tombstone = services.version_erase(version=active, user=manager, ground=GROUND, reason="x")
    for sql in (
        "UPDATE library_procedureversion SET status='ACTIVE' WHERE id=%s",
        "UPDATE library_procedureversion SET status='RETIRED' WHERE id=%s",
        "UPDATE library_procedureversion SET applies_when='back again' WHERE id=%s",
        "UPDATE library_procedureversion SET status_reason='quiet edit' WHERE id=%s",
        "DELETE FROM library_procedureversion WHERE id=%s",
    ):
        refused(lambda sql=sql: raw(sql, [active.pk]))
    refused(lambda: raw("UPDATE library_versiontombstone SET reason='other' WHERE id=%s", [tombstone.pk]))
    refused(lambda: raw("DELETE FROM library_versiontombstone WHERE id=%s", [tombstone.pk]))
    refused(lambda: VersionTombstone.objects.filter(pk=tombstone.pk).update(erased_by=None))


def test_sqlite_and_postgres_both_refuse_erasure_without_a_tombstone_through_the_orm(active):
    refused(
        lambda: ProcedureVersion.objects.filter(pk=active.pk).update(
            status=Status.ERASED,
            applies_when="",
            steps=[],
            required_tools=[],
            forbidden_actions=[],
            skeleton=[],
            quarantine_reasons=[],
            evidence={},
            provenance={},
        )
    )


def test_another_finished_runs_reply_that_quotes_the_erased_step_loses_it(active, manager, other_procedure, admin_user):
    # given: order.status's finished eval, whose agent quoted a step only the erased version has
    erased_step = active.steps[2]
    other = other_procedure.versions.get()
    run = make_passing_eval(other)
    assert run.state == EvalRun.State.DONE
    case = RegressionCase.objects.create(agent=other_procedure.agent, intent=other_procedure.intent, task="t2")
    result = EvalCaseResult.objects.create(
        run=run, case=case, arm="candidate", reply=f"I will now: {erased_step}", tool_calls=[{"name": "createApproval"}]
    )
    # when
    tombstone = services.version_erase(version=active, user=manager, ground=GROUND, reason="data-subject request 115")
    # then: the reply is the reference; the run, its verdict and the tool calls stay
    result.refresh_from_db()
    assert result.reply == tombstone.reference and result.tool_calls == [{"name": "createApproval"}]
    assert EvalRun.objects.get(pk=run.pk).verdict == run.verdict


def test_names_that_spell_an_erased_text_stay(agent, intent, proposer, manager):
    # given: a version whose preconditions spell the agent's, the intent's and its procedure's names
    # (found by the export round-trip's Hypothesis test: erasing it renamed the agent)
    version = services.procedure_propose(
        agent=agent,
        intent=intent,
        key="refund.over_limit",
        applies_when="The customer asks for a refund above the agent's limit.",
        steps=["Look up the order with lookupOrder({{order_id}})."],
        required_tools=["lookupOrder"],
        forbidden_actions=[],
        preconditions=[agent.name, intent.name, "refund.over_limit"],
        source=Source.MANUAL,
        proposed_by=None,
    )
    names = (agent.name, intent.name, version.procedure.key)
    # when
    services.version_erase(version=version, user=manager, ground=GROUND, reason="data-subject request 116")
    # then: the rows keep their names; the version's own text is gone
    agent.refresh_from_db()
    intent.refresh_from_db()
    version.refresh_from_db()
    assert (agent.name, intent.name, version.procedure.key) == names
    assert version.preconditions == []


def test_a_copy_is_several_windows_of_one_erased_text_not_one_shared_phrase():
    from library.services.erasure_sweep import FingerprintMatcher, fingerprints

    erased = "Reply to the customer with replyTemplates({{order_id}}, 'approval_pending') and name Jane Roe of Leeds."
    matcher = FingerprintMatcher(fingerprints([erased, "Call 07700 900123."]))
    # a step that only begins the same way (two shared windows) is phrasing, not a copy
    assert not matcher.matches("Reply to the customer with replyTemplates({{order_id}}, 'order_status').")
    # the whole text, a copy cut short, and a short erased text in full are copies
    assert matcher.matches(f"note: {erased}")
    assert matcher.matches(erased[:90])  # an audit reason keeps 200 characters, a notification 157
    assert matcher.matches("They said: call 07700 900123 today")
    # a window the staying texts share is left out of the fingerprints
    assert (
        len(fingerprints([erased], shared=["Reply to the customer with replyTemplates now"]))
        == len(fingerprints([erased])) - 1
    )
    # fingerprints of the first format (no text number) still match one window each
    [old] = [p.rsplit(":", 1)[0] for p in fingerprints(["Call 07700 900123."])]
    assert FingerprintMatcher([old]).matches("call 07700 900123")
