"""A real Celery worker process consumes the real broker (Redis in CI)."""

import pytest

pytestmark = [pytest.mark.celery_worker, pytest.mark.redis, pytest.mark.postgres]


def test_worker_answers_and_consumes(celery_worker_process):
    from procmem_site.celery import app

    replies = app.control.ping(destination=[celery_worker_process.hostname], timeout=5.0)
    assert replies and celery_worker_process.hostname in replies[0]
    app.send_task("library.ping", args=["hello"])
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (
            "library.ping" in celery_worker_process.log_path.read_text()
            and "succeeded" in celery_worker_process.log_path.read_text()
        ):
            break
        time.sleep(0.2)
    else:
        pytest.fail(celery_worker_process.log_path.read_text()[-2000:])
