"""Erasure reaches the audit log (docs/design.md "Erasure"): the audit log stays append-only, with
one exception. While an erasure sweep is under way (a library_erasuresweep row without
`finished_at`, which exists only inside the erasing transaction: the sweep is created and finished
in it), an audit row may change its reason, before and after, and nothing else, and only to a text
that carries a tombstone's reference ("[erased with tombstone N]"). DELETE stays refused (on SQLite,
UPDATE only, as before: the test flush deletes rows).

The same holds for a version that is not erased: under a sweep its text content (appliesWhen, steps,
forbidden actions, pre/postconditions, verify command) may be rewritten to a text carrying a
reference, with its status, approval, content hash and every other column unchanged
(`_sqlite_triggers.postgres_sweep_guard` / `sqlite_sweep_triggers`): a later version that still
shares erased text verbatim loses that text and is flagged for review."""

import django.db.models.deletion
from django.db import migrations, models

from library.migrations import _sqlite_triggers

KEPT_AUDIT_COLUMNS = ["id", "at", "actor_id", "actor_label", "action", "agent_id", "procedure_id", "version_id"]
REFERENCE_LIKE = "'%[erased with tombstone %'"


def _unchanged(columns, distinct):
    return " AND ".join(f"NEW.{c} {distinct} OLD.{c}" for c in columns)


POSTGRES_FORWARD = f"""
CREATE OR REPLACE FUNCTION procmem_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE'
       AND EXISTS (SELECT 1 FROM library_erasuresweep s WHERE s.finished_at IS NULL)
       AND {_unchanged(KEPT_AUDIT_COLUMNS, "IS NOT DISTINCT FROM")}
       AND (NEW.reason || NEW.before::text || NEW.after::text) LIKE {REFERENCE_LIKE} THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'procmem: the audit log is append-only (% refused)', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
"""

POSTGRES_REVERSE = """
CREATE OR REPLACE FUNCTION procmem_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'procmem: the audit log is append-only (% refused)', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
"""

SQLITE_FORWARD = f"""CREATE TRIGGER procmem_audit_no_update BEFORE UPDATE ON library_auditevent
       WHEN NOT (EXISTS (SELECT 1 FROM library_erasuresweep s WHERE s.finished_at IS NULL)
                 AND {_unchanged(KEPT_AUDIT_COLUMNS, "IS")}
                 AND (NEW.reason || NEW.before || NEW.after) LIKE {REFERENCE_LIKE})
       BEGIN SELECT RAISE(ABORT, 'procmem: the audit log is append-only (UPDATE refused)'); END"""
SQLITE_REVERSE = """CREATE TRIGGER procmem_audit_no_update BEFORE UPDATE ON library_auditevent
       BEGIN SELECT RAISE(ABORT, 'procmem: the audit log is append-only (UPDATE refused)'); END"""


def _replace_sqlite_immutable(schema_editor, statements):
    schema_editor.execute("DROP TRIGGER IF EXISTS procmem_version_immutable")
    schema_editor.execute(next(s for s in statements if "CREATE TRIGGER procmem_version_immutable " in s))


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_FORWARD, params=None)
        schema_editor.execute(_sqlite_triggers.postgres_sweep_guard(), params=None)
    elif schema_editor.connection.vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER IF EXISTS procmem_audit_no_update")
        schema_editor.execute(SQLITE_FORWARD)
        _replace_sqlite_immutable(schema_editor, _sqlite_triggers.sqlite_sweep_triggers())


def reverse(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_REVERSE, params=None)
        schema_editor.execute(_sqlite_triggers.postgres_promotion_guard(), params=None)
    elif schema_editor.connection.vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER IF EXISTS procmem_audit_no_update")
        schema_editor.execute(SQLITE_REVERSE)
        _replace_sqlite_immutable(schema_editor, _sqlite_triggers.sqlite_promotion_triggers())


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0022_otlp_spans_and_channels"),
    ]

    operations = [
        migrations.CreateModel(
            name="ErasureSweep",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("fingerprints", models.JSONField(blank=True, default=list)),
                (
                    "rewritten",
                    models.JSONField(blank=True, default=dict, help_text='{"library.AuditEvent": [pk, ...], ...}'),
                ),
                (
                    "flagged_versions",
                    models.JSONField(
                        blank=True, default=list, help_text="Later versions that shared erased text verbatim"
                    ),
                ),
                (
                    "remaining",
                    models.JSONField(
                        blank=True, default=list, help_text="Copies the check after the sweep still found"
                    ),
                ),
                ("started_at", models.DateTimeField()),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                (
                    "tombstone",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.PROTECT, related_name="sweep", to="library.versiontombstone"
                    ),
                ),
            ],
            options={
                "ordering": ["-started_at", "-id"],
            },
        ),
        migrations.RunPython(forward, reverse),
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
                    ("erase_copy", "Erased text removed (flagged for review)"),
                    ("review", "Re-reviewed (kept ACTIVE)"),
                    ("demotion_propose", "Demotion proposed"),
                    ("demotion_dismiss", "Demotion dismissed"),
                    ("demotion_confirm", "Demotion confirmed"),
                    ("conflict_scan", "Conflict scan changed the open conflicts"),
                    ("conflict_ack", "Approved despite a conflict (acknowledged)"),
                    ("claim", "Candidate claimed"),
                    ("assign", "Candidate assigned"),
                    ("release", "Candidate released"),
                    ("thread_resolve", "Thread resolved"),
                    ("thread_reopen", "Thread reopened"),
                    ("stage", "Released to a non-production environment"),
                    ("promote", "Promoted to production"),
                    ("withdraw", "Withdrawn from an environment"),
                    ("rollout_start", "Rollout started"),
                    ("rollout_complete", "Rollout completed"),
                    ("rollout_rollback", "Rollout rolled back"),
                    ("scope", "Scope changed (namespace, roles, priority, confidence)"),
                    ("namespace_create", "Namespace created"),
                ],
                db_index=True,
                max_length=20,
            ),
        ),
    ]
