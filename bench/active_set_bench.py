"""Benchmark: throughput of GET /api/v1/agents/{agent}/procedures with 1,000 ACTIVE
procedures on gunicorn with 2 workers, against a trivial JSON view of the same app in the same run.

    .venv/bin/python -m bench.active_set_bench [--count 1000] [--duration 10] [--connections 16]

Needs PostgreSQL (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/procmem_h6_bench;
the database is dropped and recreated) and `wrk` (apt-get install -y wrk). The set is read through
a SELECT-only role made by `manage.py create_readonly_role`, as in production. Rounds alternate
between the endpoints so that load from elsewhere on the machine hits them alike; the median of
the rounds is reported. Appends a section to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import urllib.request

from . import common

PORT = 8060


def wrk(url: str, *, duration: int, connections: int, threads: int, headers: dict[str, str]) -> tuple[float, str]:
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    completed = subprocess.run(command + [url], capture_output=True, text=True, check=True)
    match = re.search(r"Requests/sec:\s+([\d.]+)", completed.stdout)
    p50 = re.search(r"50%\s+([\d.]+\w+)", completed.stdout)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", completed.stdout)
    if non2xx:
        raise SystemExit(f"{url}: {non2xx.group(1)} error responses\n{completed.stdout}")
    return float(match.group(1)), p50.group(1) if p50 else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    database_url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/procmem_h6_bench")
    role = "procmem_h6_bench_reader"
    common.OUT.mkdir(parents=True, exist_ok=True)
    started_on = common.machine()

    env, tokens = common.prepare(database_url, {"bench_1k": args.count}, role)
    token = tokens["bench_1k"]
    base = f"http://127.0.0.1:{PORT}"
    set_url = f"{base}/api/v1/agents/bench_1k/procedures"
    try:
        with common.gunicorn(env, port=PORT, workers=2):
            # warm both workers: each builds the set once
            for _ in range(8):
                with urllib.request.urlopen(
                    urllib.request.Request(set_url, headers={"Authorization": f"Bearer {token}"})
                ) as r:
                    body = r.read()
                    etag = r.headers["ETag"]
            data = json.loads(body)
            assert len(data["procedures"]) == args.count, len(data["procedures"])
            same_size_file = common.OUT / "same-size.json"
            same_size_file.write_bytes(body)
            env["BENCH_SAME_SIZE_FILE"] = str(same_size_file)
        auth = {"Authorization": f"Bearer {token}"}
        results: dict[str, list[tuple[float, str]]] = {}
        # Two configurations: the default recheck window (1 s), and 0 (every request asks the database).
        for recheck in ("1", "0"):
            env["PROCMEM_ACTIVE_SET_RECHECK_SECONDS"] = recheck
            with common.gunicorn(env, port=PORT, workers=2):
                for _ in range(8):
                    urllib.request.urlopen(urllib.request.Request(set_url, headers=auth)).read()
                    urllib.request.urlopen(f"{base}/bench/same-size").read()
                targets = {
                    "trivial JSON view (no DB)": (f"{base}/bench/trivial", {}),
                    "same-size static body (no DB)": (f"{base}/bench/same-size", {}),
                    "active set, 200": (set_url, auth),
                    "active set, 200, Accept-Encoding: gzip": (set_url, {**auth, "Accept-Encoding": "gzip"}),
                    "active set, 304 (If-None-Match)": (set_url, {**auth, "If-None-Match": etag}),
                }
                if recheck == "0":
                    targets = {k: v for k, v in targets.items() if k.startswith("active set")}
                for round_number in range(args.rounds):
                    for name, (url, headers) in targets.items():
                        label = name if not name.startswith("active set") else f"{name} [recheck {recheck} s]"
                        rps, p50 = wrk(
                            url,
                            duration=args.duration,
                            connections=args.connections,
                            threads=args.threads,
                            headers=headers,
                        )
                        results.setdefault(label, []).append((rps, p50))
                        print(f"round {round_number + 1}: {label}: {rps:.0f} req/s (p50 {p50})", flush=True)
    finally:
        common.drop_role(database_url, role)

    median = {name: statistics.median(r for r, _ in runs) for name, runs in results.items()}
    trivial = median["trivial JSON view (no DB)"]
    same_size = median["same-size static body (no DB)"]
    lines = [
        "## Active set throughput ({stamp})",
        "",
        f"Command: `.venv/bin/python -m bench.active_set_bench --count {args.count} --duration {args.duration} "
        f"--connections {args.connections} --threads {args.threads} --rounds {args.rounds}`",
        "",
        f"gunicorn, 2 sync workers, 127.0.0.1; PostgreSQL read through the SELECT-only role; {args.count} ACTIVE "
        f"procedures, body {len(body):,} bytes; wrk -t{args.threads} -c{args.connections} -d{args.duration}s, "
        f"{args.rounds} alternating rounds, median. {started_on}.",
        "",
        "| endpoint | req/s (median) | p50 latency per round | vs trivial | vs same-size body |",
        "| --- | ---: | --- | ---: | ---: |",
    ]
    for name, runs in results.items():
        lines.append(
            f"| {name} | {median[name]:,.0f} | {', '.join(p for _, p in runs)} | {median[name] / trivial:.0%} | {median[name] / same_size:.0%} |"
        )
    lines += [
        "",
        f"Targets (default recheck window): the 200 path at least 70% of the trivial view: "
        f"**{median['active set, 200 [recheck 1 s]'] / trivial:.0%}** identity, "
        f"**{median['active set, 200, Accept-Encoding: gzip [recheck 1 s]'] / trivial:.0%}** gzip; "
        f"the 304 path at least 90%: **{median['active set, 304 (If-None-Match) [recheck 1 s]'] / trivial:.0%}**.",
    ]
    section = "\n".join(lines)
    common.append_results(section)
    print(section)


if __name__ == "__main__":
    sys.exit(main())
