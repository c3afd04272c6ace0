"""Erasure with a tombstone (docs/design.md "Erasure"): the one path on which a version's content
may change.

0002_invariants makes content immutable and refuses every status change but four. This migration
replaces the version guard so that, in addition, exactly one more change is allowed:

    any status except ERASED → ERASED, with the content columns set to the wiped values
    (appliesWhen '', steps/requiredTools/forbiddenActions/skeleton/quarantine reasons [], evidence
    and provenance {}), every other immutable column (procedure, number, content hash, source,
    people, based-on, mining run, quarantined flag, created_at) unchanged, the approval columns
    unchanged, and only when a VersionTombstone row for this version and this content hash exists.

An ERASED version never changes again (any UPDATE refused), so erasure happens once. Every other
change to content is still refused. Tombstones are append-only (UPDATE and DELETE refused; on
SQLite UPDATE only, like the audit log, because the test flush deletes rows).
"""

import importlib

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from library.migrations import _sqlite_triggers

_invariants = importlib.import_module("library.migrations.0002_invariants")

WIPED = {
    "applies_when": ("''", "''"),
    "steps": ("'[]'::jsonb", "'[]'"),
    "required_tools": ("'[]'::jsonb", "'[]'"),
    "forbidden_actions": ("'[]'::jsonb", "'[]'"),
    "skeleton": ("'[]'::jsonb", "'[]'"),
    "quarantine_reasons": ("'[]'::jsonb", "'[]'"),
    "evidence": ("'{}'::jsonb", "'{}'"),
    "provenance": ("'{}'::jsonb", "'{}'"),
}
KEPT = [c for c in _invariants.IMMUTABLE_VERSION_COLUMNS if c not in WIPED]
SET_ONCE = _invariants.SET_ONCE_COLUMNS
ALLOWED = _invariants.ALLOWED


def _pg_changed(columns):
    return " OR ".join(f"NEW.{c} IS DISTINCT FROM OLD.{c}" for c in columns)


def _sqlite_changed(columns):
    return " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in columns)


_PG_WIPED = " AND ".join(f"NEW.{c} = {pg}" for c, (pg, _) in WIPED.items())
_SQLITE_WIPED = " AND ".join(f"NEW.{c} = {lite}" for c, (_, lite) in WIPED.items())

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
    IF OLD.status = 'ERASED' THEN
        RAISE EXCEPTION 'procmem: an erased version never changes again (version id %)', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF NEW.status = 'ERASED' THEN
        -- the one path on which content changes: to the wiped values, with a tombstone, once
        IF {_pg_changed(KEPT)} THEN
            RAISE EXCEPTION 'procmem: erasure keeps id, number, content hash and provenance columns (version id %)', OLD.id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        IF NOT ({_PG_WIPED}) THEN
            RAISE EXCEPTION 'procmem: erasure wipes all content and evidence (version id %)', OLD.id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        IF NOT EXISTS (SELECT 1 FROM library_versiontombstone t
                        WHERE t.version_id = NEW.id AND t.content_hash = OLD.content_hash) THEN
            RAISE EXCEPTION 'procmem: erasure needs its tombstone first (version id %)', OLD.id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        IF {_pg_changed(SET_ONCE)} THEN
            RAISE EXCEPTION 'procmem: erasure keeps the approval record (version id %)', OLD.id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END IF;
    IF {_pg_changed(_invariants.IMMUTABLE_VERSION_COLUMNS)} THEN
        RAISE EXCEPTION 'procmem: version content is immutable (version id %); an edit creates a new version', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF OLD.approved_by_id IS NOT NULL AND ({_pg_changed(SET_ONCE)}) THEN
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

CREATE OR REPLACE FUNCTION procmem_tombstone_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'procmem: a tombstone is never changed or removed (% refused)', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
CREATE TRIGGER procmem_tombstone_append_only
    BEFORE UPDATE OR DELETE ON library_versiontombstone
    FOR EACH ROW EXECUTE FUNCTION procmem_tombstone_append_only();
"""

POSTGRES_REVERSE = """
DROP TRIGGER IF EXISTS procmem_tombstone_append_only ON library_versiontombstone;
DROP FUNCTION IF EXISTS procmem_tombstone_append_only();
"""

_ERASURE = (
    f"(OLD.status <> 'ERASED' AND NEW.status = 'ERASED' AND {_SQLITE_WIPED} AND EXISTS ("
    "SELECT 1 FROM library_versiontombstone t WHERE t.version_id = NEW.id AND t.content_hash = OLD.content_hash))"
)
_sqlite_transition = " OR ".join(
    [f"(OLD.status = '{a}' AND NEW.status = '{b}')" for a, b in ALLOWED]
    + ["(OLD.status <> 'ERASED' AND NEW.status = 'ERASED')"]
)
WIPED_COLUMNS = list(WIPED)
# Replaces 0002's procmem_version_immutable and procmem_version_transition; adds two.
SQLITE_FORWARD = [
    f"""CREATE TRIGGER procmem_version_immutable BEFORE UPDATE ON library_procedureversion
       WHEN {_sqlite_changed(KEPT)} OR (({_sqlite_changed(WIPED_COLUMNS)}) AND NOT {_ERASURE})
       BEGIN SELECT RAISE(ABORT, 'procmem: version content is immutable; an edit creates a new version'); END""",
    f"""CREATE TRIGGER procmem_version_transition BEFORE UPDATE ON library_procedureversion
       WHEN NEW.status IS NOT OLD.status AND NOT ({_sqlite_transition})
       BEGIN SELECT RAISE(ABORT, 'procmem: status change not allowed'); END""",
    """CREATE TRIGGER procmem_version_erased_frozen BEFORE UPDATE ON library_procedureversion
       WHEN OLD.status = 'ERASED'
       BEGIN SELECT RAISE(ABORT, 'procmem: an erased version never changes again'); END""",
    """CREATE TRIGGER procmem_tombstone_no_update BEFORE UPDATE ON library_versiontombstone
       BEGIN SELECT RAISE(ABORT, 'procmem: a tombstone is never changed'); END""",
]
SQLITE_NAMES = [
    "procmem_version_immutable",
    "procmem_version_transition",
    "procmem_version_erased_frozen",
    "procmem_tombstone_no_update",
]


def _drop_sqlite(apps, schema_editor):
    """Before the table rebuild (SQLite rebuilds library_procedureversion to change its CHECK)."""
    if schema_editor.connection.vendor == "sqlite":
        for statement in _sqlite_triggers.SQLITE_REVERSE:
            schema_editor.execute(statement)
        for name in SQLITE_NAMES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")


def _create_sqlite_0002(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in _sqlite_triggers.SQLITE_FORWARD:
            schema_editor.execute(statement)


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_FORWARD, params=None)
    elif vendor == "sqlite":
        for statement in _sqlite_triggers.SQLITE_FORWARD:
            if "procmem_version_immutable" in statement or "procmem_version_transition" in statement:
                continue
            schema_editor.execute(statement)
        for statement in SQLITE_FORWARD:
            schema_editor.execute(statement)


def reverse(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_REVERSE, params=None)
        # back to 0002's version guard (without the erasure path)
        schema_editor.execute(
            "DROP TRIGGER IF EXISTS procmem_version_guard ON library_procedureversion; "
            "DROP FUNCTION IF EXISTS procmem_version_guard();",
            params=None,
        )
        schema_editor.execute(
            _invariants.POSTGRES_FORWARD.split("CREATE OR REPLACE FUNCTION procmem_evalrun_guard")[0], params=None
        )
    elif vendor == "sqlite":
        _drop_sqlite(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0007_merge_mining_evidence_and_review_day"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(_drop_sqlite, _create_sqlite_0002),
        migrations.CreateModel(
            name="VersionTombstone",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("procedure_key", models.CharField(max_length=200)),
                ("number", models.PositiveIntegerField()),
                ("content_hash", models.CharField(max_length=64)),
                ("status_before", models.CharField(max_length=10)),
                (
                    "ground",
                    models.CharField(
                        choices=[
                            ("personal_data", "Personal-data request"),
                            ("poisoned", "Poisoned or harmful content"),
                            ("other", "Other"),
                        ],
                        max_length=16,
                    ),
                ),
                ("reason", models.TextField()),
                ("erased_at", models.DateTimeField()),
            ],
            options={
                "ordering": ["-erased_at", "-id"],
            },
        ),
        migrations.RemoveConstraint(
            model_name="procedureversion",
            name="version_status_valid",
        ),
        migrations.AlterField(
            model_name="auditevent",
            name="action",
            field=models.CharField(
                choices=[
                    ("propose", "Proposed"),
                    ("revise", "Edited (new version)"),
                    ("approve", "Approved"),
                    ("reject", "Rejected"),
                    ("retire", "Retired"),
                    ("rollback", "Rolled back"),
                    ("auto_retire", "Retired by a newer approval"),
                    ("import", "Imported"),
                    ("grant", "Approver right granted"),
                    ("revoke", "Approver right revoked"),
                    ("token_create", "API token created"),
                    ("token_revoke", "API token revoked"),
                    ("tools_change", "Tool list changed"),
                    ("refused_at_load", "Refused at load"),
                    ("eval_start", "Eval run started"),
                    ("eval_finish", "Eval run finished"),
                    ("eval_cancel", "Eval run cancelled"),
                    ("mine", "Mining run"),
                    ("comment", "Commented"),
                    ("settings", "Agent settings changed"),
                    ("case_change", "Regression case changed"),
                    ("erase", "Erased (tombstone kept)"),
                ],
                db_index=True,
                max_length=20,
            ),
        ),
        migrations.AlterField(
            model_name="procedureversion",
            name="status",
            field=models.CharField(
                choices=[
                    ("CANDIDATE", "Candidate"),
                    ("ACTIVE", "Active"),
                    ("RETIRED", "Retired"),
                    ("REJECTED", "Rejected"),
                    ("ERASED", "Erased"),
                ],
                default="CANDIDATE",
                max_length=10,
            ),
        ),
        migrations.AddConstraint(
            model_name="procedureversion",
            constraint=models.CheckConstraint(
                condition=models.Q(("status__in", ["CANDIDATE", "ACTIVE", "RETIRED", "REJECTED", "ERASED"])),
                name="version_status_valid",
            ),
        ),
        migrations.AddField(
            model_name="versiontombstone",
            name="erased_by",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="+", to=settings.AUTH_USER_MODEL
            ),
        ),
        migrations.AddField(
            model_name="versiontombstone",
            name="version",
            field=models.OneToOneField(
                on_delete=django.db.models.deletion.PROTECT, related_name="tombstone", to="library.procedureversion"
            ),
        ),
        migrations.RunPython(forward, reverse),
    ]
