"""Database-enforced invariants (docs/design.md "Invariants").

Constraints in 0001 already give: (procedure, number) unique; at most one ACTIVE version per
procedure (partial unique index); an ACTIVE version has approved_by, approved_at and an eval run.
The triggers here add what a constraint cannot say:

- a version is born CANDIDATE; its content and provenance never change; approval fields are set
  once; only the four allowed status transitions happen; versions are never deleted;
- an ACTIVE version's eval run is finished, passing, for this version and this exact content hash;
- a finished eval run's verdict never changes;
- the audit log is append-only (UPDATE and DELETE refused).

PostgreSQL (production, CI) gets all of them. SQLite (the one-command demo) gets the same checks
except the DELETE guards, because Django's test flush on SQLite deletes rows (PostgreSQL truncates).
"""

from django.db import migrations

IMMUTABLE_VERSION_COLUMNS = [
    "procedure_id",
    "number",
    "applies_when",
    "steps",
    "required_tools",
    "forbidden_actions",
    "evidence",
    "content_hash",
    "source",
    "proposed_by_id",
    "edited_by_id",
    "provenance",
    "based_on_id",
    "mining_run_id",
    "quarantined",
    "quarantine_reasons",
    "skeleton",
    "created_at",
]
SET_ONCE_COLUMNS = ["approved_by_id", "approved_at", "approval_eval_run_id"]
ALLOWED = [("CANDIDATE", "ACTIVE"), ("CANDIDATE", "REJECTED"), ("ACTIVE", "RETIRED"), ("RETIRED", "ACTIVE")]
FINISHED_EVAL_COLUMNS = ["state", "verdict", "content_hash", "version_id", "verdict_detail"]


def _pg_changed(columns, op="IS DISTINCT FROM"):
    return " OR ".join(f"NEW.{c} {op} OLD.{c}" for c in columns)


def _sqlite_changed(columns):
    return " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in columns)


POSTGRES_FORWARD = f"""
CREATE OR REPLACE FUNCTION procmem_version_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    run record;
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'procmem: procedure versions are never deleted (version id %)', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NEW.status <> 'CANDIDATE' THEN
            RAISE EXCEPTION 'procmem: a new version must be CANDIDATE, not %', NEW.status
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        IF NEW.approved_by_id IS NOT NULL OR NEW.approved_at IS NOT NULL OR NEW.approval_eval_run_id IS NOT NULL THEN
            RAISE EXCEPTION 'procmem: a new version cannot carry an approval'
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END IF;
    IF {_pg_changed(IMMUTABLE_VERSION_COLUMNS)} THEN
        RAISE EXCEPTION 'procmem: version content is immutable (version id %); an edit creates a new version', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF OLD.approved_by_id IS NOT NULL AND ({_pg_changed(SET_ONCE_COLUMNS)}) THEN
        RAISE EXCEPTION 'procmem: an approval is recorded once and never changed (version id %)', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF NEW.status IS DISTINCT FROM OLD.status AND NOT (
        {" OR ".join(f"(OLD.status = '{a}' AND NEW.status = '{b}')" for a, b in ALLOWED)}
    ) THEN
        RAISE EXCEPTION 'procmem: status change % -> % is not allowed', OLD.status, NEW.status
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF NEW.status = 'ACTIVE' THEN
        SELECT state, verdict, content_hash, version_id INTO run
            FROM library_evalrun WHERE id = NEW.approval_eval_run_id;
        IF NOT FOUND OR run.state <> 'done' OR run.verdict <> 'pass'
           OR run.content_hash <> NEW.content_hash OR run.version_id <> NEW.id THEN
            RAISE EXCEPTION 'procmem: an ACTIVE version needs a passing eval run on its exact content (version id %)', NEW.id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER procmem_version_guard
    BEFORE INSERT OR UPDATE OR DELETE ON library_procedureversion
    FOR EACH ROW EXECUTE FUNCTION procmem_version_guard();

CREATE OR REPLACE FUNCTION procmem_evalrun_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.state IN ('done', 'failed', 'cancelled') THEN
            RAISE EXCEPTION 'procmem: a finished eval run is kept (run id %)', OLD.id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN OLD;
    END IF;
    IF OLD.state IN ('done', 'failed', 'cancelled') AND ({_pg_changed(FINISHED_EVAL_COLUMNS)}) THEN
        RAISE EXCEPTION 'procmem: a finished eval run never changes its verdict (run id %)', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER procmem_evalrun_guard
    BEFORE UPDATE OR DELETE ON library_evalrun
    FOR EACH ROW EXECUTE FUNCTION procmem_evalrun_guard();

CREATE OR REPLACE FUNCTION procmem_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'procmem: the audit log is append-only (% refused)', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
CREATE TRIGGER procmem_audit_append_only
    BEFORE UPDATE OR DELETE ON library_auditevent
    FOR EACH ROW EXECUTE FUNCTION procmem_audit_append_only();
"""

POSTGRES_REVERSE = """
DROP TRIGGER IF EXISTS procmem_audit_append_only ON library_auditevent;
DROP FUNCTION IF EXISTS procmem_audit_append_only();
DROP TRIGGER IF EXISTS procmem_evalrun_guard ON library_evalrun;
DROP FUNCTION IF EXISTS procmem_evalrun_guard();
DROP TRIGGER IF EXISTS procmem_version_guard ON library_procedureversion;
DROP FUNCTION IF EXISTS procmem_version_guard();
"""

_sqlite_transition = " OR ".join(f"(OLD.status = '{a}' AND NEW.status = '{b}')" for a, b in ALLOWED)
SQLITE_FORWARD = [
    """CREATE TRIGGER procmem_version_insert BEFORE INSERT ON library_procedureversion
       WHEN NEW.status <> 'CANDIDATE' OR NEW.approved_by_id IS NOT NULL OR NEW.approval_eval_run_id IS NOT NULL
       BEGIN SELECT RAISE(ABORT, 'procmem: a new version must be an unapproved CANDIDATE'); END""",
    f"""CREATE TRIGGER procmem_version_immutable BEFORE UPDATE ON library_procedureversion
       WHEN {_sqlite_changed(IMMUTABLE_VERSION_COLUMNS)}
       BEGIN SELECT RAISE(ABORT, 'procmem: version content is immutable; an edit creates a new version'); END""",
    f"""CREATE TRIGGER procmem_version_approval_once BEFORE UPDATE ON library_procedureversion
       WHEN OLD.approved_by_id IS NOT NULL AND ({_sqlite_changed(SET_ONCE_COLUMNS)})
       BEGIN SELECT RAISE(ABORT, 'procmem: an approval is recorded once and never changed'); END""",
    f"""CREATE TRIGGER procmem_version_transition BEFORE UPDATE ON library_procedureversion
       WHEN NEW.status IS NOT OLD.status AND NOT ({_sqlite_transition})
       BEGIN SELECT RAISE(ABORT, 'procmem: status change not allowed'); END""",
    """CREATE TRIGGER procmem_version_active_eval BEFORE UPDATE ON library_procedureversion
       WHEN NEW.status = 'ACTIVE' AND NOT EXISTS (
           SELECT 1 FROM library_evalrun r WHERE r.id = NEW.approval_eval_run_id AND r.state = 'done'
           AND r.verdict = 'pass' AND r.content_hash = NEW.content_hash AND r.version_id = NEW.id)
       BEGIN SELECT RAISE(ABORT, 'procmem: an ACTIVE version needs a passing eval run on its exact content'); END""",
    f"""CREATE TRIGGER procmem_evalrun_finished BEFORE UPDATE ON library_evalrun
       WHEN OLD.state IN ('done', 'failed', 'cancelled') AND ({_sqlite_changed(FINISHED_EVAL_COLUMNS)})
       BEGIN SELECT RAISE(ABORT, 'procmem: a finished eval run never changes its verdict'); END""",
    """CREATE TRIGGER procmem_audit_no_update BEFORE UPDATE ON library_auditevent
       BEGIN SELECT RAISE(ABORT, 'procmem: the audit log is append-only (UPDATE refused)'); END""",
]
SQLITE_REVERSE = [
    f"DROP TRIGGER IF EXISTS {name}"
    for name in (
        "procmem_version_insert",
        "procmem_version_immutable",
        "procmem_version_approval_once",
        "procmem_version_transition",
        "procmem_version_active_eval",
        "procmem_evalrun_finished",
        "procmem_audit_no_update",
    )
]


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_FORWARD, params=None)
    elif vendor == "sqlite":
        for statement in SQLITE_FORWARD:
            schema_editor.execute(statement)
    else:  # pragma: no cover - settings refuse other engines
        raise RuntimeError(f"procmem supports PostgreSQL and SQLite, not {vendor}")


def reverse(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_REVERSE, params=None)
    elif vendor == "sqlite":
        for statement in SQLITE_REVERSE:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("library", "0001_initial")]
    operations = [migrations.RunPython(forward, reverse)]
