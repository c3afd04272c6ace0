"""Erasure reaches every copy (issue 29 part 2, issue 32 part 1): after erasing versions that have
comments, a thread, a mention, a later version edited from them and a mining run report, the
erased text (a marker) is nowhere — not over HTTP (the audit page, audit.csv, the procedure and
ops pages, search, notifications) and not in any stored text column of any table — and
`scan_erased` reports 0."""

from __future__ import annotations

import csv
import io

import pytest
from django.core import mail
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.urls import reverse

from library import services
from library.models import AuditEvent, ErasureSweep, MiningRun, ProcedureVersion, Source, Status
from reviews import services as review_services
from reviews.models import NotificationPreference
from reviews.notifications import ERASED_MESSAGE, notification_email_send
from tests.conftest import _missing
from tests.reviews.operations_helpers import activate

pytestmark = pytest.mark.django_db

MARKER = "zqmarker4471"
CONTENT_MARKER = "zqcontent5582"


def stored_text_holding(needle: str) -> list[tuple[str, str, int]]:
    """(table, column, rows) for every text, varchar and json column of every table that holds
    `needle` (case-insensitive): the database's own list of columns, not the app's."""
    if connection.vendor != "postgresql":
        _missing("the column scan reads PostgreSQL's information_schema: set DATABASE_URL=postgres://…")
    found = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND data_type IN ('text', 'character varying', 'json', 'jsonb', 'tsvector')"
        )
        for table, column in cursor.fetchall():
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}"::text ILIKE %s', [f"%{needle}%"])
            count = cursor.fetchone()[0]
            if count:
                found.append((table, column, count))
    return found


@pytest.fixture
def history(candidate, reviewer, approver, admin_user, django_capture_on_commit_callbacks):
    """v1 (a comment with the marker that mentions the approver, a thread anchored to a step), v2
    edited from v1 with a step that carries the content marker (a thread with the marker), and v3
    edited from v2 that still shares that step verbatim and is ACTIVE."""
    NotificationPreference.objects.create(user=approver, kind="mention", in_app=True, email=True)
    approver.email = "approver@example.com"
    approver.save(update_fields=["email"])
    with django_capture_on_commit_callbacks(execute=True):  # the mention's e-mail is queued after commit
        review_services.comment_create(
            version=candidate, user=reviewer, body=f"note {MARKER}: the customer's name is in step 2, @approver"
        )
    review_services.thread_create(version=candidate, user=reviewer, body=f"step {MARKER} again", anchor="step", step=1)
    step = f"Tell {CONTENT_MARKER} the approval number."
    v2 = services.version_revise(
        version=candidate,
        user=reviewer,
        applies_when=candidate.applies_when,
        steps=[*candidate.steps, step],
        required_tools=candidate.required_tools,
        forbidden_actions=candidate.forbidden_actions,
        reason=f"adds the step '{step}'",
    )
    review_services.thread_create(version=v2, user=reviewer, body=f"thread on v2 with {MARKER}")
    v3 = services.version_revise(
        version=v2,
        user=reviewer,
        applies_when=v2.applies_when,
        steps=[*v2.steps, "Close the ticket when approved."],
        required_tools=v2.required_tools,
        forbidden_actions=v2.forbidden_actions,
    )
    v3 = activate(v3, approver)
    return candidate, v2, v3


def test_erasure_leaves_the_markers_nowhere(client, history, admin_user, approver, agent):
    v1, v2, v3 = history
    # given: the markers are in the audit log, the notification and the e-mail
    assert AuditEvent.objects.filter(action=AuditEvent.Action.COMMENT, reason__contains=MARKER).count() == 3
    assert any(MARKER in m.body for m in mail.outbox)
    queued_message = next(m.body for m in mail.outbox if MARKER in m.body).split("\n\n")[0]
    assert stored_text_holding(MARKER) and stored_text_holding(CONTENT_MARKER)

    client.force_login(admin_user)
    for marker in (MARKER, CONTENT_MARKER):
        assert b"data-hit=" in client.get(reverse("reviews:search") + f"?q={marker}").content

    # when: an admin erases both versions on the erase page
    for version in (v1, v2):
        response = client.post(
            reverse("reviews:ops_erase", args=[version.pk]), {"ground": "personal_data", "reason": "request 32"}
        )
        assert response.status_code == 302
        assert "checked: 0 copies left" in client.get(response["Location"]).content.decode()
        page = client.get(reverse("reviews:ops_erase", args=[version.pk])).content.decode()  # the erase page reports it
        assert "0 copies found" in page and MARKER not in page

    # then: nothing stored holds either marker, in any column of any table
    assert stored_text_holding(MARKER) == []
    assert stored_text_holding(CONTENT_MARKER) == []
    call_command("scan_erased", stdout=io.StringIO())  # raises CommandError on any copy

    # ... the later version lost the shared step, kept its own, and is flagged for review
    v3.refresh_from_db()
    tombstone_ref = v2.tombstone.reference
    assert v3.steps[-2] == tombstone_ref and v3.steps[-1] == "Close the ticket when approved."
    assert v3.status == Status.ACTIVE and v3.compute_content_hash() != v3.content_hash
    assert AuditEvent.objects.filter(action=AuditEvent.Action.ERASE_COPY, version=v3).exists()
    assert ErasureSweep.objects.get(tombstone=v2.tombstone).flagged_versions == [v3.pk]
    # ... the Commented events keep who and when, with the reference instead of the body
    comments = AuditEvent.objects.filter(action=AuditEvent.Action.COMMENT)
    assert comments.count() == 3 and all(e.reason.startswith("[erased with tombstone ") for e in comments)

    # ... and no page shows them
    procedure = v1.procedure
    urls = [
        reverse("reviews:ops_audit") + f"?agent={agent.name}",
        reverse("reviews:ops_audit_csv") + f"?agent={agent.name}",
        reverse("reviews:ops_procedure", args=[agent.name, procedure.key]),
        reverse("reviews:procedure", args=[procedure.pk]),
        reverse("reviews:version", args=[v1.pk]),
        reverse("reviews:version", args=[v2.pk]),
        reverse("reviews:version", args=[v3.pk]),
        reverse("reviews:ops_agent", args=[agent.name]),
        reverse("reviews:search") + f"?q={MARKER}",
        reverse("reviews:search") + f"?q={CONTENT_MARKER}",
    ]
    for user in (admin_user, approver):
        client.force_login(user)
        for url in [*urls, reverse("reviews:notifications")]:
            response = client.get(url)
            body = b"".join(response.streaming_content) if response.streaming else response.content
            assert response.status_code == 200, url
            for marker in (MARKER, CONTENT_MARKER):  # the search page repeats the query typed; that is no copy
                body = body.replace(f'value="{marker}"'.encode(), b"").replace(f"<q>{marker}</q>".encode(), b"")
            assert MARKER.encode() not in body and CONTENT_MARKER.encode() not in body, url
    client.force_login(admin_user)
    rows = list(csv.reader(io.StringIO(b"".join(client.get(urls[1]).streaming_content).decode())))
    assert any(row[1] == "comment" and row[6].startswith("[erased with tombstone") for row in rows)

    # ... and an e-mail queued before the erasure goes out without the text
    mail.outbox.clear()
    notification_email_send(user_ids=[approver.pk], kind="mention", message=queued_message)
    assert mail.outbox and MARKER not in mail.outbox[0].body and ERASED_MESSAGE in mail.outbox[0].body


def test_the_mining_report_entry_loses_its_draft(agent, intent, admin_user):
    run = MiningRun.objects.create(agent=agent, state=MiningRun.State.DONE)
    version = services.procedure_propose(
        agent=agent,
        intent=intent,
        key="mined.one",
        applies_when=f"A customer {CONTENT_MARKER} asks twice.",
        steps=[f"Greet {CONTENT_MARKER} by name.", "Look up the order with lookupOrder({{order_id}})."],
        required_tools=["lookupOrder"],
        forbidden_actions=[],
        source=Source.MINED,
        mining_run=run,
    )
    run.report = [
        {
            "intent": intent.name,
            "status": "mined",
            "reason": "proposed as mined.one v1",
            "steps": version.steps,
            "forbiddenActions": [],
            "summary": "lookupOrder in 30 of 31 resolved sessions",
            "skeleton": ["lookupOrder"],
            "figures": {"support": 31},
            "version": {"id": "mined.one", "number": 1, "pk": version.pk},
        },
        {"intent": "other", "status": "below_threshold", "reason": "too few sessions", "figures": {"support": 2}},
    ]
    run.save(update_fields=["report"])
    services.version_erase(version=version, user=admin_user, ground="personal_data", reason="request 9")
    run.refresh_from_db()
    entry, other = run.report
    reference = version.tombstone.reference
    assert entry["steps"] == reference and entry["summary"] == reference and entry["skeleton"] == reference
    assert entry["figures"] == {"support": 31} and entry["status"] == "mined"
    assert other["reason"] == "too few sessions"
    assert CONTENT_MARKER not in str(run.report)


def test_the_audit_log_stays_append_only_outside_a_sweep(candidate):
    from django.db import IntegrityError, InternalError, transaction

    event = AuditEvent.objects.filter(version=candidate).first()
    for reason in ("changed", "[erased with tombstone 1]"):
        with pytest.raises((IntegrityError, InternalError)), transaction.atomic():
            AuditEvent.objects.filter(pk=event.pk).update(reason=reason)
    with pytest.raises((IntegrityError, InternalError)), transaction.atomic():
        ProcedureVersion.objects.filter(pk=candidate.pk).update(applies_when="[erased with tombstone 1]")


def test_scan_erased_finds_a_copy_written_after_the_erasure(candidate, admin_user, agent):
    text = candidate.steps[1]
    services.version_erase(version=candidate, user=admin_user, ground="personal_data", reason="request 10")
    call_command("scan_erased", stdout=io.StringIO())
    # someone pastes the erased step into an agent's description afterwards
    agent.description = f"Remember: {text}"
    agent.save(update_fields=["description"])
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 stored copy"):
        call_command("scan_erased", stdout=out)
    assert f"library.Agent {agent.pk} description" in out.getvalue()


def test_text_a_version_inherited_stays_with_the_version_that_keeps_it(candidate, reviewer, admin_user):
    """Erasing v2 removes what v2 added, not the steps it inherited from v1 (v1 stays: erase it too
    to remove them); the check then finds no copy, and v1 is untouched."""
    added = f"Tell {CONTENT_MARKER} the approval number."
    v2 = services.version_revise(
        version=candidate,
        user=reviewer,
        applies_when=candidate.applies_when,
        steps=[*candidate.steps, added],
        required_tools=candidate.required_tools,
        forbidden_actions=candidate.forbidden_actions,
        reason=f"adds '{added}'",
    )
    services.version_erase(version=v2, user=admin_user, ground="personal_data", reason="request 11")
    sweep = ErasureSweep.objects.get(tombstone=v2.tombstone)
    assert sweep.remaining == [] and sweep.flagged_versions == []
    candidate.refresh_from_db()
    assert (
        candidate.steps[0].startswith("Look up the order")
        and candidate.compute_content_hash() == candidate.content_hash
    )
    assert stored_text_holding(CONTENT_MARKER) == []
    call_command("scan_erased", stdout=io.StringIO())


def test_phrasing_the_erased_version_shares_with_staying_ones_is_no_copy(candidate, other_procedure, admin_user, agent):
    """A step of the erased version and a step of another procedure begin alike ("Reply to the
    customer with replyTemplates(…)") but differ: right after the erasure `scan_erased` finds no
    copy (as the erase page says), and a real copy of the erased step written later is still found."""
    # given: the candidate ends with a step that shares its first six words with order.status's last
    shared_start = "Reply to the customer with replyTemplates({{order_id}}, "
    steps = [*candidate.steps[:-1], shared_start + "'approval_pending')."]
    other_version = other_procedure.versions.get()
    v2 = services.version_revise(
        version=candidate,
        user=admin_user,
        applies_when=f"{candidate.applies_when} {CONTENT_MARKER}",
        steps=steps,
        required_tools=candidate.required_tools,
        forbidden_actions=candidate.forbidden_actions,
    )
    kept = services.version_revise(
        version=other_version,
        user=admin_user,
        applies_when=other_version.applies_when,
        steps=[*other_version.steps[:-1], shared_start + "'order_status')."],
        required_tools=other_version.required_tools,
        forbidden_actions=other_version.forbidden_actions,
    )
    # when
    services.version_erase(version=v2, user=admin_user, ground="personal_data", reason="request 12")
    # then: no copy, and the staying version kept its step
    out = io.StringIO()
    call_command("scan_erased", "--no-export", stdout=out)
    assert "0 copies of erased text found" in out.getvalue()
    assert ErasureSweep.objects.get(tombstone=v2.tombstone).remaining == []
    kept.refresh_from_db()
    assert kept.steps[-1] == shared_start + "'order_status')."
    # and: the erased step itself, pasted somewhere later, is found
    agent.description = f"Remember: {shared_start}'approval_pending')."
    agent.save(update_fields=["description"])
    with pytest.raises(CommandError, match="1 stored copy"):
        call_command("scan_erased", "--no-export", stdout=io.StringIO())


SESSION_MARKER = "zqsessionmarker"  # letters only: the redactor keeps it (a code would become {{id}})


def test_copies_made_from_the_sessions_a_version_was_mined_from_are_erased_and_scanned(
    client, agent, intent, reviewer, admin_user
):
    """Issue 42 finding 7: after erasing a mined version, the regression cases made from the
    sessions it was mined from still held the sessions' text (a marker), as did their case_change
    audit rows (the audit page, its CSV, the cases page), and `scan_erased --include-sessions`
    reported 0. Now the cases and their audit rows lose it, a case from another session keeps its
    own, and the scan finds the sessions that still hold it (retention purges those)."""
    from library.evals.cases import regression_case_from_session
    from library.models import AgentSession, RegressionCase

    # given: two sessions with the marker in the task and a third without, a version mined from
    # the two (one named in its session list, one by its excerpt), and a case made from each
    def session(n: int, task: str) -> AgentSession:
        return AgentSession.objects.create(
            agent=agent,
            session_id=f"s-{n}",
            intent=intent,
            task=task,
            resolved=True,
            skeleton=["lookupOrder"],
            tool_calls=[{"name": "lookupOrder", "args": {"order_id": f"100{n}"}, "result": {"total": 900}}],
        )

    mined_sessions = [
        session(n, f"Refund order {n} for {SESSION_MARKER} who lives at the old mill, above my limit please")
        for n in range(2)
    ]
    unrelated = session(2, "My parcel never came and I would like my money back for it today")
    version = services.procedure_propose(
        agent=agent,
        intent=intent,
        key="mined.refund",
        applies_when="A refund above the agent's limit is asked for.",
        steps=["Look up the order with lookupOrder({{order_id}}).", "Ask a supervisor to approve the refund."],
        required_tools=["lookupOrder"],
        forbidden_actions=[],
        source=Source.MINED,
        evidence={"sessionIds": ["s-0"], "excerpts": [{"sessionId": "s-1", "excerpt": []}]},
    )
    cases = [regression_case_from_session(session=s, user=reviewer) for s in [*mined_sessions, unrelated]]
    assert all(SESSION_MARKER in case.task for case in cases[:2])
    case_changes = AuditEvent.objects.filter(action=AuditEvent.Action.CASE_CHANGE)
    assert case_changes.filter(after__task__icontains=SESSION_MARKER).count() == 2
    client.force_login(admin_user)
    pages = [
        reverse("reviews:case_list", args=[agent.name]),
        *(reverse("reviews:case_edit", args=[case.pk]) for case in cases),
        reverse("reviews:ops_audit") + f"?agent={agent.name}",
        reverse("reviews:ops_audit_csv") + f"?agent={agent.name}",
    ]

    def shown() -> list[str]:
        found = []
        for url in pages:
            response = client.get(url)
            assert response.status_code == 200, url
            body = b"".join(response.streaming_content) if response.streaming else response.content
            if SESSION_MARKER.encode() in body:
                found.append(url)
        return found

    assert shown()  # the marker is on the pages before

    # when
    services.version_erase(version=version, user=admin_user, ground="personal_data", reason="request 42")

    # then: the two cases made from the mined sessions lost what they took from them, and rest
    reference = version.tombstone.reference
    for case in RegressionCase.objects.filter(pk__in=[c.pk for c in cases[:2]]):
        assert (case.task, case.name, case.context, case.tool_results, case.is_active) == (
            reference,
            reference,
            {},
            {},
            False,
        )
    kept = RegressionCase.objects.get(pk=cases[2].pk)
    assert (kept.task, kept.is_active, kept.tool_results) == (cases[2].task, True, {"lookupOrder": [{"total": 900}]})
    # ... and so did their audit rows (the other case's keeps its text)
    assert not case_changes.filter(after__task__icontains=SESSION_MARKER).exists()
    assert case_changes.filter(after__task=reference).count() == 2
    assert case_changes.filter(after__task=cases[2].task).count() == 1
    sweep = ErasureSweep.objects.get(tombstone=version.tombstone)
    assert sweep.rewritten["library.RegressionCase"] == sorted(c.pk for c in cases[:2])
    assert len(sweep.rewritten["library.AuditEvent"]) >= 2
    # ... no page shows the marker
    assert shown() == []
    # ... the scan finds no copy outside the sessions, and exactly the two mined sessions inside
    out = io.StringIO()
    call_command("scan_erased", "--no-export", stdout=out)
    assert "0 copies of erased text found" in out.getvalue()
    out = io.StringIO()
    with pytest.raises(CommandError, match="2 stored copies"):
        call_command("scan_erased", "--no-export", "--include-sessions", stdout=out)
    for mined in mined_sessions:
        assert f"library.AgentSession {mined.pk} task" in out.getvalue()
    # ... and a copy of a mined session's text written later is found
    agent.description = f"Note: {mined_sessions[0].task}"
    agent.save(update_fields=["description"])
    with pytest.raises(CommandError, match="1 stored copy"):
        call_command("scan_erased", "--no-export", stdout=io.StringIO())
