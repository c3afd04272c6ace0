"""Benchmark: POST /api/v1/sessions with batches of 100 on 2 gunicorn workers (docs/benchmarks.md).

    .venv/bin/python bench/ingest_bench.py [--db procmem_bench_ingest] [--port 8030] [--sessions 30000]
                                           [--seconds 90] [--clients 4]

Starts gunicorn (2 sync workers, production settings, PostgreSQL, persistent DB connections) on
127.0.0.1, creates an ingest token, and in the same run measures:

- baseline: GET /api/v1/health (a trivial endpoint: token-free, one SELECT 1) — requests/second;
- ingest:   POST /api/v1/sessions, 100 new sessions per request (procmem format, each with a task
            that carries a name, an e-mail, a phone number and an order id, four tool calls), from
            --clients concurrent client threads — sessions/second.

Both are bounded by a count and a time limit, whichever comes first. Request bodies are built
before the clock starts. The client runs on the same 2-core machine as the server and the database.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench import common  # noqa: E402


def server_env(db: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{db}",
        DEBUG="0",
        SECRET_KEY="bench-only-secret-key-0123456789abcdefghijklmnopqrstuvwxyz",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        SECURE_SSL_REDIRECT="0",
        BEHIND_TLS_PROXY="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
        SECURE_HSTS_SECONDS="0",
        DB_CONN_MAX_AGE="60",
        CELERY_BROKER_URL="memory://",
        LOG_LEVEL="WARNING",
        HF_HUB_OFFLINE="1",
        DJANGO_SETTINGS_MODULE="procmem_site.settings",
    )
    return env


def serving(env: dict[str, str], port: int):
    """gunicorn (2 sync workers) on 127.0.0.1:`port` with `env`, ready once /api/v1/health answers;
    its output in bench/out/gunicorn-<port>.log."""
    args = ["--workers", "2", "--bind", f"127.0.0.1:{port}", "--log-level", "warning"]
    return common.serve(
        args,
        env,
        log_path=common.OUT / f"gunicorn-{port}.log",
        ready=lambda: common.answers(f"http://127.0.0.1:{port}/api/v1/health"),
    )


def prepare(db: str) -> str:
    """Creates the database, migrates it, makes the agent and returns a fresh ingest token."""
    common.ensure_database(server_env(db)["DATABASE_URL"])
    os.environ.update(server_env(db))
    import django

    django.setup()
    from django.core.management import call_command

    from library.api.tokens import token_create
    from library.models import Agent

    call_command("migrate", verbosity=0)
    agent, _ = Agent.objects.get_or_create(
        name="bench_ingest",
        defaults={
            "tools": ["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"],
            "redaction_patterns": [{"label": "order_id", "regex": r"\bORD-\d{4,}\b"}],
        },
    )
    return token_create(agent=agent, scope="ingest", name="bench")[1]


def bodies(run: str, batches: int, size: int) -> list[bytes]:
    out = []
    for b in range(batches):
        items = []
        for i in range(size):
            n = b * size + i
            order = f"ORD-{10000 + n % 90000}"
            items.append(
                {
                    "session_id": f"{run}-{n}",
                    "intent": f"intent_{n % 8}",
                    "task": f"Hi, I'm Anna Schmidt (anna.schmidt{n % 97}@example.com, +1 415 555 {1000 + n % 9000}). Refund {order} please.",
                    "outcome": {"resolved": n % 4 != 1, "escalated": False, "rating": 4},
                    "tool_calls": [
                        {"name": "lookupOrder", "args": {"order_id": order}, "ok": True},
                        {"name": "checkReturnWindow", "args": {"order_id": order}, "ok": True},
                        {"name": "createApproval", "args": {"order_id": order, "amount": 120 + n % 500}, "ok": True},
                        {
                            "name": "replyTemplates",
                            "args": {"template": "approval_pending", "order_id": order},
                            "ok": True,
                        },
                    ],
                    "injected": [{"id": "refund.over_limit", "version": 2}],
                    "instruction_chars": 2000,
                    "model": "bench-model",
                    "ended_at": "2026-11-29T10:00:00Z",
                }
            )
        out.append(json.dumps({"sessions": items}).encode())
    return out


def hammer(port: int, requests: list[tuple[str, str, bytes | None, dict]], clients: int, seconds: float) -> dict:
    """Sends the requests from `clients` threads until all are sent or time is up."""
    lock = threading.Lock()
    state = {"next": 0, "ok": 0, "errors": 0, "statuses": {}}
    deadline = time.perf_counter() + seconds

    def worker():
        while time.perf_counter() < deadline:
            with lock:
                if state["next"] >= len(requests):
                    return
                method, path, body, headers = requests[state["next"]]
                state["next"] += 1
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                with lock:
                    state["statuses"][response.status] = state["statuses"].get(response.status, 0) + 1
                    state["ok" if response.status == 200 else "errors"] += 1
            finally:
                conn.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return {
        "requests_ok": state["ok"],
        "errors": state["errors"],
        "statuses": state["statuses"],
        "seconds": round(elapsed, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="procmem_bench_ingest")
    parser.add_argument("--port", type=int, default=8030)
    parser.add_argument("--sessions", type=int, default=30000)
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--baseline-requests", type=int, default=5000)
    args = parser.parse_args()

    token = prepare(args.db)
    run = f"r{int(time.time())}"
    payloads = bodies(run, args.sessions // 100, 100)
    with serving(server_env(args.db), args.port):
        # warm both workers (imports, DB connections) before measuring
        hammer(args.port, [("GET", "/api/v1/health", None, {})] * 50, args.clients, 30)
        baseline = hammer(
            args.port, [("GET", "/api/v1/health", None, {})] * args.baseline_requests, args.clients, args.seconds / 3
        )
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        ingest = hammer(
            args.port, [("POST", "/api/v1/sessions", body, headers) for body in payloads], args.clients, args.seconds
        )
    sessions_per_s = ingest["requests_ok"] * 100 / ingest["seconds"]
    result = {
        "baseline_health_rps": round(baseline["requests_ok"] / baseline["seconds"], 1),
        "baseline": baseline,
        "ingest_sessions_per_s": round(sessions_per_s, 1),
        "ingest_requests_per_s": round(ingest["requests_ok"] / ingest["seconds"], 2),
        "ingest": ingest,
        "clients": args.clients,
        "workers": 2,
        "batch": 100,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
