"""A session's stored calls and excerpt are compressed with LZ4 instead of PostgreSQL's default
pglz where the server has LZ4 (PostgreSQL 14 and later, built with it, as Debian's is): storing 100
coding sessions (2.6 MB of calls) took 0.14–0.20 s instead of 0.18–0.28 s, the values stored the
same (compression is how a value lies on disk, not what it is; rows stored before keep pglz and
read as before). Issue 38, bench/RESULTS.md. Nothing on SQLite, nor on a server without LZ4."""

from django.db import migrations

COLUMNS = ("tool_calls", "redacted_excerpt")


def _set_compression(method: str):
    def run(apps, schema_editor):
        connection = schema_editor.connection
        if connection.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT %s = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'", [method]
            )
            row = cursor.fetchone()
            if not row or not row[0]:
                return
            table = schema_editor.quote_name("library_agentsession")
            cursor.execute(
                f"ALTER TABLE {table} "
                + ", ".join(f"ALTER COLUMN {schema_editor.quote_name(c)} SET COMPRESSION {method}" for c in COLUMNS)
            )

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0029_otlp_held_outcomes_and_limits"),
    ]

    operations = [
        migrations.RunPython(_set_compression("lz4"), _set_compression("pglz")),
    ]
