"""Scheduled mining through a real Celery worker on the real broker (Redis) and PostgreSQL."""

import time

import pytest

from library.models import MiningRun, ProcedureVersion

from .test_mining import _contrasted

pytestmark = [pytest.mark.celery_worker, pytest.mark.redis, pytest.mark.postgres]


def test_beat_entry_queues_mining_that_a_worker_runs(celery_worker_process, agent):
    # given committed sessions and an agent that opted in to automatic capture
    agent.support_threshold = 3
    agent.auto_capture_enabled = True
    agent.save()
    _contrasted(agent)
    from procmem_site.celery import app

    # when beat's task fires (sent through the broker, as beat would)
    app.send_task("library.mine_scheduled")
    # then the worker fans out one mining task per agent and the candidate appears
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        run = MiningRun.objects.filter(agent=agent, state=MiningRun.State.DONE).first()
        if run is not None:
            break
        time.sleep(0.3)
    else:
        pytest.fail(celery_worker_process.log_path.read_text()[-3000:])
    assert run.parameters["trigger"] == "scheduled"
    version = ProcedureVersion.objects.get(mining_run=run)
    assert version.procedure.key == "order.status" and version.evidence["support"] == 6  # 2 of 8 held back
