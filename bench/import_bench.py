"""Benchmark: manage.py import_sessions streams a file with constant memory (docs/benchmarks.md).

    .venv/bin/python bench/import_bench.py [--db procmem_bench_import] [--sizes 10000,100000]

Writes procmem JSONL files of the given sizes (and the same sessions as one JSON list), imports
each into a fresh agent of a dedicated database in a fresh process, and reports time, sessions/s
and the process's peak RSS. Flat peak RSS across sizes shows the import streams.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import recreate_database  # noqa: E402


def write(path: Path, size: int, as_list: bool) -> None:
    with path.open("w") as handle:
        if as_list:
            handle.write("[\n")
        for n in range(size):
            order = f"ORD-{10000 + n % 90000}"
            item = {
                "session_id": f"i-{n}",
                "intent": f"intent_{n % 8}",
                "task": f"Hi, I'm Anna Schmidt (anna{n % 97}@example.com). Refund {order} please. "
                + "More context. " * 20,
                "outcome": {"resolved": n % 4 != 1, "escalated": False},
                "tool_calls": [
                    {"name": t, "args": {"order_id": order, "note": "x" * 200}, "ok": True}
                    for t in ("lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates")
                ],
                "model": "bench-model",
                "ended_at": "2026-11-29T10:00:00Z",
            }
            handle.write(json.dumps(item) + (",\n" if as_list and n < size - 1 else "\n"))
        if as_list:
            handle.write("]\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="procmem_bench_import")
    parser.add_argument("--sizes", default="10000,100000")
    args = parser.parse_args()
    database_url = f"postgres://postgres@127.0.0.1:5432/{args.db}"
    recreate_database(database_url)
    env = dict(
        os.environ,
        DATABASE_URL=database_url,
        DEBUG="1",
        HF_HUB_OFFLINE="1",
        CELERY_BROKER_URL="memory://",
        LOG_LEVEL="WARNING",
    )
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in [int(s) for s in args.sizes.split(",")]:
            for as_list in (False, True):
                path = Path(tmp) / f"s{size}.{'json' if as_list else 'jsonl'}"
                write(path, size, as_list)
                agent = f"import_{size}_{'list' if as_list else 'lines'}"
                started = time.perf_counter()
                out = subprocess.run(
                    [
                        "/usr/bin/time",
                        "-f",
                        "%M",
                        sys.executable,
                        "manage.py",
                        "import_sessions",
                        str(path),
                        "--agent",
                        agent,
                        "--create-agent",
                        "--no-progress",
                    ],
                    cwd=ROOT,
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                )
                seconds = time.perf_counter() - started
                rss_mb = int(out.stderr.strip().splitlines()[-1]) / 1024
                rows.append(
                    (
                        size,
                        "JSON list" if as_list else "JSON Lines",
                        path.stat().st_size / 2**20,
                        seconds,
                        size / seconds,
                        rss_mb,
                    )
                )
                print(out.stdout.strip(), flush=True)
    print()
    print("| sessions | file | file size (MB) | time (s) | sessions/s | peak RSS (MB) |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    for size, kind, mb, seconds, rate, rss in rows:
        print(f"| {size:,} | {kind} | {mb:.0f} | {seconds:.1f} | {rate:,.0f} | {rss:.0f} |")


if __name__ == "__main__":
    main()
