"""The migration that introduced threads turns every existing comment into an unanchored, open
thread of its own, keeping its author, version and time."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("reviews", "0002_metrics_rollup")]
AFTER = [("reviews", "0003_review_day")]


@pytest.mark.django_db(transaction=True)
def test_existing_comments_become_unanchored_threads(candidate, reviewer):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        Comment = old.get_model("reviews", "Comment")
        first = Comment.objects.create(version_id=candidate.pk, author_id=reviewer.pk, body="Why createApproval first?")
        second = Comment.objects.create(version_id=candidate.pk, author_id=reviewer.pk, body="And the window?")
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(AFTER)
    from reviews.models import Comment as NewComment
    from reviews.models import Thread

    threads = list(Thread.objects.order_by("id"))
    assert len(threads) == 2
    for thread, comment_id in zip(threads, (first.pk, second.pk)):
        comment = NewComment.objects.get(pk=comment_id)
        assert comment.thread_id == thread.pk
        assert (thread.version_id, thread.anchor, thread.step, thread.resolved_at) == (candidate.pk, "", None, None)
        assert thread.created_by_id == reviewer.pk and thread.created_at == comment.created_at


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_versions_that_exist_before_search_get_their_documents(candidate):
    """On PostgreSQL the migration writes the search document of every existing version (later
    ones get it from the insert trigger); on SQLite the column stays empty and search uses LIKE.
    PostgreSQL only: going back to library 0005 on SQLite unapplies the namespace migration's
    rebuild of library_procedure while the environments migration's trigger on it still exists,
    which SQLite refuses; the documents are a PostgreSQL feature."""
    library_before = [("library", "0005_session_received_idx")]
    executor = MigrationExecutor(connection)
    executor.migrate(library_before)
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    from library.models import ProcedureVersion

    version = ProcedureVersion.objects.get(pk=candidate.pk)
    if connection.vendor == "postgresql":
        assert version.search_vector is not None
        from reviews.search import ExactLexeme

        assert ProcedureVersion.objects.filter(search_vector=ExactLexeme("id:createapproval")).get() == version
    else:
        assert version.search_vector is None
