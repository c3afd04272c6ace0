"""Celery tasks that keep the metrics rollup fresh (reviews/metrics.py). Thin: primary keys in,
re-fetch, return early when the agent is gone, call the service. Beat runs
`reviews.metrics_refresh_all` every PROCMEM_METRICS_REFRESH_SECONDS; it fans out one task per
agent so several workers share the work. A redelivered task is harmless: a refresh recomputes whole
days and two refreshes of one agent are serialised by a row lock."""

from __future__ import annotations

from celery import shared_task

from library.models import Agent

from .metrics import metric_warnings_check, metrics_refresh


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
