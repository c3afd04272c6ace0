"""Shared fixtures: an agent with intents, and the people of the permission matrix — an admin,
a reviewer, an approver of the procedure under test, an approver of another procedure, the
proposer, and an outsider who holds nothing.

Service markers: tests marked `postgres`, `redis`, `celery_worker`, `node` or `e2e` need the real service.
Where it is missing they are skipped with the reason — unless REQUIRE_SERVICES=1 (set by .ci/run),
where a missing service fails the test instead, so CI can never pass by skipping them.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from guardian.shortcuts import assign_perm

# the public agent data: vendored in public_data/, a variable overrides each folder (README there)
from public_data import data_dir

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES", "") in {"1", "true", "yes"}


# Each distinct text is embedded by e5-small once a run, not once a test (and each task by MiniLM or
# USE, a text embedded alone): the vectors are kept in a
# file every process of the run shares (the live servers', the Celery worker's), the bytes a fresh
# embedding gives (procmem_client.embeddings.KeptVectors; docs/development.md). Set
# PROCMEM_TEST_EMBEDDING_CACHE to a file of one's own to keep them across runs, or to 0 to embed afresh.
_KEPT_VECTORS_DIR: str | None = None


def pytest_configure(config):
    global _KEPT_VECTORS_DIR
    if "PROCMEM_TEST_EMBEDDING_CACHE" not in os.environ:
        _KEPT_VECTORS_DIR = tempfile.mkdtemp(prefix="procmem-test-vectors-")
        os.environ["PROCMEM_TEST_EMBEDDING_CACHE"] = os.path.join(_KEPT_VECTORS_DIR, "vectors.sqlite3")


# A live server's request threads are daemon threads (socketserver's `process_request_thread`): a
# page the browser left behind (a panel it loads after the page, a test that timed out) can still be
# computing when the run ends. If one is inside torch then (MiniLM embedding), the interpreter's
# shutdown ends it in C++ code and the process aborts, "terminate called without an active
# exception", exit 134, after every test passed. So the run waits for those threads (at most
# REQUEST_THREADS_GRACE seconds in all) before it ends; tests/test_exit.py runs such a case.
REQUEST_THREADS_GRACE = 180.0


def wait_for_request_threads(grace: float = REQUEST_THREADS_GRACE) -> list[str]:
    """Joins the daemon threads serving a request, within `grace` seconds in all; the names of those
    still running after it."""
    deadline = time.monotonic() + grace
    serving = [
        thread
        for thread in threading.enumerate()
        if thread is not threading.current_thread() and thread.daemon and "process_request_thread" in thread.name
    ]
    for thread in serving:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [thread.name for thread in serving if thread.is_alive()]


def pytest_unconfigure(config):
    left = wait_for_request_threads()
    if left:
        print(f"\nprocmem tests: {len(left)} request threads still running after {REQUEST_THREADS_GRACE:.0f} s: {left}")
    if _KEPT_VECTORS_DIR is not None:
        os.environ.pop("PROCMEM_TEST_EMBEDDING_CACHE", None)
        shutil.rmtree(_KEPT_VECTORS_DIR, ignore_errors=True)


TAUBENCH_DIR = data_dir("taubench")


def require_taubench() -> None:
    """Skips (fails under REQUIRE_SERVICES=1) when the public tau-bench data is missing."""
    if not (TAUBENCH_DIR / "gpt-4o-airline.json").exists():
        _missing(
            f"tau-bench data not found at {TAUBENCH_DIR} (public_data/ in the repository unless TAUBENCH_DIR or SHARED_DATA_DIR is set)"
        )


MINT_ALFWORLD_DIR = data_dir("mint-alfworld")


def require_mint_alfworld() -> None:
    """Skips (fails under REQUIRE_SERVICES=1) when the public MINT ALFWorld sessions are missing."""
    if not (MINT_ALFWORLD_DIR / "sessions.jsonl").exists():
        _missing(
            f"MINT ALFWorld sessions not found at {MINT_ALFWORLD_DIR} (public_data/ in the repository unless MINT_ALFWORLD_DIR or SHARED_DATA_DIR is set)"
        )


SWEBENCH_DIR = data_dir("swebench")
SWEBENCH_TRAJS = SWEBENCH_DIR / "gemini-3-pro-django-trajs.tar.gz"
SWEBENCH_RESULTS = SWEBENCH_DIR / "results.json"


def require_swebench() -> None:
    """Skips (fails under REQUIRE_SERVICES=1) when the public SWE-bench data is missing."""
    if not SWEBENCH_TRAJS.exists() or not SWEBENCH_RESULTS.exists():
        _missing(
            f"SWE-bench trajectories not found at {SWEBENCH_DIR} (public_data/ in the repository unless SWEBENCH_DIR or SHARED_DATA_DIR is set)"
        )


@pytest.fixture(scope="session")
def swebench_dir(tmp_path_factory):
    """The 231 mini-swe-agent trajectories, extracted once per test session into a temporary directory."""
    import tarfile

    require_swebench()
    target = tmp_path_factory.mktemp("swebench")
    with tarfile.open(SWEBENCH_TRAJS) as archive:
        archive.extractall(target, filter="data")
    return target / "trajs"


CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


def _missing(reason: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"REQUIRE_SERVICES=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def redis_url() -> str:
    return os.environ.get("REDIS_URL") or (
        settings.CELERY_BROKER_URL if settings.CELERY_BROKER_URL.startswith("redis") else "redis://127.0.0.1:6379/0"
    )


def _redis_answers(url: str) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def pytest_runtest_setup(item):
    if (
        item.get_closest_marker("postgres")
        and settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql"
    ):
        _missing("this test needs PostgreSQL: set DATABASE_URL=postgres://… (see README)")
    if item.get_closest_marker("redis") or item.get_closest_marker("celery_worker"):
        if not _redis_answers(redis_url()):
            _missing(f"this test needs Redis at {redis_url()}")
    if item.get_closest_marker("node") and not (shutil.which("node") and shutil.which("npm")):
        _missing("this test needs node and npm (apt-get install -y nodejs npm)")
    if item.get_closest_marker("e2e"):
        if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
            _missing(f"browser tests need Debian's chromium at {CHROMIUM} (apt-get install -y chromium)")


# ---------------------------------------------------------------------------------------------- data


@pytest.fixture
def agent(db):
    from library.models import Agent, Intent

    agent = Agent.objects.create(
        name="support_agent",
        tools=["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"],
    )
    for name in ("refund_over_limit", "order_status"):
        Intent.objects.create(agent=agent, name=name)
    return agent


@pytest.fixture
def intent(agent):
    return agent.intents.get(name="refund_over_limit")


@pytest.fixture
def reviewers_group(db):
    from library.permissions import ensure_reviewers_group

    return ensure_reviewers_group()


def _user(name: str, group=None, **extra):
    user = get_user_model().objects.create_user(
        username=name, password="pw-" + name, email=f"{name}@example.com", **extra
    )
    if group is not None:
        user.groups.add(group)
    return user


@pytest.fixture
def admin_user(db, reviewers_group):
    return _user("admin", reviewers_group, is_staff=True, is_superuser=True)


@pytest.fixture
def reviewer(db, reviewers_group):
    return _user("reviewer", reviewers_group)


@pytest.fixture
def proposer(db, reviewers_group):
    return _user("proposer", reviewers_group)


@pytest.fixture
def outsider(db):
    return _user("outsider")


@pytest.fixture
def candidate(agent, intent, proposer):
    from library import services
    from library.models import Source

    return services.procedure_propose(
        agent=agent,
        intent=intent,
        key="refund.over_limit",
        applies_when="The customer asks for a refund above the agent's limit.",
        steps=[
            "Look up the order with lookupOrder({{order_id}}).",
            "Check the return window with checkReturnWindow({{order_id}}).",
            "Create an approval request with createApproval({{order_id}}).",
            "Tell the customer the expected wait with replyTemplates('approval_pending').",
        ],
        required_tools=["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"],
        forbidden_actions=["Do not promise a refund date before approval."],
        source=Source.MANUAL,
        proposed_by=proposer,
    )


def propose_next_version(candidate, proposer):
    """The `candidate`'s procedure's next version: the same content with one step more (a CANDIDATE)."""
    from library import services
    from library.models import Source

    return services.procedure_propose(
        agent=candidate.procedure.agent,
        intent=candidate.procedure.intent,
        key=candidate.procedure.key,
        applies_when=candidate.applies_when,
        steps=list(candidate.steps) + ["Record the approval id in the ticket."],
        required_tools=list(candidate.required_tools),
        forbidden_actions=list(candidate.forbidden_actions),
        source=Source.MANUAL,
        proposed_by=proposer,
    )


@pytest.fixture
def approver(db, reviewers_group, candidate):
    user = _user("approver", reviewers_group)
    assign_perm("library.approve_procedure", user, candidate.procedure)
    return user


@pytest.fixture
def other_procedure(agent, proposer):
    from library import services
    from library.models import Source

    version = services.procedure_propose(
        agent=agent,
        intent=agent.intents.get(name="order_status"),
        key="order.status",
        applies_when="The customer asks where the order is.",
        steps=[
            "Look up the order with lookupOrder({{order_id}}).",
            "Read the carrier status.",
            "Reply with replyTemplates('order_status').",
        ],
        required_tools=["lookupOrder", "replyTemplates"],
        forbidden_actions=[],
        source=Source.MANUAL,
        proposed_by=proposer,
    )
    return version.procedure


@pytest.fixture
def other_approver(db, reviewers_group, other_procedure):
    user = _user("other_approver", reviewers_group)
    assign_perm("library.approve_procedure", user, other_procedure)
    return user


def make_passing_eval(version):
    """Records a finished passing eval run on the version's exact content (for lifecycle tests that
    are not about evals; the eval tests run real replays)."""
    from library.demo.seed import record_passing_eval

    return record_passing_eval(version, runner="test")


@pytest.fixture
def passing_eval():
    return make_passing_eval


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


def database_url(name: str | None = None) -> str:
    """postgres://… of the test database (or of database `name` on the same server), for a
    process started from a test."""
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{name or db['NAME']}"


# ---------------------------------------------------------------------------------------------- tasks


@pytest.fixture(autouse=True)
def _rate_limit_counts_forgotten():
    """Each test starts with no request counted against the agent API's rate limits."""
    from library.api import limits

    limits.reset()
    yield


@pytest.fixture(autouse=True, scope="session")
def _tasks_registered_as_on_a_worker():
    """Services queue tasks by name (library/evals/eval_runs.py). Eager mode runs a task in-process only
    when this process has registered it, so the test process discovers the task modules the way a
    worker does; otherwise such a task would silently go to the broker."""
    from procmem_site.celery import app

    app.autodiscover_tasks(force=True)


# ---------------------------------------------------------------------------------------------- a real worker


@pytest.fixture
def celery_worker_process(transactional_db, tmp_path):
    """A real `celery worker` process on the real broker (Redis in CI), connected to the test
    database. Tasks sent from the test go through the broker (eager mode is switched off here).
    Needs PostgreSQL: an in-memory SQLite test database cannot be shared with another process."""
    import subprocess
    import sys
    import time

    from procmem_site.celery import app

    if connection.vendor != "postgresql":
        _missing("a worker process shares the test database only on PostgreSQL")
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url(),
        CELERY_BROKER_URL=redis_url(),
        DJANGO_SETTINGS_MODULE="procmem_site.test_settings",
        CELERY_TASK_ALWAYS_EAGER="0",
    )
    hostname = f"test-{os.getpid()}-{time.monotonic_ns()}@localhost"
    log = open(tmp_path / "worker.log", "w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "procmem_site",
            "worker",
            "--pool",
            "prefork",
            "--concurrency",
            "2",
            "--loglevel",
            "INFO",
            "--hostname",
            hostname,
            "--without-mingle",
            "--without-gossip",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    old = (app.conf.task_always_eager, app.conf.broker_url)
    app.conf.task_always_eager = False
    app.conf.broker_url = redis_url()
    _forget_broker_connections(app)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"worker exited: {(tmp_path / 'worker.log').read_text()[-3000:]}")
            if app.control.ping(destination=[hostname], timeout=1.0):
                break
        else:
            pytest.fail(f"worker did not answer in 60 s: {(tmp_path / 'worker.log').read_text()[-3000:]}")
        process.hostname = hostname
        process.log_path = tmp_path / "worker.log"
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        app.conf.task_always_eager, app.conf.broker_url = old
        _forget_broker_connections(app)


@pytest.fixture
def celery_beat_process(celery_worker_process, tmp_path):
    """A real `celery beat` process beside the worker, on the same broker, with the settings'
    schedule (CELERY_BEAT_SCHEDULE) and its state file in the test's folder. Environment variables
    set before the fixture is requested (monkeypatch.setenv) reach it as they reach the worker."""
    import subprocess
    import sys
    import time

    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url(),
        CELERY_BROKER_URL=redis_url(),
        DJANGO_SETTINGS_MODULE="procmem_site.test_settings",
        CELERY_TASK_ALWAYS_EAGER="0",
    )
    log_path = tmp_path / "beat.log"
    log = open(log_path, "w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "procmem_site",
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            str(tmp_path / "beat-schedule"),
            "--pidfile",
            str(tmp_path / "beat.pid"),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while "beat: Starting" not in log_path.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"beat did not start: {log_path.read_text()[-3000:]}")
            time.sleep(0.2)
        process.log_path = log_path
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _forget_broker_connections(app) -> None:
    """After a change of broker_url: the app keeps the connection pool (and producer pool) of the
    broker it first used, so without this, when an earlier test sent a task on the default
    filesystem broker, the ping and the tasks would go there and the worker on Redis would never
    answer. What Celery itself does after a fork (Celery._after_fork), without its signal: the
    pools stay open in kombu's registry, keyed by broker, for when the URL switches back."""
    app._pool = None
    if "amqp" in app.__dict__:
        app.amqp._producer_pool = None


# ---------------------------------------------------------------------------------------------- serving


def make_active(version, approver):
    """Makes a CANDIDATE ACTIVE the only way the database allows: a passing eval on its content,
    then services.version_approve by a user who may approve it."""
    from library import services

    make_passing_eval(version)
    # Tests of other features approve sets of look-alike procedures ("Refund case 0/1 applies"); the
    # conflict gate at approval has its own tests (tests/library/test_conflicts.py).
    return services.version_approve(
        version=version, user=approver, comment="approved in a test", acknowledge_conflicts=True
    )


@pytest.fixture
def readonly_shares_default(db):
    """The agent API reads through the "readonly" alias, a separate connection. In a
    transaction-wrapped test that connection cannot see the test's uncommitted rows, so for such
    tests it is routed to the default connection. Tests of the real separate connection use
    `transactional_db` instead (tests/library/test_serving.py)."""
    from django.db import connections

    from library.serving import active_set as serving

    original = connections["readonly"]
    connections["readonly"] = connections["default"]
    serving.clear_cache()
    yield
    connections["readonly"] = original
    serving.clear_cache()


# ---------------------------------------------------------------------------------------------- a real server

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]


def _free_port() -> int:
    configured = os.environ.get("PROCMEM_TEST_SERVER_PORT")
    if configured:
        return int(configured)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RunningServer:
    """A gunicorn process of the app: `url`, and `stop()` (the server going down in a test)."""

    def __init__(self, url: str, process, log) -> None:
        self.url, self.process, self._log = url, process, log

    def stop(self) -> None:
        import subprocess

        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)
        if not self._log.closed:
            self._log.close()


@pytest.fixture
def gunicorn_process(transactional_db, tmp_path):
    """A real server process (gunicorn, 2 workers × 4 threads) on the test database; yields a
    RunningServer (its base URL in `.url`; the test may `.stop()` it). PostgreSQL only (the process
    shares the test database). The port comes from PROCMEM_TEST_SERVER_PORT, a free port when unset."""
    import subprocess
    import sys
    import time

    import requests

    if connection.vendor != "postgresql":
        _missing("a server process shares the test database only on PostgreSQL")
    port = _free_port()
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url(),
        DJANGO_SETTINGS_MODULE="procmem_site.test_settings",
        READONLY_DATABASE_URL="",
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])),
    )
    log_path = tmp_path / "server.log"
    log = open(log_path, "w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "procmem_site.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--threads",
            "4",
            "--timeout",
            "60",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )
    server = RunningServer(f"http://127.0.0.1:{port}", process, log)
    try:
        deadline = time.monotonic() + 180  # each worker loads the embedding model first (procmem_site/warmup.py)
        while True:
            if process.poll() is not None:
                pytest.fail(f"server exited: {log_path.read_text()[-3000:]}")
            try:
                if requests.get(f"{server.url}/accounts/login/", timeout=10).status_code < 500:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"server did not answer in 180 s: {log_path.read_text()[-3000:]}")
            time.sleep(0.2)
        yield server
    finally:
        server.stop()


@pytest.fixture
def gunicorn_server(gunicorn_process):
    """The base URL of a `gunicorn_process`."""
    return gunicorn_process.url


TYPESCRIPT_CLIENT = REPO / "clients" / "typescript"


@pytest.fixture(scope="session")
def typescript_dist():
    """The TypeScript client compiled from its sources (clients/typescript/dist, by the devDependency
    `tsc`) once a run, for every test that runs it with node: the parity, task-files and live-server
    tests each ran `npm run build` of their own (12 s of wall time at load 5)."""
    import subprocess

    if not shutil.which("node") or not shutil.which("npm"):
        _missing("the TypeScript client's tests need node and npm (apt-get install -y nodejs npm)")
    if not (TYPESCRIPT_CLIENT / "node_modules" / "typescript").exists():
        _missing("clients/typescript/node_modules is missing: `make test` runs `npm ci` there")
    build = subprocess.run(
        ["npm", "run", "--silent", "build"], cwd=TYPESCRIPT_CLIENT, capture_output=True, text=True, timeout=300
    )
    assert build.returncode == 0, build.stdout + build.stderr
    return TYPESCRIPT_CLIENT
