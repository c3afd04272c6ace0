from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from library.interchange.procedure_files import export_library
from library.models import Agent


class Command(BaseCommand):
    help = "Writes every procedure with all its versions as JSON: DIR/<agent>/<procedure id>.json"

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path)
        parser.add_argument("--agent", action="append", help="Only this agent (repeatable)")

    def handle(self, *args, directory: Path, agent=None, **options):
        agents = None
        if agent:
            agents = list(Agent.objects.filter(name__in=agent))
            missing = set(agent) - {a.name for a in agents}
            if missing:
                raise CommandError(f"No agent named {', '.join(sorted(missing))}")
        written = export_library(directory, agents=agents)
        if not written:
            scope = f"{'agent' if len(agent) == 1 else 'agents'} {', '.join(sorted(agent))}" if agent else "any agent"
            self.stdout.write(
                f"Nothing to export: {scope} has no procedure. Wrote an empty export at {directory} "
                "(a directory with no procedure files; import_procedures reads it as nothing to import)."
            )
            return
        self.stdout.write(self.style.SUCCESS(f"Wrote {len(written)} procedure files under {directory}"))
