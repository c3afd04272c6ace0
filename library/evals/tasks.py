"""Celery tasks of the review side: eval replays. Thin: they take primary keys, re-fetch, and call
the services in reviews/evals.py, which claim work with conditional UPDATEs so that a redelivered
task never runs a finished case again. acks_late + reject_on_worker_lost (settings) put a task whose
worker died back on the queue; `eval_runs_recover` catches what the broker does not redeliver."""

from __future__ import annotations

import logging
import uuid

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

from . import evals

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
