"""Signals that the library sends and the people's side (reviews) listens to, so that `library`
never imports `reviews`. Every one is sent only after the transaction that caused it commits
(`transaction.on_commit`)."""

from django.dispatch import Signal

# kwargs: agent_id. The agent's active set may have changed (approve, retire, rollback, tool list).
active_set_changed = Signal()

# kwargs: agent_id, version_ids (list[int]), mining_run_id (int | None). New candidates wait for review.
candidates_created = Signal()

# kwargs: run_id. An eval run reached a final state (done, failed or cancelled).
eval_run_finished = Signal()

# kwargs: version_id, missing_tools (list[str]). A version was refused at load, first time for this tool list.
version_refused_at_load = Signal()

# kwargs: version_id, message. A metric of an ACTIVE version fell significantly below its eval result.
metric_warning = Signal()
