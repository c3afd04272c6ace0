"""Notifications: receivers of the library's signals write in-app rows and send e-mail according
to each user's choices; the preferences page; the unread count in the top bar."""

from __future__ import annotations

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import timezone
from guardian.shortcuts import assign_perm

from library import signals
from library.models import EvalRun
from reviews.models import Notification, NotificationKind, NotificationPreference
from tests.reviews.operations_helpers import make_user

pytestmark = pytest.mark.django_db


def _recipients(kind):
    return set(Notification.objects.filter(kind=kind).values_list("user__username", flat=True))


def test_new_candidates_go_to_reviewers_in_app_and_by_mail_for_those_who_chose_it(
    agent, candidate, reviewer, admin_user, outsider, django_capture_on_commit_callbacks
):
    NotificationPreference.objects.create(user=reviewer, kind=NotificationKind.NEW_CANDIDATES, in_app=True, email=True)
    NotificationPreference.objects.create(
        user=admin_user, kind=NotificationKind.NEW_CANDIDATES, in_app=False, email=False
    )
    # the library sends its signals after commit; the e-mail is queued after the rows commit
    with django_capture_on_commit_callbacks(execute=True):
        signals.candidates_created.send(sender=None, agent_id=agent.pk, version_ids=[candidate.pk], mining_run_id=7)
    # proposer is a reviewer too; the admin switched it off; the outsider is no reviewer
    assert _recipients(NotificationKind.NEW_CANDIDATES) == {"reviewer", "proposer"}
    note = Notification.objects.filter(user=reviewer).get()
    assert note.message == "1 new candidate for support_agent waits for review from mining run 7: refund.over_limit v1"
    assert note.url == reverse("reviews:queue")
    assert [m.to for m in mail.outbox] == [["reviewer@example.com"]]
    assert mail.outbox[0].subject == "[procmem] New candidates waiting for review"
    assert "refund.over_limit v1" in mail.outbox[0].body


def test_eval_finished_goes_to_its_starter_and_reviewers(agent, candidate, reviewer, outsider):
    run = EvalRun.objects.create(
        version=candidate,
        content_hash=candidate.content_hash,
        state=EvalRun.State.DONE,
        verdict=EvalRun.Verdict.FAIL,
        started_by=outsider,
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )
    signals.eval_run_finished.send(sender=EvalRun, run_id=run.pk)
    assert _recipients(NotificationKind.EVAL_FINISHED) == {"outsider", "reviewer", "proposer"}
    assert Notification.objects.filter(user=outsider).get().message.endswith("finished: fail.")


def test_refused_at_load_goes_to_the_agents_admins_only(agent, candidate, reviewer, admin_user, approver):
    manager = make_user("tools_admin")
    assign_perm("library.manage_agent", manager, agent)
    proc_manager = make_user("proc_admin")
    assign_perm("library.manage_procedure", proc_manager, candidate.procedure)
    signals.version_refused_at_load.send(sender=None, version_id=candidate.pk, missing_tools=["createApproval"])
    assert _recipients(NotificationKind.REFUSED_AT_LOAD) == {"admin", "tools_admin", "proc_admin"}
    assert "no longer has createApproval" in Notification.objects.filter(user=manager).get().message


def test_preferences_page_saves_choices_that_the_next_notification_follows(
    client, agent, candidate, reviewer, django_capture_on_commit_callbacks
):
    client.force_login(reviewer)
    page = client.get(reverse("reviews:notification_preferences"))
    assert [(kind, pref.in_app, pref.email) for kind, _label, pref in page.context["rows"]] == [
        (kind, True, kind == NotificationKind.REFUSED_AT_LOAD) for kind in NotificationKind.values
    ]  # only refusals at load are mailed by default
    client.post(
        reverse("reviews:notification_preferences"), {"new_candidates-email": "on", "eval_finished-in_app": "on"}
    )
    saved = {p.kind: (p.in_app, p.email) for p in NotificationPreference.objects.filter(user=reviewer)}
    assert saved == {
        "new_candidates": (False, True),
        "eval_finished": (True, False),
        "refused_at_load": (False, False),
        "metric_warning": (False, False),
        "mention": (False, False),
    }
    with django_capture_on_commit_callbacks(execute=True):
        signals.candidates_created.send(sender=None, agent_id=agent.pk, version_ids=[candidate.pk], mining_run_id=None)
    assert not Notification.objects.filter(user=reviewer).exists()
    assert [m.to for m in mail.outbox] == [["reviewer@example.com"]]


def test_unread_count_in_the_nav_and_marking_read(client, reviewer, agent, candidate):
    signals.candidates_created.send(sender=None, agent_id=agent.pk, version_ids=[candidate.pk], mining_run_id=None)
    signals.candidates_created.send(sender=None, agent_id=agent.pk, version_ids=[candidate.pk], mining_run_id=None)
    client.force_login(reviewer)
    page = client.get(reverse("reviews:notifications"))
    assert 'data-unread="2"' in page.content.decode()
    first = Notification.objects.filter(user=reviewer).first()
    response = client.post(reverse("reviews:notification_read", args=[first.pk]), {"follow": "1"})
    assert response["Location"] == reverse("reviews:queue")
    assert 'data-unread="1"' in client.get(reverse("reviews:notifications")).content.decode()
    client.post(reverse("reviews:notifications_read_all"))
    assert "data-unread" not in client.get(reverse("reviews:notifications")).content.decode()


def test_a_user_cannot_mark_someone_elses_notification(client, reviewer, proposer, agent, candidate):
    signals.candidates_created.send(sender=None, agent_id=agent.pk, version_ids=[candidate.pk], mining_run_id=None)
    theirs = Notification.objects.get(user=proposer)
    client.force_login(reviewer)
    assert client.post(reverse("reviews:notification_read", args=[theirs.pk])).status_code == 404
    theirs.refresh_from_db()
    assert theirs.read_at is None
