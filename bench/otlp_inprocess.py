"""OTLP ingestion against POST /api/v1/sessions in one process, through Django's whole request path
(WSGI handler, middleware, view, PostgreSQL) but no socket and no other process: where the server
spends its time on each side, apart from gunicorn, the network and the client (docs/benchmarks.md).

    .venv/bin/python -m bench.otlp_inprocess [--db procmem_bench_otlp] [--sessions 1000] [--rounds 3]
                                             [--gzip] [--profile 25]

The same sessions as bench.otlp_bench (recorded by the real OpenTelemetry SDK, 7 spans a session,
100 a request; the procmem side in its own format), PROCMEM_OTLP_QUIET_SECONDS=0, production
settings. Each request is one WSGI call with the body in `wsgi.input`, as gunicorn hands it over.
Rounds alternate which endpoint goes first; per round the seconds of each side (wall, this
process's CPU and its PostgreSQL server process's CPU) and two ratios are printed: of sessions/s
(wall), and of CPU per session (this process + the database's), which the machine's other load
changes far less than the wall clock. With --profile N, one more round of each
runs under cProfile and the N functions with the most own time are printed per side.
"""

from __future__ import annotations

import argparse
import cProfile
import gzip as gzip_module
import io
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.ingest_bench import prepare  # noqa: E402


def _environ(path: str, body: bytes, headers: dict[str, str]) -> dict:
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8031",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0),
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for name, value in headers.items():
        key = name.upper().replace("-", "_")
        environ[key if key == "CONTENT_TYPE" else f"HTTP_{key}"] = value
    return environ


def _backend_cpu() -> float:
    """CPU seconds used so far by this process's PostgreSQL server process (procfs)."""
    from django.db import connection

    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(app, path: str, bodies: list[bytes], headers: dict[str, str]) -> dict:
    statuses: dict[int, int] = {}

    def start_response(status, _headers, exc_info=None):
        statuses[int(status[:3])] = statuses.get(int(status[:3]), 0) + 1

    wall, cpu, db_cpu = time.perf_counter(), time.process_time(), _backend_cpu()
    for body in bodies:
        response = app(_environ(path, body, headers), start_response)
        b"".join(response)
        getattr(response, "close", lambda: None)()
    return {
        "seconds": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "db_cpu": _backend_cpu() - db_cpu,
        "statuses": statuses,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="procmem_bench_otlp")
    parser.add_argument("--sessions", type=int, default=1000, help="sessions per endpoint per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gzip", action="store_true", help="gzip the OTLP bodies")
    parser.add_argument("--profile", type=int, default=0, help="print the N functions with most own time per side")
    args = parser.parse_args()

    os.environ.update({"PROCMEM_OTLP_QUIET_SECONDS": "0", "PROCMEM_RATE_LIMITS": "0"})
    token = prepare(args.db)
    from django.core.wsgi import get_wsgi_application

    from bench.otlp_bench import sessions

    app = get_wsgi_application()
    json_headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    pb_headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-protobuf"}
    if args.gzip:
        pb_headers["Content-Encoding"] = "gzip"
    stamp = int(time.time())

    def bodies(tag: str):
        procmem, otlp = sessions(f"i{stamp}{tag}", args.sessions)
        procmem = [b.replace(f"i{stamp}{tag}".encode(), f"j{stamp}{tag}".encode()) for b in procmem]
        return procmem, [gzip_module.compress(b) for b in otlp] if args.gzip else otlp

    # warm: imports, connections, caches (one request each)
    warm_procmem, warm_otlp = bodies("w")
    run(app, "/api/v1/sessions", warm_procmem[:1], json_headers)
    run(app, "/api/otlp/v1/traces", warm_otlp[:1], pb_headers)
    print(
        json.dumps({"body_bytes_per_request": {"procmem": len(warm_procmem[0]), "otlp": len(warm_otlp[0])}}), flush=True
    )
    ratios: list[float] = []
    cpu_ratios: list[float] = []
    for number in range(args.rounds):
        procmem_bodies, otlp_bodies = bodies(f"r{number}")
        sides = [
            ("procmem", "/api/v1/sessions", procmem_bodies, json_headers),
            ("otlp", "/api/otlp/v1/traces", otlp_bodies, pb_headers),
        ]
        measured = {}
        for name, path, bodies_, headers in sides if number % 2 == 0 else sides[::-1]:
            measured[name] = run(app, path, bodies_, headers)
        ratio = measured["procmem"]["seconds"] / measured["otlp"]["seconds"]
        ratios.append(ratio)
        # CPU (this process + its database server process) per session: what the machine's other load changes least
        cpu_ms = {k: 1000 * (v["cpu"] + v["db_cpu"]) / args.sessions for k, v in measured.items()}
        cpu_ratios.append(cpu_ms["procmem"] / cpu_ms["otlp"])
        print(
            json.dumps(
                {
                    "round": number + 1,
                    "first": "procmem" if number % 2 == 0 else "otlp",
                    "ratio": round(ratio, 2),
                    "cpu_ms_per_session": {k: round(v, 2) for k, v in cpu_ms.items()},
                    "cpu_ratio": round(cpu_ratios[-1], 2),
                    **{
                        k: {
                            "seconds": round(v["seconds"], 3),
                            "cpu": round(v["cpu"], 3),
                            "db_cpu": round(v["db_cpu"], 3),
                            "statuses": v["statuses"],
                            "ms_per_request": round(1000 * v["seconds"] / len(procmem_bodies), 1),
                        }
                        for k, v in measured.items()
                    },
                }
            ),
            flush=True,
        )
    summary = {
        "rounds": args.rounds,
        "sessions_per_round": args.sessions,
        "gzip": args.gzip,
        "median_ratio": round(statistics.median(ratios), 2),
        "ratios": [round(r, 2) for r in ratios],
        "median_cpu_ratio": round(statistics.median(cpu_ratios), 2),
        "cpu_ratios": [round(r, 2) for r in cpu_ratios],
        "load_average": os.getloadavg(),
    }
    print(json.dumps(summary), flush=True)
    if args.profile:
        procmem_bodies, otlp_bodies = bodies("p")
        for name, path, bodies_, headers in (
            ("procmem", "/api/v1/sessions", procmem_bodies, json_headers),
            ("otlp", "/api/otlp/v1/traces", otlp_bodies, pb_headers),
        ):
            profiler = cProfile.Profile()
            profiler.enable()
            run(app, path, bodies_, headers)
            profiler.disable()
            print(f"\n=== {name}: the {args.profile} functions with the most own time", flush=True)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile)


if __name__ == "__main__":
    main()
