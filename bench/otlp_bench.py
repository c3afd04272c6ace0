"""Benchmark: OTLP trace ingestion (POST /api/otlp/v1/traces) against POST /api/v1/sessions with the
same sessions, in the same run, on gunicorn (docs/benchmarks.md).

    .venv/bin/python -m bench.otlp_bench [--db procmem_bench_otlp] [--port 8031] [--sessions 3000]
                                         [--rounds 3] [--clients 4] [--seconds 120]

Each session is recorded once by the real OpenTelemetry SDK as an instrumented agent loop emits it
(an invoke_agent root, a chat span with the user's request, four execute_tool spans with their
arguments and results, a chat span with the reply: 7 spans) and the same session is written in
procmem's format (task, the four tool calls, model, end time). Requests carry 100 sessions each:
OTLP/protobuf (700 spans, the exporter's encoding) and procmem JSON. With
PROCMEM_OTLP_QUIET_SECONDS=0 the OTLP request stores its sessions itself (staging, assembly, the same
parser and redaction), so both sides measure spans-in to sessions-stored. Rounds alternate the two
endpoints, the first of them alternating (fresh session ids every round); sessions/second per round
and the ratio are printed.
Rate limits are off for the bench. Before the first round each endpoint gets four requests of its
own (not measured): what a worker loads on an endpoint's first use is not counted. Each round starts with ANALYZE of the tables both sides read
(autovacuum is off on the shared machine). Per round the CPU milliseconds per stored session of
the client, the gunicorn workers and the database's server processes are recorded as well: the
wall-clock ratio moves with the machine's other load, CPU per session much less.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.ingest_bench import hammer, prepare, server_env, serving  # noqa: E402

BATCH = 100
TOOLS = ("lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates")


def sessions(run: str, count: int):
    """(procmem JSON bodies, OTLP protobuf bodies) of the same `count` sessions, BATCH a request."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench-agent")
    procmem_bodies, otlp_bodies = [], []
    for start in range(0, count, BATCH):
        items = []
        exporter.clear()
        for n in range(start, min(start + BATCH, count)):
            order = f"ORD-{10000 + n % 90000}"
            task = f"Hi, I'm Anna Schmidt (anna.schmidt{n % 97}@example.com, +1 415 555 {1000 + n % 9000}). Refund {order} please."
            calls = [
                ("lookupOrder", {"order_id": order}),
                ("checkReturnWindow", {"order_id": order}),
                ("createApproval", {"order_id": order, "amount": 120 + n % 500}),
                ("replyTemplates", {"template": "approval_pending", "order_id": order}),
            ]
            conversation = f"{run}-{n}"
            common = {"gen_ai.conversation.id": conversation}
            with tracer.start_as_current_span(
                "invoke_agent support", attributes={"gen_ai.operation.name": "invoke_agent", **common}
            ) as root:
                with tracer.start_as_current_span(
                    "chat bench-model",
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.request.model": "bench-model",
                        "gen_ai.input.messages": json.dumps(
                            [{"role": "user", "parts": [{"type": "text", "content": task}]}]
                        ),
                        **common,
                    },
                ):
                    pass
                for name, args in calls:
                    with tracer.start_as_current_span(
                        f"execute_tool {name}",
                        attributes={
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": name,
                            "gen_ai.tool.call.arguments": json.dumps(args),
                            "gen_ai.tool.call.result": '{"status": "ok"}',
                            **common,
                        },
                    ):
                        pass
                with tracer.start_as_current_span(
                    "chat bench-model",
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.request.model": "bench-model",
                        "gen_ai.output.messages": json.dumps(
                            [{"role": "assistant", "parts": [{"type": "text", "content": "Approved."}]}]
                        ),
                        **common,
                    },
                ):
                    pass
            ended = root.end_time / 1e9
            items.append(
                {
                    "session_id": conversation,
                    "task": task,
                    "reply": "Approved.",
                    "model": "bench-model",
                    "ended_at": ended,
                    "tool_calls": [
                        {"name": name, "args": args, "ok": True, "result": {"status": "ok"}} for name, args in calls
                    ],
                }
            )
        procmem_bodies.append(json.dumps({"sessions": items}).encode())
        otlp_bodies.append(encode_spans(exporter.get_finished_spans()).SerializeToString())
    provider.shutdown()
    return procmem_bodies, otlp_bodies


def _cpu_seconds(pids: list[int]) -> dict[int, float]:
    """User + system CPU seconds each process has used so far (/proc/<pid>/stat)."""
    used = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        used[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return used


def _used(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds used between the two readings by the processes alive at both (a database
    connection closed and replaced during the phase is not counted)."""
    return sum(after[pid] - before[pid] for pid in before if pid in after and after[pid] >= before[pid])


def _workers(server_pid: int) -> list[int]:
    try:
        return [int(pid) for pid in Path(f"/proc/{server_pid}/task/{server_pid}/children").read_text().split()]
    except OSError:
        return []


def _backends(db: str) -> list[int]:
    """The PostgreSQL server processes of the connections to the bench database."""
    import psycopg

    with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{db}") as conn:
        return [
            row[0]
            for row in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [db]
            )
        ]


def measured_phase(server_pid: int, db: str, port: int, requests: list, clients: int, seconds: float) -> dict:
    """hammer() plus the CPU seconds the phase cost: this (client) process, the gunicorn workers and
    the database's server processes (procfs; the machine's other load is not counted)."""
    workers, backends = _workers(server_pid), _backends(db)
    client, server, database = time.process_time(), _cpu_seconds(workers), _cpu_seconds(backends)
    result = hammer(port, requests, clients, seconds)
    result["cpu"] = {
        "client": round(time.process_time() - client, 2),
        "server": round(_used(server, _cpu_seconds(workers)), 2),
        "postgres": round(_used(database, _cpu_seconds(backends)), 2),
    }
    return result


def analyze(db: str) -> None:
    """Fresh planner statistics for the tables the two endpoints read, as autovacuum keeps them in
    a deployment (it is off on the shared machine's PostgreSQL): without them the look-up of a
    batch's session ids among the agent's sessions is planned as a scan of all of them, a cost
    that grows with every round and with every look-up a request makes."""
    import psycopg

    with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{db}", autocommit=True) as conn:
        conn.execute("ANALYZE library_agentsession, library_otlpspan, library_apitoken, library_agent")


def stored(db: str, prefix: str) -> int:
    import psycopg

    with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{db}") as conn:
        return conn.execute(
            "SELECT count(*) FROM library_agentsession WHERE session_id LIKE %s", [prefix + "%"]
        ).fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="procmem_bench_otlp")
    parser.add_argument("--port", type=int, default=8031)
    parser.add_argument("--sessions", type=int, default=3000, help="sessions per endpoint per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=120, help="time limit of one phase")
    parser.add_argument(
        "--gzip", action="store_true", help="send the OTLP bodies gzip-compressed (OTEL_EXPORTER_OTLP_COMPRESSION=gzip)"
    )
    args = parser.parse_args()

    token = prepare(args.db)
    env = {**server_env(args.db), "PROCMEM_OTLP_QUIET_SECONDS": "0", "PROCMEM_RATE_LIMITS": "0"}
    stamp = int(time.time())
    rounds = []
    for r in range(args.rounds):
        rounds.append((f"p{stamp}r{r}", f"o{stamp}r{r}", *sessions(f"o{stamp}r{r}", args.sessions)))
    # the procmem side's ids: the same sessions under their own prefix
    rounds = [(pp, op, [b.replace(op.encode(), pp.encode()) for b in pb], ob) for pp, op, pb, ob in rounds]
    warm_procmem, warm_otlp = sessions(f"w{stamp}", 4 * BATCH)
    warm_procmem = [b.replace(f"w{stamp}".encode(), f"v{stamp}".encode()) for b in warm_procmem]
    results = []
    with serving(env, args.port) as server:
        hammer(args.port, [("GET", "/api/v1/health", None, {})] * 50, args.clients, 30)
        json_headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        pb_headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-protobuf"}
        if args.gzip:
            import gzip

            pb_headers["Content-Encoding"] = "gzip"
            rounds = [(pp, op, pb, [gzip.compress(b) for b in ob]) for pp, op, pb, ob in rounds]
            warm_otlp = [gzip.compress(b) for b in warm_otlp]
        # each endpoint's first requests in each worker (what it loads and caches on first use) are
        # not measured: two requests to each, more than one per worker
        hammer(
            args.port, [("POST", "/api/v1/sessions", b, json_headers) for b in warm_procmem], args.clients, args.seconds
        )
        hammer(
            args.port, [("POST", "/api/otlp/v1/traces", b, pb_headers) for b in warm_otlp], args.clients, args.seconds
        )
        for number, (procmem_prefix, otlp_prefix, procmem_bodies, otlp_bodies) in enumerate(rounds):
            analyze(args.db)
            # which endpoint goes first alternates (the database's background work after a phase
            # of inserts falls on either side equally)
            phases = [
                ("ingest", "/api/v1/sessions", procmem_bodies, json_headers),
                ("otlp", "/api/otlp/v1/traces", otlp_bodies, pb_headers),
            ]
            measured = {}
            for name, path, bodies_, headers in phases if number % 2 == 0 else phases[::-1]:
                measured[name] = measured_phase(
                    server.pid,
                    args.db,
                    args.port,
                    [("POST", path, b, headers) for b in bodies_],
                    args.clients,
                    args.seconds,
                )
            ingest, otlp = measured["ingest"], measured["otlp"]
            ingest_rate = stored(args.db, procmem_prefix) / ingest["seconds"]
            otlp_rate = stored(args.db, otlp_prefix) / otlp["seconds"]
            # CPU milliseconds per stored session, each side: load-independent where the wall clock is not
            cpu_ms = {
                side: {k: round(1000 * v / max(1, stored(args.db, prefix)), 2) for k, v in phase["cpu"].items()}
                for side, phase, prefix in (("ingest", ingest, procmem_prefix), ("otlp", otlp, otlp_prefix))
            }
            results.append(
                {
                    "ingest_sessions_per_s": round(ingest_rate, 1),
                    "otlp_sessions_per_s": round(otlp_rate, 1),
                    "ratio": round(otlp_rate / ingest_rate, 2),
                    "cpu_ms_per_session": cpu_ms,
                    "ingest": ingest,
                    "otlp": otlp,
                    "stored": {"ingest": stored(args.db, procmem_prefix), "otlp": stored(args.db, otlp_prefix)},
                }
            )
            print(json.dumps(results[-1]), flush=True)
    import statistics

    server_cpu = {
        side: round(statistics.median(r["cpu_ms_per_session"][side]["server"] for r in results), 2)
        for side in ("ingest", "otlp")
    }
    print(
        json.dumps(
            {
                "rounds": len(results),
                "sessions_per_round": args.sessions,
                "clients": args.clients,
                "workers": 2,
                "gzip": args.gzip,
                "median_ratio": round(statistics.median(r["ratio"] for r in results), 2),
                "ratios": [r["ratio"] for r in results],
                "median_server_cpu_ms_per_session": server_cpu,
                "load_average": os.getloadavg(),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
