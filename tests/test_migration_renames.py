"""Migrations renamed to descriptive names carry `replaces = [(app, old name)]`, so a database
migrated under the old names goes on migrating cleanly: nothing is applied twice, nothing is left
unapplied, and the new names are recorded."""

from __future__ import annotations

import os
import subprocess
import sys

import psycopg
import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from tests.conftest import REPO, database_url

pytestmark = pytest.mark.postgres


def _renamed() -> dict[tuple[str, str], tuple[str, str]]:
    """(app, new name) → (app, old name) of every migration of ours that replaces one old name."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    return {
        key: migration.replaces[0]
        for key, migration in loader.disk_migrations.items()
        if key[0] in {"library", "reviews"} and len(migration.replaces) == 1
    }


def _manage(url: str, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "procmem_site.test_settings",
        "READONLY_DATABASE_URL": "",
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )


def _admin_sql(sql: str) -> None:
    with psycopg.connect(database_url("postgres"), autocommit=True) as admin:
        admin.execute(sql)


def test_a_database_migrated_under_the_old_names_migrates_cleanly():
    renamed = _renamed()
    assert {app for app, _ in renamed} == {"library", "reviews"}
    assert all(old[0] == new[0] and old[1] != new[1] for new, old in renamed.items())
    name = f"{connection.settings_dict['NAME']}_renamed_migrations"
    _admin_sql(f'DROP DATABASE IF EXISTS "{name}"')
    _admin_sql(f'CREATE DATABASE "{name}"')
    url = database_url(name)
    try:
        # the old state: migrated up to the renamed migrations, recorded under their old names only
        newest = dict(sorted(renamed))  # app → its last renamed migration
        for app, migration in sorted(newest.items()):
            done = _manage(url, "migrate", app, migration, "--no-input")
            assert done.returncode == 0, done.stderr[-3000:]
        with psycopg.connect(url, autocommit=True) as db:
            for (app, new), (_, old) in renamed.items():
                db.execute("DELETE FROM django_migrations WHERE app = %s AND name IN (%s, %s)", (app, new, old))
                db.execute("INSERT INTO django_migrations (app, name, applied) VALUES (%s, %s, now())", (app, old))
        # the new code migrates on: the later migrations apply, the renamed ones are not applied again
        done = _manage(url, "migrate", "--no-input")
        assert done.returncode == 0, done.stderr[-3000:]
        assert "Applying library.0014" in done.stdout
        assert not any(f"Applying {app}.{new}" in done.stdout for app, new in renamed)
        check = _manage(url, "migrate", "--check", "--no-input")
        assert check.returncode == 0, check.stdout + check.stderr
        plan = _manage(url, "showmigrations", "--plan")
        assert plan.returncode == 0 and "[ ]" not in plan.stdout, plan.stdout
        with psycopg.connect(url) as db:
            recorded = set(db.execute("SELECT app, name FROM django_migrations").fetchall())
        assert set(renamed) <= recorded  # the new names are recorded next to the old
    finally:
        _admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
