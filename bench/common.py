"""Shared plumbing of the serving benchmarks (active set, selection): a fresh PostgreSQL bench database seeded through the
fast path, the SELECT-only role, a read token, and gunicorn on 127.0.0.1."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
OUT = ROOT / "bench" / "out"


def admin_url(database_url: str) -> str:
    parsed = urlparse(database_url)
    return parsed._replace(path="/postgres").geturl()


def recreate_database(database_url: str) -> None:
    import psycopg

    name = urlparse(database_url).path.lstrip("/")
    if not re.fullmatch(r"[a-z0-9_]+", name):
        raise SystemExit(f"bench database name {name!r}: use lower-case letters, digits and _")
    with psycopg.connect(admin_url(database_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def django_env(database_url: str, readonly_url: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="bench.settings",
        DATABASE_URL=database_url,
        DB_CONN_MAX_AGE="600",
        HF_HUB_OFFLINE="1",
        PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "clients" / "python")]),  # the checkout's client package
    )
    if readonly_url:
        env["READONLY_DATABASE_URL"] = readonly_url
    return env


def manage(env: dict[str, str], *args: str) -> str:
    completed = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{completed.stderr[-3000:]}")
    return completed.stdout


def prepare(database_url: str, agents: dict[str, int], role: str) -> tuple[dict[str, str], dict[str, str]]:
    """A fresh database with `agents` (name → ACTIVE count), the read-only role, and a read token
    per agent. Returns (env for gunicorn, tokens)."""
    recreate_database(database_url)
    env = django_env(database_url)
    manage(env, "migrate", "--noinput")
    seed_code = "import django; django.setup(); from bench.seed_active import seed_active_procedures; " + "; ".join(
        f"seed_active_procedures(agent_name={name!r}, count={count})" for name, count in agents.items()
    )
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", seed_code], cwd=ROOT, env=env, check=True)
    print(f"seeded {agents} in {time.perf_counter() - started:.1f} s", flush=True)
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:  # fresh statistics, as autovacuum would give
        conn.execute("ANALYZE")
    manage(env, "create_readonly_role", role, "--no-password")
    tokens = {name: manage(env, "tokens", "create", name, "--scope", "read").strip() for name in agents}
    readonly_url = (
        urlparse(database_url)
        ._replace(netloc=f"{role}@{urlparse(database_url).hostname}:{urlparse(database_url).port or 5432}")
        .geturl()
    )
    return django_env(database_url, readonly_url), tokens


def drop_role(database_url: str, role: str) -> None:
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'DROP OWNED BY "{role}"')
    with psycopg.connect(admin_url(database_url), autocommit=True) as conn:
        conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def ensure_database(database_url: str) -> None:
    """Creates the database when it does not exist (a bench that keeps its data between runs)."""
    import psycopg

    name = urlparse(database_url).path.lstrip("/")
    with psycopg.connect(admin_url(database_url), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def answers(url: str) -> bool:
    """Whether a GET of `url` succeeds now (a server that is up and ready)."""
    try:
        urllib.request.urlopen(url, timeout=2).read()
        return True
    except OSError:
        return False


def stop(process: subprocess.Popen) -> None:
    """SIGTERM, and SIGKILL when the process has not ended 20 s later."""
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


@contextmanager
def serve(
    args: list[str],
    env: dict[str, str],
    *,
    log_path: Path,
    ready: Callable[[], bool],
    deadline: float = 180,
    poll: float = 0.2,
):
    """gunicorn serving procmem_site.wsgi with `args`, its output in `log_path`: yields the process
    once `ready()` is true, and stops it after."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "procmem_site.wsgi", *args],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        until = time.monotonic() + deadline
        while not ready():
            if process.poll() is not None or time.monotonic() > until:
                raise SystemExit(f"gunicorn did not get ready: {log_path.read_text()[-2000:]}")
            time.sleep(poll)
        yield process
    finally:
        stop(process)
        log.close()


@contextmanager
def gunicorn(env: dict[str, str], *, port: int, workers: int = 2, timeout: int = 600, threads: int | None = None):
    """The bench settings' app on 127.0.0.1:`port`, ready once /bench/trivial answers (each worker
    loads the embedding model before it serves: procmem_site/warmup.py)."""
    args = [
        "--workers",
        str(workers),
        "--bind",
        f"127.0.0.1:{port}",
        "--timeout",
        str(timeout),
        "--log-level",
        "warning",
        "--keep-alive",
        "5",
        *(["--threads", str(threads)] if threads else []),
    ]
    with serve(
        args,
        env,
        log_path=OUT / f"gunicorn-{port}.log",
        ready=lambda: answers(f"http://127.0.0.1:{port}/bench/trivial"),
    ) as process:
        yield process


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of process `pid` and of its live children (gunicorn's workers), from
    /proc: what a server spent, to set against the requests it answered."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        if int(stat.parent.name) == pid or int(fields[1]) == pid:  # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def machine() -> str:
    cpus = os.cpu_count()
    load = os.getloadavg()
    return f"{cpus} CPUs, load average {load[0]:.1f} at start (the machine is shared with other sessions)"


def append_results(section: str) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    existing = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    RESULTS.write_text(existing.rstrip("\n") + "\n\n" + section.replace("{stamp}", stamp).rstrip("\n") + "\n")
