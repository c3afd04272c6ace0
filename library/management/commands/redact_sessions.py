"""manage.py redact_sessions: applies the current redaction rules to excerpts stored under older ones."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from library.ingest.store import sessions_redact_again
from library.models import Agent


class Command(BaseCommand):
    help = (
        "Redacts the stored session excerpts again with the current rules (run after an upgrade that "
        "widened them). Placeholders stay, so a second run changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--agent", help="only this agent's sessions")

    def handle(self, *args, **options):
        agent = None
        if options["agent"]:
            agent = Agent.objects.filter(name=options["agent"]).first()
            if agent is None:
                raise CommandError(f"Unknown agent {options['agent']!r}")
        changed = sessions_redact_again(agent=agent)
        self.stdout.write(f"Redacted {changed} stored excerpt(s) again.")
