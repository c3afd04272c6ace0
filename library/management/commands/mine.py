"""manage.py mine: runs the skeleton miner now (docs/mining.md)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from library.mining.runs import Trigger, mining_run_execute
from library.models import Agent


class Command(BaseCommand):
    help = "Mines finished sessions into CANDIDATE procedure versions for one agent or all agents."

    def add_arguments(self, parser):
        parser.add_argument("--agent", action="append", help="agent name (repeatable); default: every agent")
        parser.add_argument("--threshold", type=int, help="support threshold for this run (default: each agent's own)")
        parser.add_argument("--json", action="store_true", help="print each run's counts and skips as JSON")

    def handle(self, *args, **options):
        if options["threshold"] is not None and options["threshold"] < 1:
            raise CommandError("--threshold must be at least 1")
        agents = Agent.objects.order_by("name")
        if options["agent"]:
            agents = agents.filter(name__in=options["agent"])
            missing = set(options["agent"]) - set(agents.values_list("name", flat=True))
            if missing:
                raise CommandError(f"Unknown agent(s): {', '.join(sorted(missing))}")
        for agent in agents:
            run = mining_run_execute(agent=agent, support_threshold=options["threshold"], trigger=Trigger.MANUAL)
            versions = list(run.versions.select_related("procedure").order_by("procedure__key"))
            self.stdout.write(
                f"{agent.name}: mining run {run.pk}: {run.counts.get('sessions', 0)} sessions, "
                f"{len(versions)} candidate(s), {len(run.skipped)} intent(s) not proposed"
            )
            for version in versions:
                flag = " [QUARANTINED]" if version.quarantined else ""
                self.stdout.write(f"  + {version.procedure.key} v{version.number}{flag}: {version.evidence.get('summary', '')}")
            # the report names every intent, with what happened to it and why
            for entry in run.report or run.skipped:
                if entry.get("status") in ("mined", "quarantined"):
                    continue
                skeleton = entry.get("skeleton") or (entry.get("figures") or {}).get("topSkeleton")
                skeleton_text = " → ".join(skeleton) if skeleton else "-"
                status = f"{entry['status']}: " if entry.get("status") else ""
                self.stdout.write(f"  - {entry.get('intent') or '(agent)'} [{skeleton_text}]: {status}{entry['reason']}")
            if options["json"]:
                self.stdout.write(json.dumps({"run": run.pk, "counts": run.counts, "report": run.report}, indent=2))
