"""Eval runs name the environment whose served set they replayed against (docs/design.md "Eval
replays"), and the database holds production's gate to it.

- `EvalRun.environment` (default `production`: every earlier run replayed against production's
  ACTIVE set) and the kind `promotion` (an APPROVED version against production's set).
- A version that becomes ACTIVE from CANDIDATE (approved straight for production) or from APPROVED
  (promoted, or its rollout completed) needs a finished, passing approval or promotion eval of
  its exact content (this version, this content hash) whose environment is production. The
  approval-run check of 0002/0015 (`approval_eval_run`, passing, on the exact content) stays as it
  was: this adds to it, so an approval that replayed against staging's set alone no longer makes a
  version ACTIVE.
- A run's kind and environment never change once written (the check above relies on them).

SQLite (the demo) gets the same two triggers; the column is added in place (library_evalrun cannot
be rebuilt: 0025_served_selection_evals). A later migration that rebuilds library_procedureversion
on SQLite re-creates `_sqlite_triggers.SQLITE_PRODUCTION_EVAL`.
"""

from django.db import migrations, models

from library.migrations import _sqlite_triggers

COLUMN = ("library_evalrun", "environment", "varchar(32) NOT NULL DEFAULT 'production'")


def _add_column(apps, schema_editor):
    table, column, definition = COLUMN
    schema_editor.execute(f'ALTER TABLE {table} ADD COLUMN "{column}" {definition}')


def _drop_column(apps, schema_editor):
    table, column, _ = COLUMN
    schema_editor.execute(f'ALTER TABLE {table} DROP COLUMN "{column}"')


def _create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(_sqlite_triggers.POSTGRES_PRODUCTION_EVAL, params=None)
    elif vendor == "sqlite":
        for statement in _sqlite_triggers.SQLITE_PRODUCTION_EVAL:
            schema_editor.execute(statement)


def _drop_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(_sqlite_triggers.POSTGRES_PRODUCTION_EVAL_REVERSE, params=None)
    elif vendor == "sqlite":
        for name in _sqlite_triggers.SQLITE_PRODUCTION_EVAL_NAMES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0026_agent_coding_families"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(_add_column, _drop_column)],
            state_operations=[
                migrations.AddField(
                    model_name="evalrun",
                    name="environment",
                    field=models.CharField(
                        default="production",
                        help_text="The environment whose served set the baseline is",
                        max_length=32,
                    ),
                ),
                migrations.AlterField(
                    model_name="evalrun",
                    name="kind",
                    field=models.CharField(
                        choices=[
                            ("approval", "Approval: the set with the candidate added"),
                            ("retire", "Retirement: the set with the version removed"),
                            ("rollback", "Rollback: the set with the version replaced by its predecessor"),
                            (
                                "promotion",
                                "Promotion: production's set with the approved version in place of the active one",
                            ),
                        ],
                        default="approval",
                        max_length=10,
                    ),
                ),
                migrations.AlterField(
                    model_name="evalrun",
                    name="baseline_hash",
                    field=models.CharField(
                        blank=True, help_text="Hash of the target environment's set at the start", max_length=64
                    ),
                ),
            ],
        ),
        migrations.RunPython(_create_triggers, _drop_triggers),
    ]
