"""`make demo` runs `python -m procmem_site.rundemo`: on embedded defaults (SQLite and the
filesystem broker under a fresh var dir) it serves the login page, the demo users can sign in, its
own worker consumes tasks, and Ctrl-C stops the web server and the worker."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from library.demo import DEMO_USERS

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, process: subprocess.Popen, log: Path, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"demo exited early:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"demo did not serve {url} in {timeout}s:\n{log.read_text()[-4000:]}")


@pytest.mark.timeout(900)  # migrate, seed and the model's first load: minutes on a loaded machine
def test_demo_serves_login_and_stops_on_ctrl_c(tmp_path):
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "DATABASE_URL", "CELERY_", "SECRET_KEY", "ALLOWED_HOSTS"))
    }
    env.update(PROCMEM_VAR_DIR=str(tmp_path / "var"), DEMO_PORT=str(port), DEBUG="1")
    log = tmp_path / "demo.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "procmem_site.rundemo"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(f"{base}/accounts/login/", process, log)
        assert (tmp_path / "var" / "procmem.sqlite3").exists()
        # sign in as each demo user with the printed password
        for username, (password, role) in DEMO_USERS.items():
            jar = http.cookiejar.CookieJar()
            opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
            page = opener.open(f"{base}/accounts/login/").read().decode()
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
            data = urllib.parse.urlencode(
                {"username": username, "password": password, "csrfmiddlewaretoken": token}
            ).encode()
            request = urllib.request.Request(
                f"{base}/accounts/login/", data=data, headers={"Referer": f"{base}/accounts/login/"}
            )
            landing = opener.open(request)
            body = landing.read().decode()
            assert "/accounts/login/" not in landing.url, username
            assert f"<strong>{username}</strong>" in body
        # the favicon browsers ask for without a <link rel="icon">
        with urllib.request.urlopen(f"{base}/favicon.ico") as icon:
            assert icon.status == 200 and icon.headers["Content-Type"].startswith("image/svg")
        deadline = time.monotonic() + 30
        while "Where to click first:" not in (printed := log.read_text()):
            if time.monotonic() > deadline:
                pytest.fail(f"'Where to click first' never printed:\n{printed[-3000:]}")
            time.sleep(0.5)
        # printed once the server answers, not before
        assert printed.index("Starting the web server") < printed.index("Where to click first:")
        for username, (password, _role) in DEMO_USERS.items():
            assert password in printed
        # where to click first, with pages that exist
        assert "Where to click first:" in printed
        assert f"{base}/ops/agents/support_agent/metrics/" in printed and f"{base}/queue/" in printed
        # the worker runs on the filesystem broker
        deadline = time.monotonic() + 60
        while "celery@" not in printed or "ready" not in printed:
            if time.monotonic() > deadline:
                pytest.fail(f"worker never became ready:\n{printed[-3000:]}")
            time.sleep(0.5)
            printed = log.read_text()
        children = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True).stdout.split()
        assert len(children) == 2, children  # the web server and the worker
    finally:
        # Ctrl-C in a terminal sends SIGINT to the whole foreground process group
        os.killpg(process.pid, signal.SIGINT)
        try:
            returncode = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail("demo did not stop on Ctrl-C")
    # Ctrl-C is a normal end: exit 0, so `make demo` does not report "Error 1"
    assert returncode == 0, log.read_text()[-3000:]
    # the web server and the worker (in their own process group) are gone too
    time.sleep(1)
    for pid in children:
        state = subprocess.run(["ps", "-o", "stat=", "-p", pid], capture_output=True, text=True).stdout.strip()
        assert state in ("", "Z"), f"demo child {pid} still running after Ctrl-C ({state})"
    # nothing of the demo is left running in its process group
    # (an exited child not yet reaped by init shows as <defunct>: it runs nothing)
    leftover = [
        line
        for line in subprocess.run(
            ["pgrep", "-a", "-g", str(process.pid)], capture_output=True, text=True
        ).stdout.splitlines()
        if "<defunct>" not in line
    ]
    assert leftover == [], f"processes left after Ctrl-C: {leftover}"


def test_a_port_in_use_is_refused_at_once_naming_demo_port(tmp_path):
    """runserver's "That port is already in use" came only after the migrations and the seed, and
    the runner then said only that a demo process exited; now it is said first, with the way out."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {**os.environ, "DEMO_PORT": str(port), "PROCMEM_VAR_DIR": str(tmp_path / "var")}
        env.pop("DATABASE_URL", None)
        done = subprocess.run(
            [sys.executable, "-m", "procmem_site.rundemo"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"The demo cannot serve on 127.0.0.1:{port}: " in done.stderr
    assert f"DEMO_PORT={port + 1} make demo" in done.stderr
    assert not (tmp_path / "var" / "procmem.sqlite3").exists()  # nothing was migrated or seeded


def test_the_demo_embeds_an_upgraded_database_before_serving():
    """A demo database seeded before EMBEDDING_BACKEND's default changed answered select with 503
    embeddings_not_ready (and `procmem check` with it) until `manage.py reembed_library` ran; the demo
    runs it after seeding (nothing to do on a current database)."""
    from procmem_site.rundemo import SETUP_STEPS

    names = [step[0] for step in SETUP_STEPS]
    assert names.index("migrate") < names.index("seed_demo") < names.index("reembed_library")
