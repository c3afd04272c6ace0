"""manage.py redact_sessions: the earlier name of redact_stored (same arguments, same work)."""

from library.management.commands.redact_stored import Command  # noqa: F401
