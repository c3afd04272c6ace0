"""A roll-back under concurrent agent reads never serves two versions of one id (nor none): the
retire of the current version and the activation of the chosen one are one transaction, and the
database allows one ACTIVE version per procedure. Real PostgreSQL, real threads, one connection
each; the readers fetch the agent JSON through the API (its "readonly" connection) as agents do."""

from __future__ import annotations

import threading

import pytest
from django.db import connections
from django.test import Client
from django.urls import reverse

from library import services
from library.api.tokens import token_create
from tests.reviews.operations_helpers import activate, revise_and_activate

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]

READERS = 4
ROLLBACKS = 40


def test_rollback_under_concurrent_reads_serves_exactly_one_version(agent, candidate, approver, reviewer, admin_user):
    v1 = activate(candidate, approver)
    v2 = revise_and_activate(v1, reviewer, approver, step="Log the request with replyTemplates('logged').")
    _token, raw = token_create(agent=agent, scope="read", name="readers")
    url = reverse("api:active_set", args=[agent.name])
    stop = threading.Event()
    seen: list[list[tuple[str, int]]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def read_forever() -> None:
        client = Client()
        try:
            while not stop.is_set():
                response = client.get(url, headers={"Authorization": f"Bearer {raw}"})
                assert response.status_code == 200, response.content
                rows = [(p["id"], p["version"]) for p in response.json()["procedures"]]
                with lock:
                    seen.append(rows)
        except BaseException as exc:  # surfaced in the main thread
            errors.append(exc)
        finally:
            for conn in connections.all():
                conn.close()

    threads = [threading.Thread(target=read_forever) for _ in range(READERS)]
    for thread in threads:
        thread.start()
    try:
        targets = [v1, v2]
        for i in range(ROLLBACKS):
            services.version_rollback(version=targets[i % 2], user=admin_user, reason=f"flip {i}")
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert not errors, errors
    assert len(seen) > ROLLBACKS  # the readers really ran alongside the roll-backs
    served_numbers = set()
    for rows in seen:
        numbers = [n for key, n in rows if key == "refund.over_limit"]
        assert len(numbers) == 1, f"served {numbers} of refund.over_limit in one read"
        served_numbers.add(numbers[0])
    assert served_numbers == {1, 2}
