"""How sessions lie in PostgreSQL (issue 38, the import's speed): the calls and excerpts compressed
with LZ4 where the server has it (migration 0030), and the jsonb parameters written by
pydantic-core (library/ingest/store.py): what is read back is what was stored."""

from __future__ import annotations

import pytest
from django.db import connection

from library.ingest.formats import ImportOptions, parse_item
from library.ingest.store import sessions_store
from library.models import AgentSession

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def test_calls_and_excerpts_are_compressed_with_lz4_where_the_server_has_it():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        has_lz4 = cursor.fetchone()[0]
        cursor.execute(
            "SELECT attname, attcompression::text FROM pg_attribute WHERE attrelid = 'library_agentsession'::regclass "
            "AND attname IN ('tool_calls', 'redacted_excerpt')"
        )
        methods = dict(cursor.fetchall())
    assert methods == (
        {"tool_calls": "l", "redacted_excerpt": "l"} if has_lz4 else {"tool_calls": "", "redacted_excerpt": ""}
    )


def test_a_stored_session_reads_back_as_it_was_prepared(agent):
    # long outputs (TOAST-compressed), characters beyond ASCII, escapes, numbers of every kind
    output = ('Traceback (most recent call last):\n  File "/testbed/x.py", line 3\n' * 200) + 'é … \u2028 \\ " \t'
    item = {
        "instance_id": "repo__repo-1",
        "info": {"exit_status": "Submitted", "submission": "diff --git a/x.py b/x.py\n"},
        "messages": [
            {"role": "user", "content": "<pr_description>Fix x: café ☕</pr_description>"},
            {"role": "assistant", "content": "```bash\npython -c 'print(1e16, 0.1, -3)'\n```"},
            {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{output}</output>"},
        ],
    }
    session = parse_item(item, fmt="mini-swe-agent", options=ImportOptions())
    result = sessions_store(agent=agent, sessions=[session])
    assert result.stored == ["repo__repo-1"]
    row = AgentSession.objects.get(agent=agent, session_id="repo__repo-1")
    assert row.tool_calls == session.tool_calls
    assert row.skeleton == session.skeleton
    assert row.redacted_excerpt[1]["args"]["command"] == "python -c 'print(1e16, 0.1, -3)'"
    assert row.redacted_excerpt[0]["text"] == "Fix x: café ☕"
