"""Celery tasks of the review side (metrics rollup and warnings, notification e-mail, webhooks). Thin: they take
primary keys, re-fetch, and call a service. The eval-replay tasks live with the eval runs, in
library/evals/tasks.py."""

from __future__ import annotations

import logging

from celery import Task, shared_task

from library.models import Agent
from library.tasks import fan_out_per_agent

from .metrics.alerts import metric_warnings_check
from .metrics.rollup import metrics_refresh
from .notifications import notification_email_send
from .services import demotions_propose
from .webhooks import webhook_delivery_attempt, webhook_delivery_give_up

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------- metrics
# Beat runs `reviews.metrics_refresh_all` every PROCMEM_METRICS_REFRESH_SECONDS; it fans out one task
# per agent so several workers share the work. A redelivered task is harmless: a refresh recomputes
# whole days and two refreshes of one agent are serialised by a row lock (reviews.metrics.rollup).


@shared_task(name="reviews.metrics_refresh_agent", time_limit=1800, soft_time_limit=1700, acks_late=True)
def metrics_refresh_agent(agent_id: int, full: bool = False) -> dict:
    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None:
        return {"agent_id": agent_id, "skipped": "agent is gone"}
    result = metrics_refresh(agent=agent, full=full)
    opened = metric_warnings_check(agent=agent)
    return {"agent": agent.name, "days": result.days, "sessions": result.sessions_read, "alerts_opened": len(opened)}


@shared_task(name="reviews.metrics_refresh_all", time_limit=60, soft_time_limit=50)
def metrics_refresh_all() -> int:
    return fan_out_per_agent(metrics_refresh_agent)


# ---------------------------------------------------------------------------------------------- demotion
# Beat runs `reviews.demotions_check_all` every PROCMEM_DEMOTION_CHECK_HOURS; it proposes, never retires.


@shared_task(name="reviews.demotions_check_agent", time_limit=600, soft_time_limit=540, acks_late=True)
def demotions_check_agent(agent_id: int) -> dict:
    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None:
        return {"agent_id": agent_id, "skipped": "agent is gone"}
    opened = demotions_propose(agent=agent)
    return {"agent": agent.name, "proposals_opened": len(opened)}


@shared_task(name="reviews.demotions_check_all", time_limit=60, soft_time_limit=50)
def demotions_check_all() -> int:
    return fan_out_per_agent(demotions_check_agent)


# ---------------------------------------------------------------------------------------------- notifications


@shared_task(
    name="reviews.notification_email",
    autoretry_for=(OSError,),
    retry_backoff=30,
    max_retries=5,
    time_limit=120,
    soft_time_limit=100,
)
def notification_email(*, user_ids: list[int], kind: str, message: str, url: str = "") -> int:
    """Queued by name from reviews.notifications.notification_send after its transaction commits."""
    return notification_email_send(user_ids=user_ids, kind=kind, message=message, url=url)


# ---------------------------------------------------------------------------------------------- webhooks


class _WebhookTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        # a time limit or an unexpected error: the log says so instead of showing "pending" for ever
        if args:
            webhook_delivery_give_up(delivery_id=args[0], reason=f"{type(exc).__name__}: {exc}")


@shared_task(
    bind=True,
    base=_WebhookTask,
    name="reviews.webhook_deliver",
    max_retries=None,
    acks_late=True,
    time_limit=120,
    soft_time_limit=100,
)
def webhook_deliver(self, delivery_id: int) -> str:
    """One attempt; on failure Celery retries it after the backoff that the attempt recorded
    (reviews.webhooks: PROCMEM_WEBHOOK_MAX_ATTEMPTS attempts in all, the delay doubling). Queued by
    name from reviews.webhooks after the delivery row commits."""
    outcome = webhook_delivery_attempt(delivery_id=delivery_id)
    if self.request.is_eager:
        # Eager mode (tests, CELERY_TASK_ALWAYS_EAGER) has no broker to hold a countdown, and with
        # eager propagation Celery's retry would raise into the caller: the attempts run in place,
        # back to back, until one succeeds or the last one fails.
        while outcome.retry_in is not None:
            outcome = webhook_delivery_attempt(delivery_id=delivery_id)
        return outcome.status
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.status
