"""Settings for the test suite: the production module with safe test defaults for what the
environment does not set. DATABASE_URL and CELERY_BROKER_URL still come from the environment, so
the same suite runs on SQLite locally and on PostgreSQL + Redis in CI (.ci/run).

Without DATABASE_URL, a PostgreSQL that answers on 127.0.0.1:5432 (user postgres, trust auth) is
used, as database PROCMEM_TEST_DATABASE (default procmem_test; pytest-django creates test_<name>),
so a newcomer's `make test` runs the same PostgreSQL tests as CI. An explicit DATABASE_URL always
wins; PROCMEM_TEST_LOCAL_SERVICES=0 keeps SQLite. (Redis needs nothing here: the worker tests use
REDIS_URL, else the broker URL, else redis://127.0.0.1:6379/0 — tests/conftest.py.)"""

import os
import socket

import psycopg

_ENV_DEFAULTS = {
    "SECRET_KEY": "test-only-secret-key-not-for-production-0123456789abcdef",
    "ALLOWED_HOSTS": "testserver,127.0.0.1,localhost",
    "SECURE_SSL_REDIRECT": "0",
    "SESSION_COOKIE_SECURE": "0",
    "CSRF_COOKIE_SECURE": "0",
    "SECURE_HSTS_SECONDS": "0",
    "BEHIND_TLS_PROXY": "0",
    # The eval tests run their runners from tests/ and their fake HTTP agents on 127.0.0.1 ...
    "PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES": "tests.evals_support",
    "PROCMEM_EVAL_ALLOWED_URLS": "http://127.0.0.1",
    # ... and their webhook receivers on 127.0.0.1 (tests/reviews/test_webhook_destinations.py
    # turns this off to check the refusals).
    "PROCMEM_WEBHOOK_ALLOW_LOCAL": "1",
    "PROCMEM_TESTING": "1",
    # Tests change rows with .update() and raw SQL, which send no signals: check the set on every
    # request (tests/library/test_api.py covers the recheck window explicitly).
    "PROCMEM_ACTIVE_SET_RECHECK_SECONDS": "0",
    # Rate-limit counts in each test process's memory, reset before every test (tests/conftest.py);
    # the live-server test of the limits puts them in Redis.
    "PROCMEM_RATE_LIMIT_STORAGE": "memory://",
}
for _name, _value in _ENV_DEFAULTS.items():
    os.environ.setdefault(_name, _value)


def _local_postgres_url() -> str | None:
    """postgres://postgres@127.0.0.1:5432/<name> when a PostgreSQL there accepts user postgres
    without a password; None otherwise (nothing listens, or it wants a password)."""
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=0.5):
            pass
    except OSError:
        return None
    try:
        with psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="postgres", connect_timeout=2):
            pass
    except Exception:  # any refusal (auth, not ready): stay on SQLite, as before
        return None
    return f"postgres://postgres@127.0.0.1:5432/{os.environ.get('PROCMEM_TEST_DATABASE', 'procmem_test')}"


if "DATABASE_URL" not in os.environ and os.environ.get("PROCMEM_TEST_LOCAL_SERVICES", "1") not in {"0", "false", "no"}:
    _found = _local_postgres_url()
    if _found:
        # in os.environ, so worker processes and subprocesses started by tests use the same database
        os.environ["DATABASE_URL"] = _found

from .settings import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# Unit tests run tasks in-process; the worker tests start a real worker process on the real broker.
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", True)  # noqa: F405
CELERY_TASK_EAGER_PROPAGATES = True

# whitenoise warns at start-up when STATIC_ROOT is missing; tests serve static files from finders.
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405
