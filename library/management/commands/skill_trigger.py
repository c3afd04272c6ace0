from django.core.management.base import BaseCommand, CommandError

from library.models import Agent, ProcedureVersion, Status
from library.serving.skill_trigger import version_trigger


class Command(BaseCommand):
    help = (
        "Does each skill trigger? For every ACTIVE and CANDIDATE version of an agent: how often its served skill "
        "description alone ranks it first and in the top 3, against the other served skills' descriptions, on its "
        "intent's regression cases and labelled sessions (the figure of the eval panel; library/serving/skill_trigger.py)."
    )

    def add_arguments(self, parser):
        parser.add_argument("agent")

    def handle(self, *args, agent: str, **options):
        try:
            target = Agent.objects.get(name=agent)
        except Agent.DoesNotExist:
            raise CommandError(f"No agent named {agent!r}") from None
        versions = (
            ProcedureVersion.objects.filter(procedure__agent=target, status__in=[Status.ACTIVE, Status.CANDIDATE])
            .select_related("procedure__agent", "procedure__intent", "approved_by")
            .order_by("procedure__key", "number")
        )
        self.stdout.write("| version | status | tasks | first | top 3 | other intents' tasks won | says when |")
        self.stdout.write("| --- | --- | ---: | ---: | ---: | ---: | --- |")
        totals = [0, 0, 0]
        for version in versions:
            m = version_trigger(version)
            totals = [totals[0] + m.tasks, totals[1] + m.first, totals[2] + m.top3]
            self.stdout.write(
                f"| {m.label} | {version.status} | {m.tasks} | {m.first} | {m.top3} | "
                f"{m.wrongly_first}/{m.other_tasks} | {'yes' if m.says_when else 'NO'} |"
            )
        if totals[0]:
            self.stdout.write(
                f"\nAll: first {totals[1]}/{totals[0]} ({totals[1] / totals[0]:.0%}), "
                f"top 3 {totals[2]}/{totals[0]} ({totals[2] / totals[0]:.0%})"
            )
