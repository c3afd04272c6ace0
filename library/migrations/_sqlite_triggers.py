"""The SQLite invariant triggers of 0002_invariants, importable by later migrations that must drop
and re-create them around a table rebuild (SQLite rebuilds a table to add a NOT NULL column)."""

import importlib
import re

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


# ---------------------------------------------------------------------------------------------- after erasure
# 0008_version_erasure replaced 0002's version guard (PostgreSQL function, SQLite immutability and
# transition triggers) with one that allows the erasure wipe. The functions below give that guard
# with the content columns added after it (LATER_CONTENT_COLUMNS) immutable and wiped on erasure.

LATER_WIPED = {
    "preconditions": ("'[]'::jsonb", "'[]'"),
    "postconditions": ("'[]'::jsonb", "'[]'"),
    "verify_command": ("''", "''"),
}


def _erasure():
    return importlib.import_module("library.migrations.0008_version_erasure")


def _erasure_with(text: str, later: bool, sqlite: bool) -> str:
    erasure = _erasure()
    changed = erasure._sqlite_changed if sqlite else erasure._pg_changed
    index = 1 if sqlite else 0
    wiped_before = " AND ".join(f"NEW.{c} = {v[index]}" for c, v in erasure.WIPED.items())
    all_wiped = {**erasure.WIPED, **LATER_WIPED} if later else erasure.WIPED
    wiped_now = " AND ".join(f"NEW.{c} = {v[index]}" for c, v in all_wiped.items())
    immutable = IMMUTABLE_VERSION_COLUMNS if later else _invariants.IMMUTABLE_VERSION_COLUMNS
    replacements = [
        (changed(_invariants.IMMUTABLE_VERSION_COLUMNS), changed(immutable)),
        (changed(erasure.WIPED_COLUMNS), changed(list(all_wiped))),
        (wiped_before, wiped_now),
    ]
    for old, new in replacements:
        if old in text:
            text = text.replace(old, new)
    return text


def postgres_erasure_guard(later: bool = True) -> str:
    """0008's procmem_version_guard() (CREATE OR REPLACE) with the later content columns, or without."""
    function = _erasure().POSTGRES_FORWARD.split("CREATE OR REPLACE FUNCTION procmem_tombstone_append_only", 1)[0]
    return _erasure_with(function, later, sqlite=False)


def sqlite_erasure_triggers(later: bool = True) -> list[str]:
    """The SQLite triggers on library_procedureversion as 0008 left them (0002's but its immutability
    and transition triggers, then 0008's own), the immutability one with or without the later content
    columns. Tombstone triggers live on their own table and are not included."""
    erasure = _erasure()
    own = [
        _erasure_with(statement, later, sqlite=True)
        for name, statement in zip(erasure.SQLITE_NAMES, erasure.SQLITE_FORWARD)
        if "ON library_procedureversion" in statement
    ]
    kept = [
        statement
        for statement in SQLITE_FORWARD
        if "ON library_procedureversion" in statement
        and "procmem_version_immutable" not in statement
        and "procmem_version_transition" not in statement
    ]
    return kept + own


def sqlite_version_trigger_names() -> list[str]:
    names = re.findall(
        r"CREATE TRIGGER (\w+) BEFORE \w+ ON library_procedureversion",
        " ".join(SQLITE_FORWARD + _erasure().SQLITE_FORWARD),
    )
    return sorted(set(names))


# ---------------------------------------------------------------------------------------------- after promotion
# 0015_environments_and_rollouts adds the status APPROVED (approved, not the production version) with
# three transitions, and holds an APPROVED version to the same approval check as an ACTIVE one. The
# functions below give the version guard as 0015 leaves it; a later migration that rebuilds
# library_procedureversion on SQLite re-creates `sqlite_promotion_triggers()`.

PROMOTION_TRANSITIONS = [("CANDIDATE", "APPROVED"), ("APPROVED", "ACTIVE"), ("APPROVED", "RETIRED")]
_ALLOWED_BEFORE = " OR ".join(f"(OLD.status = '{a}' AND NEW.status = '{b}')" for a, b in _invariants.ALLOWED)
_ALLOWED_AFTER = " OR ".join(
    f"(OLD.status = '{a}' AND NEW.status = '{b}')" for a, b in _invariants.ALLOWED + PROMOTION_TRANSITIONS
)
_PG_EVAL_BEFORE = "IF NEW.status = 'ACTIVE' THEN"
_PG_EVAL_AFTER = "IF NEW.status IN ('ACTIVE', 'APPROVED') THEN"
_SQLITE_EVAL_BEFORE = "WHEN NEW.status = 'ACTIVE' AND NOT EXISTS"
_SQLITE_EVAL_AFTER = "WHEN NEW.status IN ('ACTIVE', 'APPROVED') AND NOT EXISTS"


def _promoted(text: str, *, sqlite: bool) -> str:
    eval_before, eval_after = (_SQLITE_EVAL_BEFORE, _SQLITE_EVAL_AFTER) if sqlite else (_PG_EVAL_BEFORE, _PG_EVAL_AFTER)
    return text.replace(_ALLOWED_BEFORE, _ALLOWED_AFTER).replace(eval_before, eval_after)


def postgres_promotion_guard() -> str:
    """procmem_version_guard() (CREATE OR REPLACE) as 0015 leaves it: 0014's with the APPROVED
    transitions and the eval check on APPROVED versions too."""
    before = postgres_erasure_guard(later=True)
    after = _promoted(before, sqlite=False)
    assert _ALLOWED_AFTER in after and _PG_EVAL_AFTER in after
    return after


PROMOTION_SQLITE_OWN = [
    # a released version or one in a running rollout keeps its status until the release or the
    # rollout is gone (withdraw, promote, complete, roll back: the services remove them first)
    """CREATE TRIGGER procmem_version_released_keeps_status BEFORE UPDATE ON library_procedureversion
       WHEN NEW.status IS NOT OLD.status AND (
           EXISTS (SELECT 1 FROM library_procedurerelease r WHERE r.version_id = OLD.id)
           OR EXISTS (SELECT 1 FROM library_rollout r WHERE r.state = 'running'
                      AND (r.version_id = OLD.id OR r.control_version_id = OLD.id)))
       BEGIN SELECT RAISE(ABORT, 'procmem: a released version or one in a running rollout keeps its status'); END""",
]


def sqlite_promotion_triggers() -> list[str]:
    """The SQLite triggers on library_procedureversion as 0015 leaves them."""
    statements = [_promoted(s, sqlite=True) for s in sqlite_erasure_triggers(later=True)]
    assert any(_ALLOWED_AFTER in s for s in statements) and any(_SQLITE_EVAL_AFTER in s for s in statements)
    return statements + PROMOTION_SQLITE_OWN


def sqlite_promotion_trigger_names() -> list[str]:
    names = re.findall(r"CREATE TRIGGER (\w+) BEFORE \w+ ON library_procedureversion", " ".join(PROMOTION_SQLITE_OWN))
    return sorted(set(sqlite_version_trigger_names()) | set(names))


# ---------------------------------------------------------------------------------------------- after the erasure sweep
# 0023_erasure_sweep lets a version that is not erased have its text content (appliesWhen, steps,
# forbidden actions, pre/postconditions, verify command) rewritten while an erasure sweep is under
# way, when the new text carries a tombstone's reference: a later version that still shares erased
# text verbatim loses that text (library/services/erasure_sweep.py). Status, approval, content hash and every other
# column stay. A later migration that rebuilds library_procedureversion on SQLite re-creates
# `sqlite_sweep_triggers()`.

SWEEP_TEXT_COLUMNS = ["applies_when", "steps", "forbidden_actions", "preconditions", "postconditions", "verify_command"]
SWEEP_UNDER_WAY = "EXISTS (SELECT 1 FROM library_erasuresweep s WHERE s.finished_at IS NULL)"
REFERENCE_LIKE = "'%[erased with tombstone %'"


def _sweep_permit(sqlite: bool) -> str:
    erasure = _erasure()
    changed = erasure._sqlite_changed if sqlite else erasure._pg_changed
    kept = [c for c in IMMUTABLE_VERSION_COLUMNS if c not in SWEEP_TEXT_COLUMNS]
    cast = "" if sqlite else "::text"
    text = " || ".join(
        f"NEW.{c}{cast if c not in ('applies_when', 'verify_command') else ''}" for c in SWEEP_TEXT_COLUMNS
    )
    return (
        f"OLD.status <> 'ERASED' AND NEW.status = OLD.status AND {SWEEP_UNDER_WAY} "
        f"AND NOT ({changed(kept)}) AND NOT ({changed(_invariants.SET_ONCE_COLUMNS)}) AND ({text}) LIKE {REFERENCE_LIKE}"
    )


def postgres_sweep_guard() -> str:
    """procmem_version_guard() as 0023 leaves it: 0015's with the sweep's rewrite allowed."""
    guard = postgres_promotion_guard()
    anchor = "    IF NEW.status = 'ERASED' THEN"
    assert anchor in guard
    branch = f"    IF {_sweep_permit(sqlite=False)} THEN\n        RETURN NEW;\n    END IF;\n"
    return guard.replace(anchor, branch + anchor, 1)


def sqlite_sweep_triggers() -> list[str]:
    """The SQLite triggers on library_procedureversion as 0023 leaves them."""
    statements = []
    for statement in sqlite_promotion_triggers():
        if "CREATE TRIGGER procmem_version_immutable " in statement:
            head, when = statement.split("WHEN ", 1)
            condition, body = when.split("\n       BEGIN", 1)
            statement = f"{head}WHEN NOT ({_sweep_permit(sqlite=True)}) AND ({condition})\n       BEGIN{body}"
        statements.append(statement)
    return statements


# ---------------------------------------------------------------------------------------------- agent table rebuilds
# SQLite adds a column with a default by rebuilding the table (create, copy, drop, rename). 0015's
# release trigger reads library_agent, and SQLite refuses to rename a table into place while a
# trigger names it ("no such table: main.library_agent"). A migration that adds such a column to
# Agent drops the trigger first and re-creates it after: `agent_rebuild_operations(*operations)`.


def _release_guard() -> str:
    guards = importlib.import_module("library.migrations.0015_environments_and_rollouts").SQLITE_TABLE_GUARDS
    return next(s for s in guards if "CREATE TRIGGER procmem_release_approved BEFORE INSERT" in s)


def drop_agent_table_guard(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER IF EXISTS procmem_release_approved")


def create_agent_table_guard(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER IF EXISTS procmem_release_approved")
        schema_editor.execute(_release_guard())


def agent_rebuild_operations(*operations) -> list:
    """`operations` (AddFields on Agent) between dropping and re-creating the SQLite release trigger."""
    from django.db import migrations

    return [
        migrations.RunPython(drop_agent_table_guard, create_agent_table_guard),
        *operations,
        migrations.RunPython(create_agent_table_guard, drop_agent_table_guard),
    ]


# ---------------------------------------------------------------------------------------------- production's eval
# 0027_eval_run_environment: a version that becomes ACTIVE from CANDIDATE or APPROVED needs a
# passing approval or promotion eval of its exact content against production's set, and a run's
# kind and environment never change. Separate triggers (the version guard function stays as 0023
# left it); a later migration that rebuilds library_procedureversion on SQLite re-creates
# `SQLITE_PRODUCTION_EVAL[0]` (library_evalrun is never rebuilt: 0025_served_selection_evals).

_PRODUCTION_PASS = (
    "SELECT 1 FROM library_evalrun r WHERE r.version_id = NEW.id AND r.content_hash = NEW.content_hash"
    " AND r.state = 'done' AND r.verdict = 'pass' AND r.environment = 'production'"
    " AND r.kind IN ('approval', 'promotion')"
)
_BECOMES_ACTIVE = "NEW.status = 'ACTIVE' AND OLD.status IN ('CANDIDATE', 'APPROVED')"
_TARGET_CHANGED = "NEW.kind IS DISTINCT FROM OLD.kind OR NEW.environment IS DISTINCT FROM OLD.environment"
_PRODUCTION_EVAL_MESSAGE = (
    "procmem: a version becomes ACTIVE only with a passing eval of its exact content against production''s set"
)

POSTGRES_PRODUCTION_EVAL = f"""
CREATE OR REPLACE FUNCTION procmem_version_production_eval() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS ({_PRODUCTION_PASS}) THEN
        RAISE EXCEPTION '{_PRODUCTION_EVAL_MESSAGE} (version id %)', NEW.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER procmem_version_production_eval
    BEFORE UPDATE OF status ON library_procedureversion
    FOR EACH ROW WHEN ({_BECOMES_ACTIVE})
    EXECUTE FUNCTION procmem_version_production_eval();

CREATE OR REPLACE FUNCTION procmem_evalrun_target_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'procmem: an eval run keeps its kind and environment (run id %)', OLD.id
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
CREATE TRIGGER procmem_evalrun_target_kept
    BEFORE UPDATE ON library_evalrun
    FOR EACH ROW WHEN ({_TARGET_CHANGED})
    EXECUTE FUNCTION procmem_evalrun_target_kept();
"""

POSTGRES_PRODUCTION_EVAL_REVERSE = """
DROP TRIGGER IF EXISTS procmem_evalrun_target_kept ON library_evalrun;
DROP FUNCTION IF EXISTS procmem_evalrun_target_kept();
DROP TRIGGER IF EXISTS procmem_version_production_eval ON library_procedureversion;
DROP FUNCTION IF EXISTS procmem_version_production_eval();
"""

SQLITE_PRODUCTION_EVAL = [
    f"""CREATE TRIGGER procmem_version_production_eval BEFORE UPDATE ON library_procedureversion
       WHEN {_BECOMES_ACTIVE} AND NOT EXISTS ({_PRODUCTION_PASS})
       BEGIN SELECT RAISE(ABORT, '{_PRODUCTION_EVAL_MESSAGE}'); END""",
    f"""CREATE TRIGGER procmem_evalrun_target_kept BEFORE UPDATE ON library_evalrun
       WHEN {_TARGET_CHANGED.replace("IS DISTINCT FROM", "IS NOT")}
       BEGIN SELECT RAISE(ABORT, 'procmem: an eval run keeps its kind and environment'); END""",
]
SQLITE_PRODUCTION_EVAL_NAMES = ["procmem_version_production_eval", "procmem_evalrun_target_kept"]
