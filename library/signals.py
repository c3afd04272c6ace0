"""Signals other parts listen to. Sent only after the transaction that caused them commits."""

from django.dispatch import Signal

# kwargs: agent_id. Sent when an agent's active set may have changed (approve, retire, rollback,
# tool-list change). Notifications and metrics subscribe; the API needs no cache bust (ETag is computed).
active_set_changed = Signal()
