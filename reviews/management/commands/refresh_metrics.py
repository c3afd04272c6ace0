"""Brings the metrics rollup up to date and checks for metric warnings, in this process."""

from django.core.management.base import BaseCommand, CommandError

from library.models import Agent
from reviews.metrics.alerts import metric_warnings_check
from reviews.metrics.rollup import metrics_refresh


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


class Command(BaseCommand):
    help = "Refresh the daily metrics rollup (incremental; --full rebuilds) and open/clear metric warnings."

    def add_arguments(self, parser):
        parser.add_argument("--agent", help="only this agent (name)")
        parser.add_argument("--full", action="store_true", help="rebuild every day from all sessions")
        parser.add_argument("--no-warnings", action="store_true", help="skip the metric warning check")

    def handle(self, *args, agent=None, full=False, no_warnings=False, **options):
        agents = Agent.objects.all()
        if agent:
            agents = agents.filter(name=agent)
            if not agents.exists():
                raise CommandError(f"no agent named {agent!r}")
        for agent_obj in agents:
            result = metrics_refresh(agent=agent_obj, full=full)
            opened = [] if no_warnings else metric_warnings_check(agent=agent_obj)
            self.stdout.write(
                f"{agent_obj.name}: {'full' if result.full else 'incremental'} refresh, "
                f"{_n(result.days, 'day')}, {_n(result.sessions_read, 'session')} read, "
                f"{_n(len(opened), 'warning')} opened"
            )
