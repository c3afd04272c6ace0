"""manage.py redact_stored: applies the current redaction rules to what was stored under older ones:
session excerpts and regression cases."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from library.evals.cases import cases_redact_again
from library.formatting import count
from library.ingest.store import sessions_redact_again
from library.models import Agent


class Command(BaseCommand):
    help = (
        "Redacts the stored session excerpts and regression cases again with the current rules (run "
        "after an upgrade that widened them). Placeholders stay, so a second run changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--agent", help="only this agent's sessions and cases")

    def handle(self, *args, **options):
        agent = None
        if options["agent"]:
            agent = Agent.objects.filter(name=options["agent"]).first()
            if agent is None:
                raise CommandError(f"Unknown agent {options['agent']!r}")
        excerpts = sessions_redact_again(agent=agent)
        cases = cases_redact_again(agent=agent)
        self.stdout.write(
            f"Redacted {count(excerpts, 'stored excerpts')} and {count(cases, 'regression cases')} again."
        )
