"""manage.py purge_raw_sessions: drops raw task text and tool arguments past the retention window."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from library.formatting import count
from library.ingest.store import sessions_purge_raw
from library.models import Agent


class Command(BaseCommand):
    help = "Drops the raw task text and tool-call arguments of sessions older than PROCMEM_RAW_RETENTION_DAYS."

    def add_arguments(self, parser):
        parser.add_argument(
            "--days", type=int, help=f"override the retention (default {settings.PROCMEM_RAW_RETENTION_DAYS})"
        )
        parser.add_argument("--agent", help="only this agent's sessions")

    def handle(self, *args, **options):
        if options["days"] is not None and options["days"] < 0:
            raise CommandError("--days must be 0 or more")
        agent = None
        if options["agent"]:
            agent = Agent.objects.filter(name=options["agent"]).first()
            if agent is None:
                raise CommandError(f"Unknown agent {options['agent']!r}")
        purged = sessions_purge_raw(agent=agent, older_than_days=options["days"])
        self.stdout.write(f"Purged the raw content of {count(purged, 'sessions')}.")
