"""Agent.api_rate_limits: the agent API's rate limits where they differ from the defaults
(library/agents/rate_limits.py).

On SQLite the column is added with ALTER TABLE ADD COLUMN, not by Django's table rebuild: the
rebuild drops and renames library_agent, which the invariant triggers of 0015 refuse ("no such
table: main.library_agent"). PostgreSQL adds it as Django always does."""

from django.db import migrations, models

FIELD = dict(
    blank=True,
    default=dict,
    help_text='The agent API\'s limits where they differ from the defaults: {"select": {"token": "600/minute", "ip": "1200/minute"}} (library/api/limits.py)',
)


def _field() -> models.JSONField:
    field = models.JSONField(**FIELD)
    field.set_attributes_from_name("api_rate_limits")
    return field


def add_column(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(
            """ALTER TABLE library_agent ADD COLUMN "api_rate_limits" text NOT NULL DEFAULT '{}' """
            """CHECK ((JSON_VALID("api_rate_limits") OR "api_rate_limits" IS NULL))"""
        )
        return
    schema_editor.add_field(apps.get_model("library", "Agent"), _field())


def drop_column(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute('ALTER TABLE library_agent DROP COLUMN "api_rate_limits"')
        return
    # the state before this migration has no such field: remove the one this migration added
    schema_editor.remove_field(apps.get_model("library", "Agent"), _field())


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0020_source_labels"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(model_name="agent", name="api_rate_limits", field=models.JSONField(**FIELD))
            ],
            database_operations=[migrations.RunPython(add_column, drop_column)],
        ),
    ]
