"""Celery tasks of the library. Thin: take primary keys, re-fetch, call a service."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="library.ping")
def ping(value: str = "pong") -> str:
    """Used by health checks and the worker tests to prove a worker consumes the queue."""
    return value
