"""Celery tasks of eval runs. Thin: they take primary keys and call the services in
library/evals/eval_runs.py, which claim work with conditional UPDATEs so that a redelivered task never
runs a finished case again, and which queue these tasks by their names (eval_runs.DISPATCH_TASK, ...).
acks_late + reject_on_worker_lost (settings) put a task whose worker died back on the queue;
`eval_runs_recover` catches what the broker does not redeliver.

library/tasks.py imports this module, so that the worker's autodiscovery registers these tasks."""

from __future__ import annotations

import uuid

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

from . import eval_runs

RETRYABLE = (OperationalError, InterfaceError)


class EvalRunTask(Task):
    """A task of one eval run: when it finally fails, the run fails with the reason."""

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        run_id = kwargs.get("run_id", args[0] if args else None)
        if run_id is not None:
            eval_runs.eval_run_fail(run_id=run_id, reason=f"{self.name} failed: {type(exc).__name__}: {exc}")


@shared_task(
    bind=True,
    base=EvalRunTask,
    name=eval_runs.DISPATCH_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=RETRYABLE,
    retry_backoff=True,
    max_retries=5,
    soft_time_limit=120,
    time_limit=150,
)
def eval_run_dispatch(self, run_id: int) -> int:
    """Claims the run and fans its cases out as chunk tasks."""
    return eval_runs.eval_run_dispatch(run_id=run_id)


@shared_task(
    bind=True,
    base=EvalRunTask,
    name=eval_runs.CHUNK_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=RETRYABLE,
    retry_backoff=True,
    max_retries=5,
)
def eval_run_chunk(self, run_id: int, case_ids: list[int]) -> int:
    """Runs both arms of some cases. The claim token is the task id, which a redelivery keeps."""
    return eval_runs.eval_chunk_run(run_id=run_id, case_ids=case_ids, claim_token=self.request.id or uuid.uuid4().hex)


@shared_task(name=eval_runs.RECOVER_TASK, soft_time_limit=240, time_limit=280)
def eval_runs_recover() -> list[int]:
    """Every minute (beat): resume or fail runs that stopped making progress."""
    return eval_runs.eval_runs_recover()
