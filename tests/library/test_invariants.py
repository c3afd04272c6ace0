"""The database itself refuses what docs/design.md forbids, whatever code path tries it: each invariant
is attacked directly through the ORM and through raw SQL. Marked `postgres`: production and CI
run PostgreSQL; the SQLite demo has the same guards but for the DELETE ones."""

from __future__ import annotations

import threading

import pytest
from django.db import IntegrityError, InternalError, connection, connections, transaction
from django.utils import timezone

from library import services
from library.models import AuditEvent, EvalRun, ProcedureVersion, Source, Status
from tests.conftest import make_passing_eval

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

DB_ERRORS = (IntegrityError, InternalError)


def refused(callable_):
    with pytest.raises(DB_ERRORS):
        with transaction.atomic():
            callable_()


def raw(sql: str, params: list | None = None):
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])


@pytest.fixture
def active(candidate, approver):
    make_passing_eval(candidate)
    services.version_approve(version=candidate, user=approver)
    candidate.refresh_from_db()
    return candidate


@pytest.fixture
def second_candidate(active, agent, intent, proposer):
    return services.procedure_propose(
        agent=agent,
        intent=intent,
        key="refund.over_limit",
        source=Source.MANUAL,
        proposed_by=proposer,
        applies_when="Another wording.",
        steps=["a", "b", "c"],
        required_tools=[],
        forbidden_actions=[],
    )


# ------------------------------------------------------------------------------ one ACTIVE per procedure


def test_second_active_refused_orm(active, second_candidate, approver):
    run = make_passing_eval(second_candidate)
    refused(
        lambda: ProcedureVersion.objects.filter(pk=second_candidate.pk).update(
            status=Status.ACTIVE, approved_by=approver, approved_at=timezone.now(), approval_eval_run=run
        )
    )


def test_second_active_refused_raw_sql(active, second_candidate, approver):
    run = make_passing_eval(second_candidate)
    refused(
        lambda: raw(
            "UPDATE library_procedureversion SET status='ACTIVE', approved_by_id=%s, approved_at=now(), "
            "approval_eval_run_id=%s WHERE id=%s",
            [approver.pk, run.pk, second_candidate.pk],
        )
    )


# ------------------------------------------------------------------------------ ACTIVE needs approval + passing eval


def test_active_without_approver_refused(candidate):
    run = make_passing_eval(candidate)
    refused(
        lambda: raw(
            "UPDATE library_procedureversion SET status='ACTIVE', approved_at=now(), approval_eval_run_id=%s WHERE id=%s",
            [run.pk, candidate.pk],
        )
    )


def test_active_without_eval_refused(candidate, approver):
    refused(
        lambda: raw(
            "UPDATE library_procedureversion SET status='ACTIVE', approved_by_id=%s, approved_at=now() WHERE id=%s",
            [approver.pk, candidate.pk],
        )
    )


@pytest.mark.parametrize(
    "state, verdict, same_hash", [("done", "fail", True), ("running", "", True), ("done", "pass", False)]
)
def test_active_with_non_passing_or_other_content_eval_refused(candidate, approver, state, verdict, same_hash):
    run = EvalRun.objects.create(
        version=candidate, content_hash=candidate.content_hash if same_hash else "f" * 64, state=state, verdict=verdict
    )
    refused(
        lambda: ProcedureVersion.objects.filter(pk=candidate.pk).update(
            status=Status.ACTIVE, approved_by=approver, approved_at=timezone.now(), approval_eval_run=run
        )
    )


def test_insert_active_directly_refused(candidate, approver):
    run = make_passing_eval(candidate)
    refused(
        lambda: raw(
            "INSERT INTO library_procedureversion (procedure_id, number, status, applies_when, steps, required_tools, "
            "forbidden_actions, evidence, content_hash, source, provenance, quarantined, quarantine_reasons, skeleton, "
            "approved_by_id, approved_at, approval_eval_run_id, status_reason, created_at) VALUES "
            "(%s, 99, 'ACTIVE', 'x', '[]', '[]', '[]', '{}', %s, 'manual', '{}', false, '[]', '[]', %s, now(), %s, '', now())",
            [candidate.procedure_id, candidate.content_hash, approver.pk, run.pk],
        )
    )


def test_finished_eval_verdict_cannot_change(candidate):
    run = EvalRun.objects.create(version=candidate, content_hash=candidate.content_hash, state="done", verdict="fail")
    refused(lambda: EvalRun.objects.filter(pk=run.pk).update(verdict="pass"))
    refused(lambda: raw("DELETE FROM library_evalrun WHERE id=%s", [run.pk]))


# ------------------------------------------------------------------------------ transitions


@pytest.mark.parametrize("target", ["ACTIVE", "RETIRED"])
def test_rejected_cannot_come_back(candidate, reviewer, approver, target):
    run = make_passing_eval(candidate)
    services.version_reject(version=candidate, user=reviewer, reason="no")
    refused(
        lambda: ProcedureVersion.objects.filter(pk=candidate.pk).update(
            status=target, approved_by=approver, approved_at=timezone.now(), approval_eval_run=run
        )
    )


def test_active_cannot_go_back_to_candidate(active):
    refused(lambda: raw("UPDATE library_procedureversion SET status='CANDIDATE' WHERE id=%s", [active.pk]))


def test_approval_recorded_once(active, reviewer):
    refused(lambda: ProcedureVersion.objects.filter(pk=active.pk).update(approved_by=reviewer))


# ------------------------------------------------------------------------------ immutable content


@pytest.mark.parametrize(
    "column, value",
    [
        ("applies_when", "'changed'"),
        ("steps", "'[\"x\"]'::jsonb"),
        ("required_tools", "'[]'::jsonb"),
        ("forbidden_actions", "'[\"x\"]'::jsonb"),
        ("content_hash", "'abc'"),
        ("number", "42"),
        ("evidence", "'{\"support\": 1}'::jsonb"),
        ("preconditions", "'[\"x\"]'::jsonb"),
        ("postconditions", "'[\"x\"]'::jsonb"),
        ("verify_command", "'true'"),
    ],
)
def test_version_content_immutable_raw_sql(candidate, column, value):
    refused(lambda: raw(f"UPDATE library_procedureversion SET {column} = {value} WHERE id=%s", [candidate.pk]))
    candidate_after = ProcedureVersion.objects.get(pk=candidate.pk)
    assert candidate_after.content_hash == candidate.content_hash
    assert candidate_after.applies_when == candidate.applies_when


def test_the_guard_lists_every_content_column():
    # a column added to the record later must be added to the trigger too (library/migrations/_sqlite_triggers.py)
    from library.migrations._sqlite_triggers import IMMUTABLE_VERSION_COLUMNS

    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = 'procmem_version_guard'")
        source = cursor.fetchone()[0]
    content = {
        "applies_when",
        "steps",
        "required_tools",
        "forbidden_actions",
        "preconditions",
        "postconditions",
        "verify_command",
        "content_hash",
    }
    assert content <= set(IMMUTABLE_VERSION_COLUMNS)
    for column in IMMUTABLE_VERSION_COLUMNS:
        assert f"NEW.{column} IS DISTINCT FROM OLD.{column}" in source


def test_version_content_immutable_orm_save(candidate):
    candidate.steps = ["tampered"]
    refused(lambda: candidate.save())


def test_version_not_deletable(candidate):
    refused(lambda: raw("DELETE FROM library_procedureversion WHERE id=%s", [candidate.pk]))


def test_duplicate_version_number_refused(candidate):
    refused(
        lambda: raw(
            "INSERT INTO library_procedureversion (procedure_id, number, status, applies_when, steps, required_tools, "
            "forbidden_actions, evidence, content_hash, source, provenance, quarantined, quarantine_reasons, skeleton, "
            "status_reason, created_at) VALUES (%s, 1, 'CANDIDATE', 'x', '[]', '[]', '[]', '{}', 'h', 'manual', '{}', "
            "false, '[]', '[]', '', now())",
            [candidate.procedure_id],
        )
    )


# ------------------------------------------------------------------------------ append-only audit


def test_audit_update_refused(candidate):
    event = AuditEvent.objects.first()
    refused(lambda: AuditEvent.objects.filter(pk=event.pk).update(reason="rewritten"))
    refused(lambda: raw("UPDATE library_auditevent SET action='approve' WHERE id=%s", [event.pk]))


def test_audit_delete_refused(candidate):
    event = AuditEvent.objects.first()
    refused(lambda: event.delete())
    refused(lambda: raw("DELETE FROM library_auditevent"))
    assert AuditEvent.objects.filter(pk=event.pk).exists()


# ------------------------------------------------------------------------------ the approval race


@pytest.mark.django_db(transaction=True)
def test_two_approvers_race_one_wins(candidate, approver, reviewers_group):
    from django.contrib.auth import get_user_model
    from guardian.shortcuts import assign_perm

    second = get_user_model().objects.create_user("approver2", password="x")
    second.groups.add(reviewers_group)
    assign_perm("library.approve_procedure", second, candidate.procedure)
    make_passing_eval(candidate)
    barrier = threading.Barrier(2)
    outcomes: dict[str, object] = {}

    def attempt(user):
        try:
            barrier.wait(timeout=10)
            services.version_approve(version=ProcedureVersion.objects.get(pk=candidate.pk), user=user)
            outcomes[user.username] = "won"
        except Exception as exc:  # the loser's error is asserted below
            outcomes[user.username] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=attempt, args=(u,)) for u in (approver, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    winners = [name for name, result in outcomes.items() if result == "won"]
    losers = [result for result in outcomes.values() if result != "won"]
    assert len(winners) == 1, outcomes
    assert len(losers) == 1 and isinstance(losers[0], services.LifecycleError)
    assert "already approved by" in str(losers[0])
    version = ProcedureVersion.objects.get(pk=candidate.pk)
    assert version.status == Status.ACTIVE and version.approved_by.username == winners[0]
    assert AuditEvent.objects.filter(version=version, action=AuditEvent.Action.APPROVE).count() == 1
