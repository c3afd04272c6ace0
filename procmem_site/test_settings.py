"""Settings for the test suite: the production module with safe test defaults for what the
environment does not set. DATABASE_URL and CELERY_BROKER_URL still come from the environment, so
the same suite runs on SQLite locally and on PostgreSQL + Redis in CI (.ci/run)."""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production-0123456789abcdef")
os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("SESSION_COOKIE_SECURE", "0")
os.environ.setdefault("CSRF_COOKIE_SECURE", "0")
os.environ.setdefault("SECURE_HSTS_SECONDS", "0")
os.environ.setdefault("BEHIND_TLS_PROXY", "0")
# The eval tests run their runners from tests/ and their fake HTTP agents on 127.0.0.1.
os.environ.setdefault("PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES", "tests.evals_support")
os.environ.setdefault("PROCMEM_EVAL_ALLOWED_URLS", "http://127.0.0.1")
os.environ.setdefault("PROCMEM_TESTING", "1")
# Tests change rows with .update() and raw SQL, which send no signals: check the set on every
# request (tests/library/test_api.py covers the recheck window explicitly).
os.environ.setdefault("PROCMEM_ACTIVE_SET_RECHECK_SECONDS", "0")

from .settings import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# Unit tests run tasks in-process; the worker tests start a real worker process on the real broker.
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", True)  # noqa: F405
CELERY_TASK_EAGER_PROPAGATES = True

# whitenoise warns at start-up when STATIC_ROOT is missing; tests serve static files from finders.
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405
