"""Webhook retries on a real Celery worker (Redis broker, PostgreSQL shared with the test): a
receiver that fails twice gets the same signed delivery three times, the waits between attempts
growing as the backoff says (1 s, then 2 s)."""

from __future__ import annotations

import time

import pytest
from guardian.shortcuts import assign_perm

from reviews.models import WebhookDelivery
from reviews.webhooks import signature_valid, webhook_create, webhook_send_test
from tests.webhook_receiver import Receiver

pytestmark = [pytest.mark.celery_worker, pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def one_second_backoff(monkeypatch):
    # read by the worker process at start (requested before celery_worker_process)
    monkeypatch.setenv("PROCMEM_WEBHOOK_BACKOFF_SECONDS", "1")
    monkeypatch.setenv("PROCMEM_WEBHOOK_MAX_ATTEMPTS", "4")


def test_worker_retries_a_failing_receiver_with_growing_delays(
    one_second_backoff, celery_worker_process, agent, reviewers_group
):
    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.create_user("hook_admin")
    assign_perm("library.manage_agent", admin, agent)
    with Receiver(statuses=[500, 502, 200]) as receiver:
        webhook, secret = webhook_create(
            agent=agent, user=admin, name="flaky", url=receiver.url, events=["eval.finished"]
        )
        delivery = webhook_send_test(webhook=webhook, user=admin)  # autocommit: queued at once
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            delivery.refresh_from_db()
            if delivery.status != WebhookDelivery.Status.PENDING:
                break
            time.sleep(0.3)
        received = list(receiver.received)
    log = celery_worker_process.log_path.read_text()[-3000:]
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("succeeded", 3, 200), log
    assert len(received) == 3
    assert all(
        signature_valid(
            secret=secret,
            timestamp_header=r.headers["x-procmem-timestamp"],
            signature_header=r.headers["x-procmem-signature"],
            body=r.body,
        )
        for r in received
    )
    first_wait, second_wait = received[1].at - received[0].at, received[2].at - received[1].at
    assert first_wait >= 0.9 and second_wait >= 1.9, (first_wait, second_wait)
