"""A claim carries its version's place in the queue (status, quarantined, support, age, agent and
intent), so that "assigned to me" reads one person's claims alone (reviews.selectors._my_claims).

The database keeps the copies true, whatever writes: on insert a trigger fills them from the version
and its procedure, and a change of a version's status, quarantine, evidence or age, or of a
procedure's agent or intent, rewrites the copies of its claims in the same statement. The support is
the expression of reviews.selectors.neg_support() (library/migrations/0015_queue_indexes.py's
NEG_SUPPORT on PostgreSQL; on SQLite the same test of the JSON value as text). Existing claims are
filled here. tests/reviews/test_claim_keys.py checks each path on both databases.

SQLite drops a table's triggers when a migration rebuilds the table: a later migration that rebuilds
library_procedureversion, library_procedure or reviews_candidateclaim must re-create these
(SQLITE_TRIGGERS), which the tests above would otherwise catch."""

import importlib

import django.db.models.deletion
from django.db import migrations, models

NEG_SUPPORT = importlib.import_module("library.migrations.0015_queue_indexes").NEG_SUPPORT

_PG_REFRESH = (
    "UPDATE reviews_candidateclaim c SET version_status = v.status, quarantined = v.quarantined, "
    "neg_support = {neg}, version_created_at = v.created_at, agent_id = p.agent_id, intent_id = p.intent_id "
    "FROM library_procedureversion v JOIN library_procedure p ON p.id = v.procedure_id "
    "WHERE v.id = c.version_id AND {where}"
)
PG_FORWARD = f"""
CREATE OR REPLACE FUNCTION procmem_claim_keys() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT v.status, v.quarantined, {NEG_SUPPORT.replace('"evidence"', 'v."evidence"')}, v.created_at, p.agent_id, p.intent_id
      INTO NEW.version_status, NEW.quarantined, NEW.neg_support, NEW.version_created_at, NEW.agent_id, NEW.intent_id
      FROM library_procedureversion v JOIN library_procedure p ON p.id = v.procedure_id
     WHERE v.id = NEW.version_id;
    RETURN NEW;
END;
$$;
CREATE TRIGGER procmem_claim_keys BEFORE INSERT OR UPDATE OF version_id ON reviews_candidateclaim
    FOR EACH ROW EXECUTE FUNCTION procmem_claim_keys();

CREATE OR REPLACE FUNCTION procmem_claim_keys_of_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {_PG_REFRESH.format(neg=NEG_SUPPORT.replace('"evidence"', 'v."evidence"'), where="c.version_id = NEW.id")};
    RETURN NULL;
END;
$$;
CREATE TRIGGER procmem_claim_keys_of_version AFTER UPDATE OF status, quarantined, evidence, created_at ON library_procedureversion
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.quarantined IS DISTINCT FROM NEW.quarantined
                       OR OLD.evidence IS DISTINCT FROM NEW.evidence OR OLD.created_at IS DISTINCT FROM NEW.created_at)
    EXECUTE FUNCTION procmem_claim_keys_of_version();

CREATE OR REPLACE FUNCTION procmem_claim_keys_of_procedure() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {_PG_REFRESH.format(neg=NEG_SUPPORT.replace('"evidence"', 'v."evidence"'), where="v.procedure_id = NEW.id")};
    RETURN NULL;
END;
$$;
CREATE TRIGGER procmem_claim_keys_of_procedure AFTER UPDATE OF agent_id, intent_id ON library_procedure
    FOR EACH ROW WHEN (OLD.agent_id IS DISTINCT FROM NEW.agent_id OR OLD.intent_id IS DISTINCT FROM NEW.intent_id)
    EXECUTE FUNCTION procmem_claim_keys_of_procedure();
"""
PG_FILL = _PG_REFRESH.format(neg=NEG_SUPPORT.replace('"evidence"', 'v."evidence"'), where="TRUE")
PG_REVERSE = """
DROP TRIGGER IF EXISTS procmem_claim_keys_of_procedure ON library_procedure;
DROP FUNCTION IF EXISTS procmem_claim_keys_of_procedure();
DROP TRIGGER IF EXISTS procmem_claim_keys_of_version ON library_procedureversion;
DROP FUNCTION IF EXISTS procmem_claim_keys_of_version();
DROP TRIGGER IF EXISTS procmem_claim_keys ON reviews_candidateclaim;
DROP FUNCTION IF EXISTS procmem_claim_keys();
"""

# SQLite: the support as Django compiles neg_support() there (the JSON value as text, 1 to 9 digits)
_SUPPORT = "CAST(json_extract(v.evidence, '$.support') AS TEXT)"
_SQLITE_NEG = f"(CASE WHEN {_SUPPORT} NOT GLOB '*[^0-9]*' AND length({_SUPPORT}) BETWEEN 1 AND 9 THEN -CAST({_SUPPORT} AS INTEGER) ELSE 0 END)"
_OF_CLAIM = "FROM library_procedureversion v WHERE v.id = reviews_candidateclaim.version_id"
_OF_PROCEDURE = "FROM library_procedureversion v JOIN library_procedure p ON p.id = v.procedure_id WHERE v.id = reviews_candidateclaim.version_id"
_SQLITE_REFRESH = (
    f"UPDATE reviews_candidateclaim SET version_status = (SELECT v.status {_OF_CLAIM}), "
    f"quarantined = (SELECT v.quarantined {_OF_CLAIM}), neg_support = (SELECT {_SQLITE_NEG} {_OF_CLAIM}), "
    f"version_created_at = (SELECT v.created_at {_OF_CLAIM}), agent_id = (SELECT p.agent_id {_OF_PROCEDURE}), "
    f"intent_id = (SELECT p.intent_id {_OF_PROCEDURE}) WHERE {{where}};"
)
SQLITE_TRIGGERS = [
    f"""CREATE TRIGGER procmem_claim_keys AFTER INSERT ON reviews_candidateclaim BEGIN
        {_SQLITE_REFRESH.format(where="id = NEW.id")} END""",
    f"""CREATE TRIGGER procmem_claim_keys_of_version AFTER UPDATE OF status, quarantined, evidence, created_at ON library_procedureversion BEGIN
        {_SQLITE_REFRESH.format(where="version_id = NEW.id")} END""",
    f"""CREATE TRIGGER procmem_claim_keys_of_procedure AFTER UPDATE OF agent_id, intent_id ON library_procedure BEGIN
        {_SQLITE_REFRESH.format(where="version_id IN (SELECT id FROM library_procedureversion WHERE procedure_id = NEW.id)")} END""",
]
SQLITE_FILL = _SQLITE_REFRESH.format(where="1")
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS procmem_claim_keys_of_procedure",
    "DROP TRIGGER IF EXISTS procmem_claim_keys_of_version",
    "DROP TRIGGER IF EXISTS procmem_claim_keys",
]


def fill(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_FILL)
    elif vendor == "sqlite":
        schema_editor.execute(SQLITE_FILL)


def triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_FORWARD)
    elif vendor == "sqlite":
        for statement in SQLITE_TRIGGERS:
            schema_editor.execute(statement)


def drop_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_REVERSE)
    elif vendor == "sqlite":
        for statement in SQLITE_REVERSE:
            schema_editor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ("library", "0018_merge_environments_and_queue_indexes"),
        ("reviews", "0006_quality_of_use_rollup"),
    ]

    operations = [
        migrations.AddField("candidateclaim", "version_status", models.CharField(max_length=10, null=True)),
        migrations.AddField("candidateclaim", "quarantined", models.BooleanField(null=True)),
        migrations.AddField("candidateclaim", "neg_support", models.IntegerField(default=0)),
        migrations.AddField("candidateclaim", "version_created_at", models.DateTimeField(null=True)),
        migrations.AddField(
            "candidateclaim", "agent",
            models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="library.agent"),
        ),
        migrations.AddField(
            "candidateclaim", "intent",
            models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="library.intent"),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.AlterField(
            "candidateclaim", "version_status",
            models.CharField(
                max_length=10,
                choices=[
                    ("CANDIDATE", "Candidate"), ("ACTIVE", "Active"), ("APPROVED", "Approved (not in production)"),
                    ("RETIRED", "Retired"), ("REJECTED", "Rejected"), ("ERASED", "Erased"),
                ],
            ),
        ),
        migrations.AlterField("candidateclaim", "quarantined", models.BooleanField()),
        migrations.AlterField("candidateclaim", "version_created_at", models.DateTimeField()),
        migrations.AlterField(
            "candidateclaim", "agent",
            models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="library.agent"),
        ),
        migrations.AlterField(
            "candidateclaim", "intent",
            models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="library.intent"),
        ),
        # after the SQLite table rebuilds of the AlterFields, which would drop a trigger on the claims
        migrations.RunPython(triggers, drop_triggers),
    ]
