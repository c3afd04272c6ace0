"""Benchmark of a fresh web process's first candidate page against the same page warm (issue 30).

The demo data in a fresh PostgreSQL database; then, for each round, a new gunicorn (1 worker,
production settings) is started and, once its worker says it is ready (the log line of
procmem_site/warmup.py), the mined candidate refund.over_limit v2 is requested once (the first
request of the process) and then `--warm` times (the warm page: median). The same is done with
PROCMEM_WARM_UP=0 (nothing loaded before the first request: the behaviour before issue 30),
alternating, so both see the same machine. Reported: first ÷ warm per setting (target ≤ 2× with the
warm-up), and how long the worker took from start to ready.

With `--in-process N`, N more fresh processes per setting run bench/first_request.py on the same
database: the WSGI application called in-process (no gunicorn, no socket), its first request
against the median of its next ones — the same ratio with less of the machine's noise around it.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/procmem_bench_first_page \\
        .venv/bin/python -m bench.first_page [--rounds 3] [--warm 10] [--in-process 5] [--record]

The database named by DATABASE_URL is dropped and recreated (its name must start with procmem_bench).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from urllib.parse import urlparse

from bench.common import OUT, ROOT, append_results, django_env, machine, manage, recreate_database, serve

READY = "procmem web process ready"


def _session_cookie(env: dict[str, str]) -> tuple[str, str]:
    """The candidate page's path and a signed-in reviewer's session cookie (made in a child process
    on the bench database)."""
    code = (
        "import django; django.setup(); from django.conf import settings; from django.test import Client;"
        " from django.contrib.auth import get_user_model; from library.models import ProcedureVersion;"
        " v = ProcedureVersion.objects.get(procedure__key='refund.over_limit', number=2); c = Client();"
        " c.force_login(get_user_model().objects.get(username='reviewer'));"
        " print(f'/versions/{v.pk}/', settings.SESSION_COOKIE_NAME + '=' + c.cookies[settings.SESSION_COOKIE_NAME].value)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    path, cookie = out.split()[-2:]
    return path, cookie


def _get(url: str, cookie: str) -> float:
    request = urllib.request.Request(url, headers={"Cookie": cookie, "Host": "127.0.0.1"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        response.read()
        assert response.status == 200, response.status
    return (time.perf_counter() - started) * 1000


def _one_process(
    env: dict[str, str], *, warm_up: bool, port: int, path: str, cookie: str, warm: int
) -> dict[str, float]:
    log_path = OUT / f"first-page-{port}.log"
    args = ["--workers", "1", "--bind", f"127.0.0.1:{port}", "--timeout", "600", "--log-level", "warning"]
    env = {**env, "PROCMEM_WARM_UP": "1" if warm_up else "0", "LOG_LEVEL": "INFO"}
    started = time.perf_counter()
    with serve(args, env, log_path=log_path, ready=lambda: READY in log_path.read_text(), deadline=300, poll=0.05):
        ready_s = time.perf_counter() - started
        url = f"http://127.0.0.1:{port}{path}"
        first = _get(url, cookie)
        warm_ms = statistics.median(_get(url, cookie) for _ in range(warm))
        return {"ready_s": ready_s, "first": first, "warm": warm_ms}


def _in_process(env: dict[str, str], *, warm_up: bool, path: str, cookie: str, warm: int) -> dict[str, float]:
    completed = subprocess.run(
        [sys.executable, "-m", "bench.first_request", path, cookie, "--warm", str(warm)],
        cwd=ROOT,
        env={**env, "PROCMEM_WARM_UP": "1" if warm_up else "0"},
        capture_output=True,
        text=True,
    )
    if completed.returncode != 0:
        raise SystemExit(f"bench.first_request failed: {completed.stderr[-3000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--warm", type=int, default=10, help="warm requests per process (their median is the warm time)"
    )
    parser.add_argument("--port", type=int, default=8731)
    parser.add_argument(
        "--in-process",
        type=int,
        default=0,
        metavar="N",
        help="also N fresh in-process runs per setting (bench/first_request.py)",
    )
    parser.add_argument("--record", action="store_true", help="append the results to bench/RESULTS.md")
    args = parser.parse_args()
    database_url = os.environ.get("DATABASE_URL", "")
    if not urlparse(database_url).path.lstrip("/").startswith("procmem_bench"):
        raise SystemExit(
            "DATABASE_URL must name a PostgreSQL database whose name starts with procmem_bench (it is recreated)"
        )
    OUT.mkdir(parents=True, exist_ok=True)
    recreate_database(database_url)
    env = django_env(database_url)
    env.update(DEBUG="0", READONLY_DATABASE_URL="", STATIC_ROOT=str(OUT / "static"))  # production settings
    manage(env, "migrate", "--noinput")
    manage(env, "collectstatic", "--noinput")  # production settings serve the hashed files (whitenoise's manifest)
    manage(env, "seed_demo")
    # every version's appliesWhen vector stored: the ACTIVE ones' as the scheduled conflict scan
    # (Celery beat) leaves them in production, the candidates' as their first view ever does (the
    # scan compares only what is served; round 1 measured that one-time embedding, 7-22x, before):
    # the rounds measure a fresh process, not a version's first view
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from library.models import Agent, ProcedureVersion;"
            " from library.conflicts import conflicts_scan; from library.embeddings import version_vectors;"
            " [conflicts_scan(agent=a) for a in Agent.objects.all()]; version_vectors(ProcedureVersion.objects.all())",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    path, cookie = _session_cookie(env)
    results: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for _ in range(args.rounds):
        for warm_up in (True, False):
            results[warm_up].append(
                _one_process(env, warm_up=warm_up, port=args.port, path=path, cookie=cookie, warm=args.warm)
            )
    in_process: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for _ in range(args.in_process):
        for warm_up in (True, False):
            in_process[warm_up].append(_in_process(env, warm_up=warm_up, path=path, cookie=cookie, warm=args.warm))
    lines = [
        f"{{stamp}} · PostgreSQL · {machine()} · {args.rounds} fresh gunicorn processes per setting (1 worker, production"
        f" settings), alternating; first request of each, then the median of {args.warm} warm ones; the demo's candidate"
        f" refund.over_limit v2 (`{path}`) as the demo reviewer",
        "",
        "| setting | worker start to ready, s | first page, ms | warm page, ms | first ÷ warm |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    ratios = {}
    for warm_up, label in ((True, "warm-up at start (default)"), (False, "`PROCMEM_WARM_UP=0` (before issue 30)")):
        runs = results[warm_up]
        ready, first, warm = (statistics.median(r[key] for r in runs) for key in ("ready_s", "first", "warm"))
        ratios[warm_up] = statistics.median(r["first"] / r["warm"] for r in runs)
        each = ", ".join(f"{r['first'] / r['warm']:.2f}" for r in runs)
        lines.append(f"| {label} | {ready:.1f} | {first:.0f} | {warm:.0f} | {ratios[warm_up]:.2f}× (each: {each}) |")
    if args.in_process:
        lines += [
            "",
            f"In-process ({args.in_process} fresh processes per setting: `procmem_site.wsgi` imported, the WSGI application"
            " called without a server; bench/first_request.py):",
            "",
            "| setting | import to ready, s | first page, ms | warm page, ms | first ÷ warm | the process's CPU time: first ÷ warm |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for warm_up, label in ((True, "warm-up at start (default)"), (False, "`PROCMEM_WARM_UP=0`")):
            runs = in_process[warm_up]
            ready, first, warm = (statistics.median(r[key] for r in runs) for key in ("ready_s", "first", "warm"))
            each = ", ".join(f"{r['ratio']:.2f}" for r in runs)
            cpu = statistics.median(r["cpu_ratio"] for r in runs)
            lines.append(
                f"| {label} | {ready:.1f} | {first:.0f} | {warm:.0f} | {statistics.median(r['ratio'] for r in runs):.2f}× (each: {each}) | {cpu:.2f}× |"
            )
    lines += [
        "",
        f"Target first ≤ 2× warm with the warm-up: {'met' if ratios[True] <= 2 else 'NOT met'} ({ratios[True]:.2f}×).",
    ]
    report = "\n".join(lines)
    print(report.replace("{stamp}", time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
    if args.record:
        command = f"DATABASE_URL={database_url} .venv/bin/python -m bench.first_page {' '.join(sys.argv[1:])}"
        append_results(f"## First candidate page of a fresh web process ({{stamp}})\n\n`{command}`\n\n{report}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
