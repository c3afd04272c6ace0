"""POST /api/v1/sessions against a real server process (gunicorn): a chunked body without
Content-Length is read whole (Django alone would read it as empty), the body limit still holds,
and errors above the view are JSON."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest

from library.api.tokens import token_create
from library.models import AgentSession, ApiToken

from .test_ingest import procmem_item

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _chunked_post(base: str, path: str, chunks: list[bytes], headers: dict) -> tuple[int, dict]:
    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        connection.request(
            "POST", path, body=iter(chunks), headers={**headers, "Transfer-Encoding": "chunked"}, encode_chunked=True
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


def test_a_chunked_body_is_read_whole(gunicorn_server, agent, settings):
    raw = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="chunked")[1]
    body = json.dumps({"sessions": [procmem_item(f"c-{i}") for i in range(20)]}).encode()
    chunks = [body[i : i + 1000] for i in range(0, len(body), 1000)]
    status, answer = _chunked_post(
        gunicorn_server,
        "/api/v1/sessions",
        chunks,
        {"Authorization": f"Bearer {raw}", "Content-Type": "application/json"},
    )
    assert status == 200, answer
    assert answer["counts"]["stored"] == 20
    assert AgentSession.objects.filter(agent=agent).count() == 20


def test_a_chunked_body_over_the_limit_is_a_json_413(gunicorn_server, agent, settings):
    raw = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="chunked")[1]
    limit = settings.PROCMEM_INGEST_MAX_BODY_BYTES
    chunks = [b"[" + b" " * (1 << 20)] * (limit // (1 << 20) + 2)
    status, answer = _chunked_post(
        gunicorn_server,
        "/api/v1/sessions",
        chunks,
        {"Authorization": f"Bearer {raw}", "Content-Type": "application/json"},
    )
    assert status == 413 and answer["error"]["code"] == "body_too_large"
    assert not AgentSession.objects.filter(agent=agent).exists()
