"""`make demo`: migrate, seed, then run a Celery worker (filesystem broker, embedded beat) and the
web server on http://127.0.0.1:8000 (DEMO_HOST, DEMO_PORT) until Ctrl-C, which stops both and exits 0.

The children run in their own process group, so a terminal's Ctrl-C reaches only this process,
which stops them in order (otherwise a child dying of the same SIGINT first looked like a crash and
`make` reported "Error 1"). "Where to click first" is printed once the web server answers.

Runs on the embedded defaults (SQLite and kombu's filesystem transport under var/) unless
DATABASE_URL / CELERY_BROKER_URL say otherwise."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def where_to_click_first(base: str) -> str:
    """What `make demo` prints once the server starts: the three pages that tell the demo's story."""
    return f"""
procmem demo: {base}/  (Ctrl-C stops the web server and the worker)

Where to click first:
  1. {base}/queue/
     sign in as reviewer: the mined candidate refund.over_limit v2 waits for review; its evidence
     says createApproval was called in 118 of 140 resolved and 9 of 60 failed sessions.
  2. {base}/ops/agents/support_agent/metrics/
     sign in as admin: 30 days of sessions; order.status v2 was approved 12 days ago and the order
     questions' resolution rate rose from about 54% to 90% (click order.status for its charts).
  3. {base}/agents/support_agent/settings/  and  {base}/agents/support_agent/webhooks/
     as admin: the agent's switches and limits, and webhooks (send a test to any local receiver).
  4. {base}/agents/support_agent/playground/
     as reviewer: a German and a Japanese customer's task select the English procedures (click them).
"""


# reembed_library: a demo database seeded before EMBEDDING_BACKEND's default changed (an upgrade)
# holds no vectors of the configured model, and select answered 503 embeddings_not_ready until it
# ran; on a fresh or current database it finds nothing to do. refresh_metrics: the demo sessions
# show on the metrics pages at once, not after the first beat tick.
SETUP_STEPS = (["migrate", "--noinput", "-v", "0"], ["seed_demo"], ["reembed_library"], ["refresh_metrics"])


def address_problem(host: str, port: str) -> str | None:
    """Why the web server could not serve on host:port, said before the migrations and the seed run
    (runserver's own "That port is already in use" came minutes later, after them, and the runner
    then said only that a demo process exited). None when the address is free."""
    try:
        number = int(port)
    except ValueError:
        return f"DEMO_PORT must be a port number; got {port!r}."
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as runserver binds it
        try:
            sock.bind((host, number))
        except OSError as exc:
            return (
                f"The demo cannot serve on {host}:{number}: {exc.strerror or exc}. If another program "
                f"(or another demo) uses the port, choose another: DEMO_PORT={number + 1} make demo"
            )
    return None


def wait_until_served(url: str, children: list[subprocess.Popen], timeout: float = 300) -> bool:
    """True once `url` answers (any HTTP status); False when a child exits or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(child.poll() is not None for child in children):
            return False
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            time.sleep(0.5)
    return False


def main() -> int:
    env = dict(os.environ)
    env.setdefault("DEBUG", "1")
    env.setdefault("DJANGO_SETTINGS_MODULE", "procmem_site.settings")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("PROCMEM_WEBHOOK_ALLOW_LOCAL", "1")  # the demo's webhook receivers are local
    host = os.environ.get("DEMO_HOST", "127.0.0.1")
    port = os.environ.get("DEMO_PORT", "8000")
    problem = address_problem(host, port)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    var = Path(env.get("PROCMEM_VAR_DIR", ROOT / "var"))
    (var / "celery").mkdir(parents=True, exist_ok=True)
    manage = [sys.executable, str(ROOT / "manage.py")]
    for step in SETUP_STEPS:
        subprocess.run(manage + step, env=env, cwd=ROOT, check=True)
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "procmem_site",
            "worker",
            "-B",
            "--loglevel",
            "INFO",
            "--concurrency",
            "2",
            "--schedule",
            str(var / "celerybeat-schedule"),
        ],
        env=env,
        cwd=ROOT,
        process_group=0,
    )
    web = subprocess.Popen(manage + ["runserver", "--noreload", f"{host}:{port}"], env=env, cwd=ROOT, process_group=0)
    children = [web, worker]
    print(f"Starting the web server on http://{host}:{port}/ (DEMO_PORT sets the port) ...", flush=True)

    def stop(*_):
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()

    signal.signal(signal.SIGTERM, lambda *_: (stop(), sys.exit(0)))
    try:
        if wait_until_served(f"http://{host}:{port}/accounts/login/", children):
            print(where_to_click_first(f"http://{host}:{port}"), flush=True)
        while all(child.poll() is None for child in children):
            time.sleep(0.5)
        print("A demo process exited; stopping the other.", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop()


if __name__ == "__main__":
    sys.exit(main())
