"""The candidates by procedure with their ids (a partial, covering index), so that the review queue's
counts per intent under "unassigned" read the index alone: the plain counts already do, on
(status, procedure), but "unassigned" needs each row's id to look for a live claim, and without it
in an index each of the up to 1,001 rows a count reads visits the table. PostgreSQL only, as
0015_queue_indexes: the demo's SQLite counts its few candidates."""

from django.db import migrations

NAME = "version_candidate_procedure_idx"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {NAME} ON library_procedureversion (procedure_id) INCLUDE (id) WHERE status = 'CANDIDATE'"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {NAME}")


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0018_merge_environments_and_queue_indexes"),
    ]

    operations = [migrations.RunPython(create, drop)]
