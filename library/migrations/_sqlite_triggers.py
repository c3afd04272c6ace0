"""The SQLite invariant triggers of 0002_invariants, importable by later migrations that must drop
and re-create them around a table rebuild (SQLite rebuilds a table to add a NOT NULL column)."""

import importlib

_invariants = importlib.import_module("library.migrations.0002_invariants")
SQLITE_FORWARD = _invariants.SQLITE_FORWARD
SQLITE_REVERSE = _invariants.SQLITE_REVERSE
