"""Outgoing webhooks: validation, signing, dispatch from the library's events, delivery with
retries and backoff, and who may manage them (admins of the agent only)."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import override_settings
from django.urls import reverse
from guardian.shortcuts import assign_perm

from library import services
from library.models import AuditEvent
from reviews.models import Webhook, WebhookDelivery, WebhookEvent
from reviews.webhooks import (
    backoff_seconds,
    signature_for,
    signature_valid,
    webhook_create,
    webhook_delete,
    webhook_rotate_secret,
    webhook_send_test,
    webhooks_dispatch,
)
from tests.conftest import make_passing_eval
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.django_db


# ---------------------------------------------------------------------------------------------- signing


def test_signature_is_hmac_sha256_over_timestamp_and_body():
    import hashlib
    import hmac

    body = b'{"event":"webhook.test"}'
    expected = hmac.new(b"s3cret", b"1700000000." + body, hashlib.sha256).hexdigest()
    assert signature_for(secret="s3cret", timestamp=1700000000, body=body) == "sha256=" + expected


def test_receiver_check_refuses_tampering_wrong_secret_and_replays():
    body = b'{"a":1}'
    now = 1_700_000_000
    good = signature_for(secret="s", timestamp=now, body=body)
    assert signature_valid(secret="s", timestamp_header=str(now), signature_header=good, body=body, now=now + 10)
    assert not signature_valid(secret="s", timestamp_header=str(now), signature_header=good, body=b'{"a":2}', now=now)
    assert not signature_valid(secret="other", timestamp_header=str(now), signature_header=good, body=body, now=now)
    # the same signed request replayed ten minutes later
    assert not signature_valid(secret="s", timestamp_header=str(now), signature_header=good, body=body, now=now + 600)
    assert not signature_valid(secret="s", timestamp_header="yesterday", signature_header=good, body=body, now=now)


def test_backoff_doubles():
    with override_settings(PROCMEM_WEBHOOK_BACKOFF_SECONDS=30):
        assert [backoff_seconds(n) for n in (1, 2, 3, 4)] == [30, 60, 120, 240]


# ---------------------------------------------------------------------------------------------- managing


@pytest.mark.parametrize(
    "url", ["ftp://example.com/x", "javascript:alert(1)", "file:///etc/passwd", "example.com/hook", ""]
)
def test_only_http_urls(agent, agent_admin, url):
    with pytest.raises(ValidationError) as exc:
        webhook_create(agent=agent, user=agent_admin, name="x", url=url, events=["version.approved"])
    assert "url" in exc.value.message_dict
    assert not Webhook.objects.exists()


def test_unknown_or_no_events_refused(agent, agent_admin):
    with pytest.raises(ValidationError) as exc:
        webhook_create(
            agent=agent, user=agent_admin, name="x", url="https://h.example.com/", events=["version.deleted"]
        )
    assert "version.deleted" in exc.value.message_dict["events"][0]
    with pytest.raises(ValidationError):
        webhook_create(agent=agent, user=agent_admin, name="x", url="https://h.example.com/", events=[])
    with pytest.raises(ValidationError):  # the test event is sent by the button, not subscribed to
        webhook_create(agent=agent, user=agent_admin, name="x", url="https://h.example.com/", events=["webhook.test"])


def test_create_rotate_delete_are_audited_without_the_secret(agent, agent_admin):
    webhook, secret = webhook_create(
        agent=agent,
        user=agent_admin,
        name="chat",
        url="https://h.example.com/",
        events=["version.approved", "eval.finished"],
    )
    assert secret.startswith("whsec_") and webhook.secret == secret
    assert webhook.events == ["eval.finished", "version.approved"]  # the canonical order
    _, new_secret = webhook_rotate_secret(webhook=webhook, user=agent_admin)
    assert new_secret != secret
    webhook_delete(webhook=webhook, user=agent_admin)
    rows = list(AuditEvent.objects.filter(action=AuditEvent.Action.SETTINGS, agent=agent).order_by("id"))
    assert [r.reason for r in rows] == [
        "Webhook 'chat' created",
        "Webhook 'chat': secret rotated",
        "Webhook 'chat' deleted",
    ]
    assert all(
        secret not in json.dumps([r.before, r.after]) and new_secret not in json.dumps([r.before, r.after])
        for r in rows
    )


def test_services_refuse_non_admins(agent, reviewer, agent_admin):
    with pytest.raises(PermissionDenied):
        webhook_create(agent=agent, user=reviewer, name="x", url="https://h.example.com/", events=["version.approved"])
    webhook, _ = webhook_create(
        agent=agent, user=agent_admin, name="x", url="https://h.example.com/", events=["version.approved"]
    )
    for call in (
        lambda: webhook_rotate_secret(webhook=webhook, user=reviewer),
        lambda: webhook_send_test(webhook=webhook, user=reviewer),
        lambda: webhook_delete(webhook=webhook, user=reviewer),
    ):
        with pytest.raises(PermissionDenied):
            call()


# ---------------------------------------------------------------------------------------------- delivering


def test_approval_is_delivered_signed_to_a_local_receiver(
    agent, agent_admin, candidate, approver, django_capture_on_commit_callbacks
):
    with Receiver() as receiver:
        webhook, secret = webhook_create(
            agent=agent, user=agent_admin, name="ci", url=receiver.url, events=["version.approved"]
        )
        make_passing_eval(candidate)
        # the approval's on-commit signal writes the delivery; its on-commit queues the (eager) task
        with django_capture_on_commit_callbacks(execute=True):
            services.version_approve(version=candidate, user=approver, comment="looks right")
        assert len(receiver.received) == 1
        got = receiver.received[0]
    assert signature_valid(
        secret=secret,
        timestamp_header=got.headers["x-procmem-timestamp"],
        signature_header=got.headers["x-procmem-signature"],
        body=got.body,
    )
    body = json.loads(got.body)
    assert body["event"] == "version.approved" == got.headers["x-procmem-event"]
    assert body["data"]["procedure"] == "refund.over_limit" and body["data"]["by"] == "approver"
    assert body["id"] == got.headers["x-procmem-delivery"]
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("succeeded", 1, 200)


def test_unsubscribed_and_switched_off_webhooks_receive_nothing(
    agent, agent_admin, candidate, approver, django_capture_on_commit_callbacks
):
    webhook_create(agent=agent, user=agent_admin, name="evals", url="https://h.example.com/", events=["eval.finished"])
    make_passing_eval(candidate)
    with django_capture_on_commit_callbacks(execute=True):
        services.version_approve(version=candidate, user=approver, comment="")
    assert not WebhookDelivery.objects.exists()


@override_settings(PROCMEM_WEBHOOK_BACKOFF_SECONDS=0, PROCMEM_WEBHOOK_MAX_ATTEMPTS=5)
def test_failing_receiver_is_retried_until_it_answers(agent, agent_admin, django_capture_on_commit_callbacks):
    # Eager tasks retry at once (Celery runs the retry in place, without the countdown); the worker
    # test below waits for real countdowns.
    with Receiver(statuses=[500, 503, 200]) as receiver:
        webhook, secret = webhook_create(
            agent=agent, user=agent_admin, name="flaky", url=receiver.url, events=["version.approved"]
        )
        with django_capture_on_commit_callbacks(execute=True):
            webhook_send_test(webhook=webhook, user=agent_admin)
        assert len(receiver.received) == 3
        # every attempt is signed, with the same delivery id
        assert len({r.headers["x-procmem-delivery"] for r in receiver.received}) == 1
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("succeeded", 3, 200)


@override_settings(PROCMEM_WEBHOOK_BACKOFF_SECONDS=0, PROCMEM_WEBHOOK_MAX_ATTEMPTS=3)
def test_receiver_that_keeps_failing_is_given_up_after_the_last_attempt(
    agent, agent_admin, django_capture_on_commit_callbacks
):
    with Receiver(statuses=[500]) as receiver:
        webhook, _ = webhook_create(
            agent=agent, user=agent_admin, name="down", url=receiver.url, events=["eval.finished"]
        )
        with django_capture_on_commit_callbacks(execute=True):
            webhook_send_test(webhook=webhook, user=agent_admin)
        assert len(receiver.received) == 3
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("failed", 3, 500)
    assert delivery.response_excerpt == "receiver says no" and delivery.next_attempt_at is None


@override_settings(PROCMEM_WEBHOOK_BACKOFF_SECONDS=0, PROCMEM_WEBHOOK_MAX_ATTEMPTS=2)
def test_unreachable_receiver_records_the_error(agent, agent_admin, django_capture_on_commit_callbacks):
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    webhook, _ = webhook_create(
        agent=agent, user=agent_admin, name="gone", url=f"http://127.0.0.1:{port}/", events=["eval.finished"]
    )
    with django_capture_on_commit_callbacks(execute=True):
        webhook_send_test(webhook=webhook, user=agent_admin)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and delivery.response_code is None and "refused" in delivery.error.lower()


def test_slack_body_is_text_only(agent, agent_admin, django_capture_on_commit_callbacks):
    with Receiver() as receiver:
        webhook, secret = webhook_create(
            agent=agent,
            user=agent_admin,
            name="slack",
            url=receiver.url,
            events=["metric.warning"],
            body_format="slack",
        )
        with django_capture_on_commit_callbacks(execute=True):
            webhooks_dispatch(
                agent_id=agent.pk, event=WebhookEvent.METRIC_WARNING, text="refund.over_limit v1 resolves less"
            )
        body = json.loads(receiver.received[0].body)
    assert list(body) == ["text"] and "refund.over_limit v1 resolves less" in body["text"]


def test_a_delivered_task_run_again_sends_nothing(agent, agent_admin, django_capture_on_commit_callbacks):
    from reviews.tasks import webhook_deliver

    with Receiver() as receiver:
        webhook, _ = webhook_create(
            agent=agent, user=agent_admin, name="once", url=receiver.url, events=["eval.finished"]
        )
        with django_capture_on_commit_callbacks(execute=True):
            delivery = webhook_send_test(webhook=webhook, user=agent_admin)
        assert webhook_deliver.apply(args=[delivery.pk]).get() == "not pending"
        assert len(receiver.received) == 1


# ---------------------------------------------------------------------------------------------- pages and permissions


def _urls(agent, webhook):
    return {
        "list": reverse("reviews:webhook_list", args=[agent.name]),
        "detail": reverse("reviews:webhook_detail", args=[agent.name, webhook.pk]),
        "test": reverse("reviews:webhook_test", args=[agent.name, webhook.pk]),
        "rotate": reverse("reviews:webhook_rotate", args=[agent.name, webhook.pk]),
        "delete": reverse("reviews:webhook_remove", args=[agent.name, webhook.pk]),
    }


FORM = {
    "name": "chat",
    "url": "https://h.example.com/hook",
    "events": ["version.approved"],
    "body_format": "json",
    "is_active": "on",
}


@pytest.mark.parametrize("who,expected", [("reviewer", 403), ("outsider", 404)])
def test_every_webhook_view_refuses_who_does_not_manage_the_agent(
    client, agent, agent_admin, reviewer, outsider, who, expected
):
    webhook, _ = webhook_create(
        agent=agent, user=agent_admin, name="x", url="https://h.example.com/", events=["eval.finished"]
    )
    client.force_login({"reviewer": reviewer, "outsider": outsider}[who])
    urls = _urls(agent, webhook)
    assert client.get(urls["list"]).status_code == expected
    assert client.get(urls["detail"]).status_code == expected
    for name in ("list", "detail"):
        assert client.post(urls[name], FORM).status_code == expected
    for name in ("test", "rotate", "delete"):
        assert client.post(urls[name]).status_code == expected
    webhook.refresh_from_db()
    assert webhook.name == "x" and not WebhookDelivery.objects.exists() and Webhook.objects.count() == 1


def test_a_webhook_of_another_agent_is_not_found(client, agent, agent_admin):
    from library.models import Agent

    other = Agent.objects.create(name="other_agent")
    assign_perm("library.manage_agent", agent_admin, other)
    webhook, _ = webhook_create(
        agent=other, user=agent_admin, name="x", url="https://h.example.com/", events=["eval.finished"]
    )
    client.force_login(agent_admin)
    assert client.get(reverse("reviews:webhook_detail", args=[agent.name, webhook.pk])).status_code == 404


def test_admin_creates_a_webhook_and_sees_the_secret_once(client, agent, agent_admin):
    client.force_login(agent_admin)
    response = client.post(reverse("reviews:webhook_list", args=[agent.name]), FORM)
    assert response.status_code == 201
    webhook = Webhook.objects.get()
    assert webhook.secret in response.content.decode()
    again = client.get(reverse("reviews:webhook_detail", args=[agent.name, webhook.pk]))
    assert again.status_code == 200 and webhook.secret not in again.content.decode()
    bad = client.post(reverse("reviews:webhook_list", args=[agent.name]), {**FORM, "url": "ftp://h.example.com/"})
    assert bad.status_code == 400 and "not an http:// or https:// URL" in bad.content.decode()
    assert Webhook.objects.count() == 1
