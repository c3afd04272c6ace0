"""Settings come from the environment and fail loudly on bad values."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import public_data
from tests.conftest import _missing

ROOT = Path(__file__).resolve().parent.parent


def run_manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            (
                "DJANGO_",
                "SECRET_KEY",
                "DEBUG",
                "ALLOWED_HOSTS",
                "SECURE_",
                "SESSION_COOKIE",
                "CSRF_",
                "BEHIND_TLS",
                "PROCMEM_TESTING",
            )
        )
    }
    clean.update(env)
    clean["DJANGO_SETTINGS_MODULE"] = "procmem_site.settings"
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120
    )


PRODUCTION = {
    "SECRET_KEY": "x" * 20 + "production-secret-key-with-enough-entropy-0123456789",
    "ALLOWED_HOSTS": "procmem.example.com",
    "DATABASE_URL": "postgres://procmem@127.0.0.1:5432/procmem",
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
}


def test_check_deploy_is_silent_with_production_values():
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.mark.parametrize(
    "env, message",
    [
        ({"SECRET_KEY": ""}, "SECRET_KEY must be set"),
        ({"DEBUG": "maybe"}, "DEBUG='maybe' is not a boolean"),
        ({"ALLOWED_HOSTS": ""}, "ALLOWED_HOSTS must be set"),
        ({"DATABASE_URL": "mysql://x@y/z"}, "DATABASE_URL must be postgres"),
        ({"CELERY_BROKER_URL": "kafka://x"}, "CELERY_BROKER_URL='kafka://x'"),
        ({"SECURE_HSTS_SECONDS": "a year"}, "SECURE_HSTS_SECONDS='a year' is not an integer"),
    ],
)
def test_bad_values_fail_loudly(env, message):
    result = run_manage("check", env={**PRODUCTION, **env})
    assert result.returncode != 0
    assert message in result.stderr


def test_debug_has_a_development_secret_and_sqlite_default(tmp_path):
    result = run_manage(
        "shell",
        "-c",
        "from django.conf import settings; print(settings.DATABASES['default']['ENGINE'], settings.CELERY_BROKER_URL)",
        env={"DEBUG": "1", "PROCMEM_VAR_DIR": str(tmp_path), "DATABASE_URL": "", "CELERY_BROKER_URL": ""},
    )
    assert result.returncode == 0, result.stderr
    assert "sqlite3 filesystem://" in result.stdout


def test_the_filesystem_broker_keeps_all_its_folders_under_the_var_dir(tmp_path):
    """kombu's filesystem transport writes its control folder (exchange tables) to ./control in the
    working directory unless told otherwise: every folder of it lives under PROCMEM_VAR_DIR."""
    result = run_manage(
        "shell",
        "-c",
        "from django.conf import settings; import json; print(json.dumps(settings.CELERY_BROKER_TRANSPORT_OPTIONS))",
        env={"DEBUG": "1", "PROCMEM_VAR_DIR": str(tmp_path), "DATABASE_URL": "", "CELERY_BROKER_URL": ""},
    )
    assert result.returncode == 0, result.stderr
    import json

    options = json.loads(result.stdout.strip().splitlines()[-1])
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        assert Path(options[key]).is_relative_to(tmp_path), (key, options[key])
    assert not (ROOT / "control").exists()


# ---------------------------------------------------------------------------------------------- make test finds local services


def _test_settings_database(env: dict[str, str]) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "PROCMEM_TEST"))}
    clean.update(env)
    clean["DJANGO_SETTINGS_MODULE"] = "procmem_site.test_settings"
    code = "import django; from django.conf import settings; d = settings.DATABASES['default']; print(d['ENGINE'], d['NAME'])"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def _local_postgres_answers() -> bool:
    try:
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="postgres", connect_timeout=2):
            return True
    except Exception:
        return False


def test_test_settings_use_a_local_postgres_when_database_url_is_unset():
    if not _local_postgres_answers():  # the behaviour under test needs one; CI has it, so there it fails
        _missing("no PostgreSQL with trust auth on 127.0.0.1:5432 here")
    assert _test_settings_database({}) == "django.db.backends.postgresql procmem_test"
    assert _test_settings_database({"PROCMEM_TEST_DATABASE": "mine"}).endswith(" mine")
    assert _test_settings_database({"PROCMEM_TEST_LOCAL_SERVICES": "0"}).startswith("django.db.backends.sqlite3")


def test_an_explicit_database_url_always_wins(tmp_path):
    url = f"sqlite:///{tmp_path}/explicit.sqlite3"
    assert _test_settings_database({"DATABASE_URL": url}) == f"django.db.backends.sqlite3 {tmp_path}/explicit.sqlite3"
    assert _test_settings_database({"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/procmem_h11"}).endswith(
        " procmem_h11"
    )


_READS = re.compile(
    r"""(?:\benv_(?:str|bool|int|float|list)\(|os\.environ\.get\(|os\.environ\[|os\.getenv\(|environ\.setdefault\(|"""
    r"""_shared_data_dir\([^)]*?,\s*)\s*["']([A-Z][A-Z0-9_]+)["']|process\.env\.([A-Z][A-Z0-9_]+)"""
)
# the operating system's and Python's own, which every process reads
_NOT_OURS = {"DJANGO_SETTINGS_MODULE", "PYTHONPATH", "PATH"}


def test_the_configuration_page_names_every_environment_variable_the_code_reads():
    sources = [
        path
        for folder in (
            "procmem_site",
            "library",
            "reviews",
            "bench",
            "tests",
            "clients/python",
            "clients/typescript/src",
            "clients/typescript/test",
            "tests/oidc",
            "public_data",
        )
        for path in (ROOT / folder).rglob("*")
        if path.suffix in {".py", ".ts", ".js", ".mjs"} and "node_modules" not in path.parts
    ]
    read = {
        name
        for path in sources
        for match in _READS.finditer(path.read_text(encoding="utf-8"))
        for name in match.groups()
        if name
    }
    # public_data/ reads its folders' variables from a table (folder -> variables)
    read |= {variable for _, variables in public_data._FOLDERS.values() for variable in variables}
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert len(read) > 100  # the pattern still finds the settings
    assert sorted(name for name in read - _NOT_OURS if f"`{name}`" not in page) == []
    # and names none the code no longer reads (a row left behind after a setting went)
    named = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)`", page, flags=re.MULTILINE))
    assert sorted(named - read) == []
