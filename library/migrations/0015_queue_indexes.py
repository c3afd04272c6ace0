"""Partial indexes on the candidates that serve each order of the review queue, so a page is read by
walking an index from the previous page's last row instead of sorting every candidate
(reviews.selectors.queue_page). PostgreSQL only: the demo's SQLite sorts its few candidates.

The support expression is the one reviews.selectors.neg_support() compiles to (the evidence's
support as an integer, 0 when absent or not a number, negated so "strongest first" ascends):
PostgreSQL uses an expression index only for the same expression, so the two change together."""

from django.db import migrations

NEG_SUPPORT = (
    "(CASE WHEN ((\"evidence\" ->> 'support')::text ~ '^[0-9]{1,9}$') "
    "THEN ((\"evidence\" ->> 'support'))::integer ELSE 0 END * -1)"
)
INDEXES = {
    # "group" (within one intent) and "evidence": strongest support first, then oldest
    "version_candidate_support_idx": (f"{NEG_SUPPORT}, created_at, id", "status = 'CANDIDATE'"),
    # "oldest", and "newest" read backwards
    "version_candidate_created_idx": ("created_at, id", "status = 'CANDIDATE'"),
    # the quarantined candidates come first in every order, and are few: their own small indexes
    "version_quarantined_support_idx": (f"{NEG_SUPPORT}, created_at, id", "status = 'CANDIDATE' AND quarantined"),
    # (with the procedure, so that the group counts of the quarantined read the index alone)
    "version_quarantined_created_idx": (
        "created_at, id) INCLUDE (procedure_id",
        "status = 'CANDIDATE' AND quarantined",
    ),
}


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, (columns, condition) in INDEXES.items():
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON library_procedureversion ({columns}) WHERE {condition}"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0014_coding_procedures"),
    ]

    operations = [migrations.RunPython(create, drop)]
