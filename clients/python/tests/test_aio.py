"""AsyncProcmemClient against the fake procmem server (no Django): what the sync client does —
ETag revalidation and gzip, the last good set when the server fails, selection here or on the
server, the one renderer, session reports — and one revalidation for many concurrent tasks. The
live-server tests with the agent frameworks are in tests/library/test_async_runtimes.py."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("httpx", reason="the [async] extra is not installed")

from procmem_client import ProcmemError  # noqa: E402
from procmem_client.aio import AsyncProcmemClient  # noqa: E402
from procmem_client.ranking import EmbeddingCache, Ranker  # noqa: E402
from procmem_client.rendering import render_block  # noqa: E402


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def keyword_ranker() -> Ranker:
    """Refund texts on one axis, the rest on another: local ranking without the model."""
    import numpy as np

    return Ranker(
        cache=EmbeddingCache(
            lambda texts: np.asarray(
                [[1.0, 0.0] if "refund" in t.lower() else [0.0, 1.0] for t in texts], dtype=np.float32
            )
        )
    )


def client_for(server, fake, **options) -> AsyncProcmemClient:
    return AsyncProcmemClient(base_url=server.url, agent=fake.agent, token=fake.token, **options)


def test_revalidates_with_the_etag_and_keeps_the_last_good_set(server, fake):
    clock = FakeClock()

    async def scenario():
        async with client_for(
            server, fake, refresh_interval=30, retry_interval=5, clock=clock, local_ranking=False
        ) as procmem:
            first = await procmem.procedures()
            etag = procmem.etag
            clock.now += 31
            await procmem.procedures()
            assert procmem.not_modified == 1 and procmem.etag == etag
            gets = [r for r in fake.requests if r["path"].endswith("/procedures")]
            assert gets[-1]["headers"]["If-None-Match"] == etag and "gzip" in gets[-1]["headers"]["Accept-Encoding"]
            server.stop()
            clock.now += 31
            again = await procmem.procedures()
            assert again == first and procmem.last_error and "ConnectError" in procmem.last_error
            return first

    assert [p["id"] for p in asyncio.run(scenario())] == ["order.status", "refund.over_limit"]


def test_an_error_status_keeps_the_set_and_a_new_client_starts_empty(server, fake):
    fake.status = 500

    async def scenario():
        async with client_for(server, fake, local_ranking=False) as procmem:
            assert await procmem.procedures() == []
            assert procmem.last_error.startswith("HTTP 500")

    asyncio.run(scenario())


def test_server_selection_renders_with_the_one_renderer_and_fails_to_nothing(server, fake):
    async def scenario():
        async with client_for(server, fake, local_ranking=False) as procmem:
            text, injected = await procmem.instruction_for(task="a refund of 900", base_instruction="You are support.")
            fake.status = 503
            empty = await procmem.select(task="a refund of 900")
            return text, injected, empty, procmem.last_error

    text, injected, empty, error = asyncio.run(scenario())
    selects = [r for r in fake.requests if r["path"].startswith("/api/v1/agents/support_agent/select")]
    assert [(r["method"], r["path"], r["query"]["task"]) for r in selects] == [
        ("POST", "/api/v1/agents/support_agent/select", ["a refund of 900"])
    ] * 2  # the task in the body, in no URL
    refund = [p for p in json.loads(fake.active_set())["procedures"] if p["id"] == "refund.over_limit"]
    assert text == "You are support.\n\n" + render_block(refund)["text"]
    assert [p["id"] for p in injected] == ["refund.over_limit"]
    assert empty["injected"] == [] and error.startswith("HTTP 503")


def test_local_selection_and_fifty_concurrent_tasks_share_one_fetch(server, fake):
    async def scenario():
        async with client_for(server, fake, ranker=keyword_ranker()) as procmem:
            results = await asyncio.gather(*[procmem.select(task=f"refund please {i}") for i in range(50)])
            return results, procmem.fetches

    results, fetches = asyncio.run(scenario())
    assert fetches == 1
    assert all(r["injected"][0]["id"] == "refund.over_limit" for r in results)


def test_reports_post_jsonl_with_the_ingest_token_and_refusals_raise(server, fake):
    async def scenario():
        async with client_for(server, fake, ingest_token="pm_ingest", local_ranking=False) as procmem:
            answer = await procmem.report_session(
                session_id="s-1", task="refund", resolved=True, injected=[{"id": "refund.over_limit", "version": 1}]
            )
            with pytest.raises(ProcmemError) as refused:
                await procmem.report_session(session_id="bad", task="bad", resolved=True, injected=[])
            return answer, refused.value

    answer, refused = asyncio.run(scenario())
    assert answer["stored"] == 1 and refused.status == 400
    posted = [r for r in fake.requests if r["method"] == "POST" and r["path"].endswith("/sessions")][0]
    assert (
        posted["headers"]["Authorization"] == "Bearer pm_ingest"
        and posted["headers"]["Content-Type"] == "application/x-ndjson"
    )
    assert json.loads(posted["body"].splitlines()[0])["injected"] == [{"id": "refund.over_limit", "version": 1}]


def test_without_an_ingest_token_reporting_refuses():
    async def scenario():
        async with AsyncProcmemClient(base_url="http://127.0.0.1:9", agent="a", token="t") as procmem:
            await procmem.report_sessions([])

    with pytest.raises(ProcmemError, match="ingest token"):
        asyncio.run(scenario())
