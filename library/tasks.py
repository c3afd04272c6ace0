"""Celery tasks of the library. Thin: take primary keys, re-fetch, call a service.

The worker's autodiscovery imports `<app>.tasks` of every installed app; the eval-run tasks live
with the eval runs (library/evals/tasks.py) and are registered through the import below.

Every process imports this module at start (reviews/apps.py registers the tasks, through
reviews.tasks), so the services a task runs that no page needs at start — the miner, the session
store, the OTLP pipeline: together about 130 modules and seconds of a fresh process — are imported
inside the task that runs them (`# noqa: PLC0415`)."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.contrib.auth import get_user_model
from django.utils import timezone

from .conflicts import conflicts_scan
from .evals import tasks as eval_tasks  # noqa: F401  (registers the eval-run tasks)
from .models import Agent


def fan_out_per_agent(task) -> int:
    """Queues `task(agent_id)` once per agent, so several workers share a beat entry point's work;
    returns how many were queued."""
    agent_ids = list(Agent.objects.values_list("pk", flat=True))
    for agent_id in agent_ids:
        task.delay(agent_id)
    return len(agent_ids)


@shared_task(name="library.ping")
def ping(value: str = "pong") -> str:
    """Used by health checks and the worker tests to prove a worker consumes the queue."""
    return value


# --- mining and retention ----------------------------------------------------------------------


@shared_task(name="library.mine_agent", time_limit=3600, soft_time_limit=3500, acks_late=True)
def mine_agent(agent_id: int, trigger: str = "scheduled", started_by_id: int | None = None) -> int | None:
    """Mines one agent. A redelivered task is harmless: the groups the first delivery proposed are
    covered by then and the second run records them as skipped."""
    from .mining.mining_runs import mining_run_execute  # noqa: PLC0415 (the miner: kept out of start)

    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None:
        return None
    user = get_user_model().objects.filter(pk=started_by_id).first() if started_by_id else None
    return mining_run_execute(agent=agent, started_by=user, trigger=trigger).pk


@shared_task(name="library.mine_scheduled", time_limit=60, soft_time_limit=50)
def mine_scheduled() -> list[int]:
    """Beat entry point: queues one mining task per agent with procedural memory and automatic
    capture switched on."""
    from .mining.mining_runs import agents_for_scheduled_mining  # noqa: PLC0415 (the miner: kept out of start)

    agent_ids = agents_for_scheduled_mining()
    for agent_id in agent_ids:
        mine_agent.delay(agent_id, "scheduled")
    return agent_ids


@shared_task(name="library.purge_raw_sessions", time_limit=3600, soft_time_limit=3500)
def purge_raw_sessions() -> int:
    """Drops raw task text and tool arguments past PROCMEM_RAW_RETENTION_DAYS."""
    from .ingest.store import sessions_purge_raw  # noqa: PLC0415 (the session store: kept out of start)

    return sessions_purge_raw()


@shared_task(name="library.otlp_flush", time_limit=300, soft_time_limit=270)
def otlp_flush() -> int:
    """Beat entry point: stores the OTLP sessions that became complete by waiting (their quiet
    period or the longest wait passed; library/ingest/otlp.py). Returns how many were stored.
    Each agent on its own: an agent whose flush fails is logged, counted (an OtlpFlushFailure row,
    shown on the ops page) and tried again after its back-off; the other agents go on. Within an
    agent each session is isolated the same way (library/ingest/otlp_failures.py)."""
    # the OTLP pipeline (protobuf, the span readers): kept out of start
    from .ingest import otlp_failures  # noqa: PLC0415
    from .ingest.otlp import agents_with_pending_spans, sessions_flush  # noqa: PLC0415
    from .ingest.otlp_outcomes import held_outcomes_expire  # noqa: PLC0415

    stored = 0
    now = timezone.now()
    failing = otlp_failures.agents_failing()  # agent id → its next attempt
    waiting = [pk for pk, at in failing.items() if at is not None and at > now]
    for agent in Agent.objects.filter(pk__in=agents_with_pending_spans()).exclude(pk__in=waiting).order_by("pk"):
        try:
            stored += len(sessions_flush(agent=agent).stored)
        except SoftTimeLimitExceeded:
            raise  # the task's time is up: not this agent's fault
        except Exception as exc:
            logging.getLogger(__name__).exception("The OTLP flush of agent %s failed", agent.name)
            otlp_failures.agent_flush_failed(agent_id=agent.pk, exc=exc, now=now)
        else:
            if agent.pk in failing:
                otlp_failures.agent_flush_ok(agent.pk)
    held_outcomes_expire(now)
    return stored


# --- conflict scan -------------------------------------------------------------------------------


@shared_task(name="library.conflicts_scan_agent", time_limit=600, soft_time_limit=540, acks_late=True)
def conflicts_scan_agent(agent_id: int) -> dict | None:
    """One agent's conflict scan (library/conflicts.py). A redelivered task finds the same set."""
    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None:
        return None
    return conflicts_scan(agent=agent)


@shared_task(name="library.conflicts_scan_all", time_limit=60, soft_time_limit=50)
def conflicts_scan_all() -> int:
    """Beat entry point: one scan task per agent."""
    return fan_out_per_agent(conflicts_scan_agent)
