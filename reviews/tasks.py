"""Celery tasks of the review side. Thin: they take primary keys, re-fetch, and call a service.

Eval replays: the services in reviews/evals.py, which claim work with conditional UPDATEs so that a redelivered
task never runs a finished case again. acks_late + reject_on_worker_lost (settings) put a task whose
worker died back on the queue; `eval_runs_recover` catches what the broker does not redeliver."""

from __future__ import annotations

import logging
import uuid

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

from library.models import Agent

from . import evals
from .metrics.alerts import metric_warnings_check
from .metrics.rollup import metrics_refresh
from .notifications import notification_email_send

logger = logging.getLogger(__name__)
RETRYABLE = (OperationalError, InterfaceError)


class EvalRunTask(Task):
    """A task of one eval run: when it finally fails, the run fails with the reason."""

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        run_id = kwargs.get("run_id", args[0] if args else None)
        if run_id is not None:
            evals.eval_run_fail(run_id=run_id, reason=f"{self.name} failed: {type(exc).__name__}: {exc}")


def queue_chunks(run_id: int, chunks: list[list[int]]) -> None:
    for case_ids in chunks:
        soft, hard = evals.chunk_time_limits(run_id=run_id, cases=len(case_ids))
        eval_run_chunk.apply_async(kwargs={"run_id": run_id, "case_ids": case_ids}, soft_time_limit=soft, time_limit=hard)


@shared_task(
    bind=True, base=EvalRunTask, name="reviews.eval_run_dispatch", acks_late=True, reject_on_worker_lost=True,
    autoretry_for=RETRYABLE, retry_backoff=True, max_retries=5, soft_time_limit=120, time_limit=150,
)
def eval_run_dispatch(self, run_id: int) -> int:
    """QUEUED → RUNNING, then one chunk task per PROCMEM_EVAL_CHUNK_SIZE cases."""
    chunks = evals.eval_run_begin(run_id=run_id)
    if not chunks:
        evals.eval_run_finalize(run_id=run_id)  # a run without cases is judged at once
        return 0
    queue_chunks(run_id, chunks)
    return len(chunks)


@shared_task(
    bind=True, base=EvalRunTask, name="reviews.eval_run_chunk", acks_late=True, reject_on_worker_lost=True,
    autoretry_for=RETRYABLE, retry_backoff=True, max_retries=5,
)
def eval_run_chunk(self, run_id: int, case_ids: list[int]) -> int:
    """Runs both arms of some cases. The claim token is the task id, which a redelivery keeps."""
    return evals.eval_chunk_run(run_id=run_id, case_ids=case_ids, claim_token=self.request.id or uuid.uuid4().hex)


@shared_task(name="reviews.eval_runs_recover", soft_time_limit=240, time_limit=280)
def eval_runs_recover() -> list[int]:
    """Every minute (beat): resume or fail runs that stopped making progress."""
    return evals.eval_runs_recover()


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
    agent_ids = list(Agent.objects.values_list("pk", flat=True))
    for agent_id in agent_ids:
        metrics_refresh_agent.delay(agent_id)
    return len(agent_ids)


# ---------------------------------------------------------------------------------------------- notifications


@shared_task(name="reviews.notification_email", autoretry_for=(OSError,), retry_backoff=30, max_retries=5,
             time_limit=120, soft_time_limit=100)
def notification_email(*, user_ids: list[int], kind: str, message: str, url: str = "") -> int:
    """Queued by name from reviews.notifications.notification_send after its transaction commits."""
    return notification_email_send(user_ids=user_ids, kind=kind, message=message, url=url)
