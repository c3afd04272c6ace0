"""Benchmark: the ways out to agent runtimes (issue 26), each against the select endpoint or the
sync client in the same run.

    .venv/bin/python -m bench.runtimes_bench [--procedures 200] [--queries 40] [--rounds 3] [--tasks 200]

1. MCP `recall_procedures` latency against GET /api/v1/agents/{agent}/select (target: p50 at most
   1.3x). Three MCP paths, each driven by the official MCP client SDK: `procmem-mcp` over stdio
   asking the server's select endpoint (`--local-ranking no`), `procmem-mcp` ranking the cached set
   itself (`--local-ranking yes`, the [embeddings] extra), and the server's own streamable HTTP
   endpoint (/api/v1/agents/{agent}/mcp). The baseline is the select endpoint asked over one kept-alive
   connection (httpx). Every query goes to each path in turn, so load from elsewhere hits all alike.
2. Select throughput of `AsyncProcmemClient` with 50 concurrent tasks against the sync
   `ProcmemClient` (target: at least 5x): both ask the server's select endpoint; 50 tasks of an
   asyncio agent that share a sync client wait for each other (one blocking call at a time), which
   is what the sync figure measures. Rounds alternate between the two.

   Every throughput round also counts the CPU time spent on it, by the gunicorn workers and by this
   process (the clients), per select: 2 CPUs doing nothing else answer at most 2 / (CPU per
   select) selects a second, which bounds what any client's concurrency can gain over the one
   request at a time of the sync client on this machine.

Needs PostgreSQL (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/procmem_h26a_bench;
dropped and recreated). gunicorn: --workers 2 x --threads 4 on 127.0.0.1, rate limits off. Queries
are tau2-bench task texts. Appends a section to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from . import common
from .selection_bench import queries

PORT = 8126
AGENT = "bench_runtimes"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def latency_round(base: str, token: str, texts: list[str], env: dict[str, str]) -> dict[str, list[float]]:
    """One pass over the queries: each query to every path in turn. Times in milliseconds."""
    import httpx
    import httpx2
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client

    script = str(Path(sys.executable).with_name("procmem-mcp"))
    stdio_env = {**env, "PROCMEM_URL": base, "PROCMEM_AGENT": AGENT, "PROCMEM_TOKEN": token}
    times: dict[str, list[float]] = {
        "select endpoint": [],
        "procmem-mcp (server select)": [],
        "procmem-mcp (local ranking)": [],
        "server MCP endpoint": [],
    }
    http = httpx.AsyncClient(timeout=120)
    mcp_http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
    async with (
        Client(
            StdioServerParameters(command=script, args=["--local-ranking", "no"], env=stdio_env),
            read_timeout_seconds=120,
        ) as remote,
        Client(
            StdioServerParameters(command=script, args=["--local-ranking", "yes"], env=stdio_env),
            read_timeout_seconds=120,
        ) as local,
        Client(
            streamable_http_client(f"{base}/api/v1/agents/{AGENT}/mcp", http_client=mcp_http), read_timeout_seconds=120
        ) as endpoint,
    ):

        async def select(task: str) -> None:
            response = await http.get(
                f"{base}/api/v1/agents/{AGENT}/select",
                params={"task": task},
                headers={"Authorization": f"Bearer {token}"},
            )
            response.raise_for_status()

        def recall(client):
            async def call(task: str) -> None:
                result = await client.call_tool("recall_procedures", {"task": task})
                assert not result.is_error and not result.structured_content["stale"], result

            return call

        paths = {
            "select endpoint": select,
            "procmem-mcp (server select)": recall(remote),
            "procmem-mcp (local ranking)": recall(local),
            "server MCP endpoint": recall(endpoint),
        }
        for call in paths.values():  # warm: connections, the local index, the workers' model
            for task in texts[:4]:
                await call(task)
        for task in texts:
            for name, call in paths.items():
                started = time.perf_counter()
                await call(task)
                times[name].append((time.perf_counter() - started) * 1000)
    await http.aclose()
    await mcp_http.aclose()
    return times


class CpuMeter:
    """Wall time, and CPU time of the server (gunicorn and its workers) and of this process (the
    clients), over one throughput round."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.rounds: list[dict[str, float]] = []

    def measure(self, run) -> float:
        server, client, started = common.cpu_seconds(self.server_pid), time.process_time(), time.perf_counter()
        rate = run()
        self.rounds.append(
            {
                "wall": time.perf_counter() - started,
                "server": common.cpu_seconds(self.server_pid) - server,
                "client": time.process_time() - client,
            }
        )
        return rate


def sync_throughput(base: str, token: str, texts: list[str], tasks: int) -> float:
    from procmem_client import ProcmemClient

    client = ProcmemClient(base_url=base, agent=AGENT, token=token, local_ranking=False, timeout=120)

    async def one(task: str) -> None:  # an asyncio task calling the sync client: it blocks the loop
        selection = client.select(task=task)
        assert client.last_error is None and selection["cap"], client.last_error

    async def run() -> float:
        started = time.perf_counter()
        await asyncio.gather(*[one(texts[i % len(texts)]) for i in range(tasks)])
        return tasks / (time.perf_counter() - started)

    return asyncio.run(run())


def async_throughput(base: str, token: str, texts: list[str], tasks: int, concurrency: int) -> float:
    from procmem_client.aio import AsyncProcmemClient

    async def run() -> float:
        async with AsyncProcmemClient(
            base_url=base, agent=AGENT, token=token, local_ranking=False, timeout=120
        ) as client:
            gate = asyncio.Semaphore(concurrency)

            async def one(task: str) -> None:
                async with gate:
                    selection = await client.select(task=task)
                assert client.last_error is None and selection["cap"], client.last_error

            started = time.perf_counter()
            await asyncio.gather(*[one(texts[i % len(texts)]) for i in range(tasks)])
            return tasks / (time.perf_counter() - started)

    return asyncio.run(run())


def raw_throughput(base: str, token: str, texts: list[str], tasks: int, concurrency: int) -> float:
    """The server's own ceiling: the select endpoint asked by plain httpx with the same concurrency
    and no client logic."""
    import httpx

    async def run() -> float:
        async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=concurrency)) as http:
            gate = asyncio.Semaphore(concurrency)

            async def one(task: str) -> None:
                async with gate:
                    response = await http.get(
                        f"{base}/api/v1/agents/{AGENT}/select",
                        params={"task": task},
                        headers={"Authorization": f"Bearer {token}"},
                    )
                response.raise_for_status()

            started = time.perf_counter()
            await asyncio.gather(*[one(texts[i % len(texts)]) for i in range(tasks)])
            return tasks / (time.perf_counter() - started)

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--procedures", type=int, default=200)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=200, help="selects per throughput round")
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads per worker")
    args = parser.parse_args()
    database_url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/procmem_h26a_bench")
    role = "procmem_h26a_bench_reader"
    common.OUT.mkdir(parents=True, exist_ok=True)
    started_on = common.machine()
    env, tokens = common.prepare(database_url, {AGENT: args.procedures}, role)
    env.update(PROCMEM_RATE_LIMITS="0")
    token = tokens[AGENT]
    base = f"http://127.0.0.1:{PORT}"
    texts = queries(args.queries)
    latencies: dict[str, list[float]] = {}
    sync_rates: list[float] = []
    async_rates: list[float] = []
    raw_rates: list[float] = []
    try:
        with common.gunicorn(env, port=PORT, workers=args.workers, threads=args.threads) as server:
            sync_cpu, async_cpu = CpuMeter(server.pid), CpuMeter(server.pid)
            for number in range(args.rounds):
                for name, values in asyncio.run(latency_round(base, token, texts, env)).items():
                    latencies.setdefault(name, []).extend(values)
                sync_rates.append(sync_cpu.measure(lambda: sync_throughput(base, token, texts, args.tasks)))
                async_rates.append(
                    async_cpu.measure(lambda: async_throughput(base, token, texts, args.tasks, args.concurrency))
                )
                raw_rates.append(raw_throughput(base, token, texts, args.tasks, args.concurrency))
                print(
                    f"round {number + 1}: sync {sync_rates[-1]:.1f}/s, async {async_rates[-1]:.1f}/s, raw {raw_rates[-1]:.1f}/s",
                    flush=True,
                )
    finally:
        common.drop_role(database_url, role)

    baseline = statistics.median(latencies["select endpoint"])
    rows = []
    for name, values in latencies.items():
        p50 = statistics.median(values)
        rows.append(f"| {name} | {p50:.1f} | {percentile(values, 0.9):.1f} | {p50 / baseline:.2f}x |")
    sync_rate, async_rate, raw_rate = (
        statistics.median(sync_rates),
        statistics.median(async_rates),
        statistics.median(raw_rates),
    )
    cpus = os.cpu_count() or 1

    def per_select(meter: CpuMeter, part: str) -> float:
        return statistics.median(r[part] for r in meter.rounds) / args.tasks * 1000

    cpu_sync = per_select(sync_cpu, "server") + per_select(sync_cpu, "client")
    cpu_async = per_select(async_cpu, "server") + per_select(async_cpu, "client")
    ceiling = cpus / cpu_async * 1000  # selects a second with every CPU on them and nothing else
    busy = statistics.median(
        (r["server"] + r["client"]) / r["wall"] for r in async_cpu.rounds
    )  # CPUs the async rounds got
    section = f"""## Agent runtimes: MCP recall and the async client (issue 26)

```sh
.venv/bin/python -m bench.runtimes_bench --procedures {args.procedures} --queries {args.queries} --rounds {args.rounds} --tasks {args.tasks} --concurrency {args.concurrency} --workers {args.workers} --threads {args.threads}
```

Run {{stamp}}; {started_on}; load average {os.getloadavg()[0]:.1f} at the end. {args.procedures} ACTIVE
procedures, gunicorn {args.workers} workers x {args.threads} threads, {args.queries} tau2-bench task texts x {args.rounds} rounds, each
query to every path in turn.

| path (recall_procedures / select) | p50 (ms) | p90 (ms) | p50 / select endpoint |
| --- | ---: | ---: | ---: |
{chr(10).join(rows)}

Select throughput, {args.tasks} selects a round, median of {args.rounds} rounds (alternating):
sync ProcmemClient {sync_rate:.1f}/s (rounds: {", ".join(f"{r:.1f}" for r in sync_rates)}),
AsyncProcmemClient with {args.concurrency} concurrent tasks {async_rate:.1f}/s (rounds: {", ".join(f"{r:.1f}" for r in async_rates)}):
**{async_rate / sync_rate:.2f}x**. The server's ceiling, plain httpx with the same concurrency and no
client logic: {raw_rate:.1f}/s (rounds: {", ".join(f"{r:.1f}" for r in raw_rates)}); the async client reaches
{async_rate / raw_rate:.0%} of it.

CPU per select (median round; gunicorn's workers + this process's clients): sync
{per_select(sync_cpu, "server"):.1f} + {per_select(sync_cpu, "client"):.1f} ms, async
{per_select(async_cpu, "server"):.1f} + {per_select(async_cpu, "client"):.1f} ms. The sync client waits
{1000 / sync_rate:.1f} ms a select for {cpu_sync:.1f} ms of CPU; {cpus} CPUs doing nothing else would answer at most
{ceiling:.1f} selects/s, **{ceiling / sync_rate:.2f}x** the sync client: the most any concurrency can gain here. The
async rounds had {busy:.2f} CPUs busy on them.
"""
    print(section)
    common.append_results(section)


if __name__ == "__main__":
    main()
