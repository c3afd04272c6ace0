"""Threads on versions: anchored to the whole version, a field or a step; replies; @mentions that
notify; resolve and reopen with audit rows; the unresolved count on the decision panel and in the
approval confirmation (approval stays possible); and the wrong people refused."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from library.models import AuditEvent, Status
from library.services import LifecycleError
from reviews.models import Comment, Notification, NotificationKind, Thread
from reviews.notifications import mentioned_usernames
from reviews.services import thread_create, thread_reply, thread_set_resolved
from tests.conftest import make_passing_eval
from tests.reviews.conftest import HTMX, client_for

pytestmark = pytest.mark.django_db


def _version_url(version) -> str:
    return reverse("reviews:version", kwargs={"pk": version.pk})


def test_mentions_are_parsed_from_the_body():
    assert mentioned_usernames("@approver can you check step 3? cc @reviewer. mail me@example.com") == [
        "approver",
        "reviewer",
    ]
    assert mentioned_usernames("no mention here") == []


def test_a_thread_on_a_step_with_a_mention_notifies_the_mentioned_reviewer(
    candidate, reviewer, approver, outsider, proposer
):
    thread = thread_create(
        version=candidate,
        user=reviewer,
        anchor="step",
        step=3,
        body="@approver should createApproval come before the return-window check? @outsider @nobody @reviewer",
    )
    assert (thread.anchor, thread.step, thread.anchor_label) == ("step", 3, "step 3")
    [note] = Notification.objects.filter(kind=NotificationKind.MENTION)
    assert note.user == approver  # not the author, not a non-reviewer, not an unknown name
    assert "reviewer mentioned you on refund.over_limit v1 (step 3)" in note.message
    assert note.url == _version_url(candidate) + f"#thread-{thread.pk}"
    audit = AuditEvent.objects.filter(action=AuditEvent.Action.COMMENT, version=candidate).get()
    assert audit.after["anchor"] == "step 3"


def test_anchors_are_checked(candidate, reviewer):
    with pytest.raises(ValidationError, match="steps 1 to 4; step 9"):
        thread_create(version=candidate, user=reviewer, body="?", anchor="step", step=9)
    with pytest.raises(ValidationError, match="Unknown anchor"):
        thread_create(version=candidate, user=reviewer, body="?", anchor="evidence")
    field = thread_create(version=candidate, user=reviewer, body="too broad?", anchor="appliesWhen")
    assert field.step is None and field.anchor_label == "applies when"
    assert not Thread.objects.filter(anchor="step").exists()


def test_resolve_reopen_and_a_reply_that_reopens(candidate, reviewer, proposer):
    thread = thread_create(version=candidate, user=reviewer, body="Why step 2?", anchor="step", step=2)
    resolved = thread_set_resolved(thread=thread, user=proposer, resolved=True)
    assert resolved.resolved_by == proposer and resolved.resolved_at is not None
    with pytest.raises(LifecycleError, match="already resolved"):
        thread_set_resolved(thread=thread, user=proposer, resolved=True)
    thread_reply(thread=thread, user=reviewer, body="Still unsure, @proposer")
    thread.refresh_from_db()
    assert thread.resolved_at is None and thread.comments.count() == 2
    assert Notification.objects.filter(kind=NotificationKind.MENTION, user=proposer).exists()
    actions = list(AuditEvent.objects.filter(version=candidate).order_by("id").values_list("action", flat=True))
    assert actions[-4:] == ["comment", "thread_resolve", "thread_reopen", "comment"]


def test_the_page_shows_threads_and_the_decision_panel_counts_the_unresolved(
    candidate, reviewer, approver, reviewer_client
):
    make_passing_eval(candidate)
    open_thread = thread_create(
        version=candidate, user=reviewer, body="Check <script>x</script> step 4", anchor="step", step=4
    )
    done = thread_create(version=candidate, user=reviewer, body="Typo in appliesWhen", anchor="appliesWhen")
    thread_set_resolved(thread=done, user=reviewer, resolved=True)
    html = client_for(approver).get(_version_url(candidate)).content.decode()
    assert "1 unresolved thread</a>" in html and "Approval stays possible" in html
    assert f'id="thread-{open_thread.pk}"' in html and "step 4</strong>: <q>Tell the customer" in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html and "<script>x</script>" not in html
    assert 'id="approve-button"' in html and "disabled" not in html.split('id="approve-button"')[1][:80]
    confirm = client_for(approver).get(reverse("reviews:version_approve", kwargs={"pk": candidate.pk})).content.decode()
    assert "1 thread is still unresolved on this procedure" in confirm
    # approval stays possible with an open thread
    response = client_for(approver).post(
        reverse("reviews:version_approve", kwargs={"pk": candidate.pk}), {"confirm": "on"}
    )
    assert response.status_code == 302
    candidate.refresh_from_db()
    assert candidate.status == Status.ACTIVE


def test_thread_views(candidate, reviewer, reviewer_client, approver):
    response = reviewer_client.post(
        reverse("reviews:version_thread_create", kwargs={"pk": candidate.pk}),
        {"anchor": "step:2", "body": "@approver look"},
        **HTMX,
    )
    assert response.status_code == 200 and b"<html" not in response.content and b"step 2" in response.content
    thread = Thread.objects.get()
    assert thread.step == 2
    assert Notification.objects.filter(user=approver, kind=NotificationKind.MENTION).count() == 1
    assert (
        reviewer_client.post(reverse("reviews:thread_reply", kwargs={"pk": thread.pk}), {"body": "more"}).status_code
        == 302
    )
    assert reviewer_client.post(reverse("reviews:thread_resolve", kwargs={"pk": thread.pk})).status_code == 302
    assert reviewer_client.post(reverse("reviews:thread_resolve", kwargs={"pk": thread.pk})).status_code == 409
    assert reviewer_client.post(reverse("reviews:thread_reopen", kwargs={"pk": thread.pk})).status_code == 302
    assert (
        reviewer_client.post(
            reverse("reviews:version_thread_create", kwargs={"pk": candidate.pk}), {"anchor": "step:99", "body": "x"}
        ).status_code
        == 400
    )
    assert (
        reviewer_client.post(
            reverse("reviews:version_thread_create", kwargs={"pk": candidate.pk}), {"anchor": "step:x", "body": "x"}
        ).status_code
        == 400
    )
    assert Comment.objects.count() == 2


THREAD_ACTIONS = ["thread_reply", "thread_resolve", "thread_reopen"]


def test_thread_views_refuse_the_wrong_people(client, candidate, reviewer, outsider):
    thread = thread_create(version=candidate, user=reviewer, body="first")
    before = (Thread.objects.count(), Comment.objects.count(), AuditEvent.objects.count())
    create = reverse("reviews:version_thread_create", kwargs={"pk": candidate.pk})
    # anonymous: to sign-in (htmx: HX-Redirect)
    assert client.post(create, {"body": "x"})["Location"].startswith("/accounts/login/")
    assert client.post(reverse("reviews:thread_reply", kwargs={"pk": thread.pk}), {"body": "x"}, **HTMX)[
        "HX-Redirect"
    ].startswith("/accounts/login/")
    # signed in without the reviewer role: 403
    outsider_client = client_for(outsider)
    assert outsider_client.post(create, {"body": "x"}).status_code == 403
    for name in THREAD_ACTIONS:
        assert (
            outsider_client.post(reverse(f"reviews:{name}", kwargs={"pk": thread.pk}), {"body": "x"}).status_code == 403
        )
    # hidden: 404
    reviewer_client = client_for(reviewer)
    assert (
        reviewer_client.post(
            reverse("reviews:version_thread_create", kwargs={"pk": 999_999}), {"body": "x"}
        ).status_code
        == 404
    )
    for name in THREAD_ACTIONS:
        assert (
            reviewer_client.post(reverse(f"reviews:{name}", kwargs={"pk": 999_999}), {"body": "x"}).status_code == 404
        )
    assert (Thread.objects.count(), Comment.objects.count(), AuditEvent.objects.count()) == before
