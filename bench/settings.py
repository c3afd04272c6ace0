"""Settings for the benchmarks: the production settings with the bench URLs added (a trivial JSON
view of the same app, to compare against, in the same process with the same middleware)."""

import os

os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-0123456789abcdefghijklmnopqrstuvwxyz")
os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("BEHIND_TLS_PROXY", "0")
os.environ.setdefault("LOG_LEVEL", "WARNING")

from procmem_site.settings import *  # noqa: E402,F401,F403  (pyflakes: intended star import)

ROOT_URLCONF = "bench.urls"
