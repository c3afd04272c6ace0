"""The review day: each agent's review target (ageing badges), the new audit actions (claims,
threads), and the full-text document of every version.

On PostgreSQL a BEFORE INSERT trigger fills `search_vector` from the procedure's id and the four
content fields (bulk inserts included; content never changes, so the document never goes stale) and
a GIN index keeps search fast over 100,000 versions. The document is English full text (stemmed,
stop words dropped: "refunds over the limit" finds refund.over_limit) plus every identifier in the
text as an exact lexeme, lower-cased and prefixed `id:` so that it never meets a word of the
English parser (which reads `refund.over_limit` as `refund.over` and `limit`) — dotted or underscored names (`refund.over_limit`,
`order_id`) and camelCase tool names (`createApproval`) — so a search for a tool or an id matches
that exact name, not its parts. SQLite keeps the column NULL and searches with LIKE.
"""

import django.contrib.postgres.search
from django.db import migrations, models

from library.migrations import _sqlite_triggers

# An identifier: words joined by dots or underscores, or a camelCase word.
IDENTIFIER_RE = r"([A-Za-z][A-Za-z0-9]*(?:[._][A-Za-z0-9]+)+|[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*)"

POSTGRES_FORWARD = f"""
SET CONSTRAINTS ALL IMMEDIATE;
CREATE OR REPLACE FUNCTION procmem_identifier_lexemes(doc text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_to_tsvector(ARRAY(
        SELECT DISTINCT 'id:' || lower(m[1]) FROM regexp_matches(coalesce(doc, ''), '{IDENTIFIER_RE}', 'g') AS m
    ))
$$;

CREATE OR REPLACE FUNCTION procmem_json_text(value jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(value) = 'array'
        THEN array_to_string(ARRAY(SELECT jsonb_array_elements_text(value)), ' ') ELSE coalesce(value #>> '{{}}', '') END
$$;

CREATE OR REPLACE FUNCTION procmem_version_document(
    procedure_key text, applies_when text, steps jsonb, required_tools jsonb, forbidden_actions jsonb
) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT setweight(to_tsvector('english', coalesce(procedure_key, '') || ' ' || coalesce(applies_when, '')), 'A')
        || setweight(to_tsvector('english', procmem_json_text(steps) || ' ' || procmem_json_text(required_tools)), 'B')
        || setweight(to_tsvector('english', procmem_json_text(forbidden_actions)), 'C')
        || setweight(procmem_identifier_lexemes(
               coalesce(procedure_key, '') || ' ' || coalesce(applies_when, '') || ' ' || procmem_json_text(steps) || ' '
               || procmem_json_text(required_tools) || ' ' || procmem_json_text(forbidden_actions)), 'A')
$$;

CREATE OR REPLACE FUNCTION procmem_version_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_vector := procmem_version_document(
        (SELECT key FROM library_procedure WHERE id = NEW.procedure_id),
        NEW.applies_when, NEW.steps, NEW.required_tools, NEW.forbidden_actions);
    RETURN NEW;
END;
$$;
CREATE TRIGGER procmem_version_search BEFORE INSERT ON library_procedureversion
    FOR EACH ROW EXECUTE FUNCTION procmem_version_search();

UPDATE library_procedureversion v SET search_vector = procmem_version_document(
    p.key, v.applies_when, v.steps, v.required_tools, v.forbidden_actions)
    FROM library_procedure p WHERE p.id = v.procedure_id;

CREATE INDEX version_search_gin ON library_procedureversion USING gin (search_vector);
"""

POSTGRES_REVERSE = """
DROP INDEX IF EXISTS version_search_gin;
DROP TRIGGER IF EXISTS procmem_version_search ON library_procedureversion;
DROP FUNCTION IF EXISTS procmem_version_search();
DROP FUNCTION IF EXISTS procmem_version_document(text, text, jsonb, jsonb, jsonb);
DROP FUNCTION IF EXISTS procmem_json_text(jsonb);
DROP FUNCTION IF EXISTS procmem_identifier_lexemes(text);
"""


def _search_forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_FORWARD)


def _search_reverse(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_REVERSE)


def _drop_sqlite_triggers(apps, schema_editor):
    # SQLite rebuilds the agent table to add a NOT NULL column; drop and re-create the invariant
    # triggers around it as 0003 does (PostgreSQL alters in place).
    if schema_editor.connection.vendor == "sqlite":
        for statement in _sqlite_triggers.SQLITE_REVERSE:
            schema_editor.execute(statement)


def _create_sqlite_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in _sqlite_triggers.SQLITE_FORWARD:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0005_session_received_idx"),
    ]

    operations = [
        migrations.RunPython(_drop_sqlite_triggers, _create_sqlite_triggers),
        migrations.AddField(
            model_name="agent",
            name="review_target_hours",
            field=models.PositiveIntegerField(
                default=72,
                help_text="How long a candidate of this agent should wait for review; the queue's ageing badges compare against it",
            ),
        ),
        migrations.AddField(
            model_name="procedureversion",
            name="search_vector",
            field=django.contrib.postgres.search.SearchVectorField(editable=False, null=True),
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
                    ("claim", "Candidate claimed"),
                    ("assign", "Candidate assigned"),
                    ("release", "Candidate released"),
                    ("thread_resolve", "Thread resolved"),
                    ("thread_reopen", "Thread reopened"),
                ],
                db_index=True,
                max_length=20,
            ),
        ),
        migrations.RunPython(_create_sqlite_triggers, _drop_sqlite_triggers),
        migrations.RunPython(_search_forward, _search_reverse),
    ]
