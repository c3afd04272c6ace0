"""`make demo` runs on SQLite: every migration applies to a fresh SQLite database, with the
invariant triggers in place afterwards. (A column with a default added to a table that a trigger
reads makes SQLite rebuild the table, which the trigger refuses: library/migrations/_sqlite_triggers.py,
`agent_rebuild_operations`.)"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _migrate(tmp_path, database, *target: str) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{database}",
        "DJANGO_SETTINGS_MODULE": "procmem_site.settings",
        "DEBUG": "1",
        "PROCMEM_VAR_DIR": str(tmp_path),
        "READONLY_DATABASE_URL": "",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", *target, "--no-input"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def _schema(database) -> tuple[set[str], set[str]]:
    with sqlite3.connect(database) as db:
        triggers = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        columns = {row[1] for row in db.execute("PRAGMA table_info(library_evalrun)")}
    return triggers, columns


PRODUCTION_EVAL_TRIGGERS = {"procmem_version_production_eval", "procmem_evalrun_target_kept"}


def test_every_migration_applies_to_a_fresh_sqlite_database(tmp_path):
    database = tmp_path / "fresh.sqlite3"
    _migrate(tmp_path, database)
    triggers, columns = _schema(database)
    assert {"procmem_release_approved", "procmem_release_approved_update"} <= triggers
    assert PRODUCTION_EVAL_TRIGGERS <= triggers and "environment" in columns
    # the eval runs' environment migrates back (column and triggers gone) and forth again
    _migrate(tmp_path, database, "library", "0026_agent_coding_families")
    triggers, columns = _schema(database)
    assert not PRODUCTION_EVAL_TRIGGERS & triggers and "environment" not in columns and "kind" in columns
    _migrate(tmp_path, database)
    triggers, columns = _schema(database)
    assert PRODUCTION_EVAL_TRIGGERS <= triggers and "environment" in columns
