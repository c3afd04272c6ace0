"""The SQLite invariant triggers of 0002_invariants, importable by later migrations that must drop
and re-create them around a table rebuild (SQLite rebuilds a table to add a NOT NULL column)."""

import importlib

_invariants = importlib.import_module("library.migrations.0002_invariants")
SQLITE_FORWARD = _invariants.SQLITE_FORWARD
SQLITE_REVERSE = _invariants.SQLITE_REVERSE

# Content columns added after 0002 (each migration that adds one appends it here, so a later table
# rebuild re-creates the immutability trigger with every content column, not 0002's list).
LATER_CONTENT_COLUMNS = ["preconditions", "postconditions", "verify_command"]
IMMUTABLE_VERSION_COLUMNS = _invariants.IMMUTABLE_VERSION_COLUMNS + LATER_CONTENT_COLUMNS


def _with_columns(statement: str, columns: list[str]) -> str:
    old = _invariants._sqlite_changed(_invariants.IMMUTABLE_VERSION_COLUMNS)
    return statement.replace(old, _invariants._sqlite_changed(columns)) if old in statement else statement


def sqlite_forward(columns: list[str] | None = None) -> list[str]:
    """0002's SQLite triggers with the immutability trigger over `columns` (default: all content columns now)."""
    return [_with_columns(s, IMMUTABLE_VERSION_COLUMNS if columns is None else columns) for s in SQLITE_FORWARD]


def postgres_version_guard(columns: list[str] | None = None) -> str:
    """0002's procmem_version_guard() function (CREATE OR REPLACE; its trigger stays) over `columns`."""
    function = _invariants.POSTGRES_FORWARD.split("CREATE TRIGGER procmem_version_guard", 1)[0]
    old = _invariants._pg_changed(_invariants.IMMUTABLE_VERSION_COLUMNS)
    assert old in function
    return function.replace(old, _invariants._pg_changed(IMMUTABLE_VERSION_COLUMNS if columns is None else columns))
