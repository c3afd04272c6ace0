"""Signals that the library sends and the people's side (reviews) listens to, so that `library`
never imports `reviews`. Every one is sent by library code, and only after the transaction that
caused it commits (`transaction.on_commit`)."""

from django.dispatch import Signal

# kwargs: agent_id. The agent's active set may have changed (approve, retire, rollback, tool list).
# Sent by library/services/; library/serving/active_set.py drops its cached set.
active_set_changed = Signal()

# kwargs: agent_id, version_ids (list[int]), mining_run_id (int | None). New candidates wait for review.
# Sent by the mining run.
candidates_created = Signal()

# kwargs: run_id. An eval run reached a final state (done, failed or cancelled).
# Sent by library/evals/eval_runs.py.
eval_run_finished = Signal()

# kwargs: version_id, missing_tools (list[str]). A version was refused at load, first time for this tool list.
# Sent by library/serving/active_set.py.
version_refused_at_load = Signal()

# kwargs: version_id. A version is being erased: sent INSIDE the erasing transaction (the one
# exception to "after commit"), so that what a listener wipes (reviews: comment texts) is wiped in the
# same transaction as the content, or not at all. A listener returns the texts it wiped (a list of
# str), so that the erasure sweep (library/services/erasure_sweep.py) removes their copies too. Sent by
# library/services/erasing.py version_erase.
version_erasing = Signal()

# kwargs: agent_id, version_id. A version was erased (after commit). library/serving/active_set.py drops this
# process's built set of the agent and its text-keyed caches (they held the erased text).
version_erased = Signal()

# kwargs: version_id, action ("approve", "retire" or "rollback"), user_id (int | None), reason (str).
# A person changed which version of a procedure is ACTIVE. Sent by library/services/.
version_status_changed = Signal()

# kwargs: version_id, reason (str), actor_label (str). Someone outside the review pages asks that an
# ACTIVE version be retired (`import_procedures --sync`: its file was removed from the procedures
# repository). reviews opens a demotion proposal; an admin confirms (retires) or dismisses it.
# Sent synchronously by library/interchange/procedure_files.py (outside any transaction of its own).
retirement_requested = Signal()
