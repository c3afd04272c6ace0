"""manage.py mine: runs the miner now (docs/mining.md): the skeleton miner, or for a coding agent the task-family miner."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from library.formatting import count
from library.mining.mining_runs import HoldOut, Trigger, mining_run_execute
from library.models import Agent


class Command(BaseCommand):
    help = "Mines finished sessions into CANDIDATE procedure versions for one agent or all agents."

    def add_arguments(self, parser):
        parser.add_argument("--agent", action="append", help="agent name (repeatable); default: every agent")
        parser.add_argument("--threshold", type=int, help="support threshold for this run (default: each agent's own)")
        parser.add_argument(
            "--hold-out",
            choices=[HoldOut.NEWEST, HoldOut.TASKS],
            default=HoldOut.NEWEST,
            help="what the backtest holds back: the newest share of each intent's sessions (default), or the last share "
            "of its sorted task keys (every session of those tasks: for data with many sessions per task)",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="print one JSON list of the runs (counts, report, candidates) on stdout; the summary goes to stderr",
        )

    def handle(self, *args, **options):
        if options["threshold"] is not None and options["threshold"] < 1:
            raise CommandError("--threshold must be at least 1")
        agents = Agent.objects.order_by("name")
        if options["agent"]:
            agents = agents.filter(name__in=options["agent"])
            missing = set(options["agent"]) - set(agents.values_list("name", flat=True))
            if missing:
                raise CommandError(f"Unknown agent{'s' if len(missing) > 1 else ''}: {', '.join(sorted(missing))}")
        # with --json, stdout is one JSON list of the runs (for jq) and the summary goes to stderr
        summary = self.stderr if options["json"] else self.stdout
        runs = []
        for agent in agents:
            run = mining_run_execute(
                agent=agent,
                support_threshold=options["threshold"],
                trigger=Trigger.MANUAL,
                hold_out=options["hold_out"],
            )
            versions = list(run.versions.select_related("procedure").order_by("procedure__key"))
            summary.write(
                f"{agent.name}: mining run {run.pk}: {count(run.counts.get('sessions', 0), 'sessions')}, "
                f"{count(len(versions), 'candidates')}, {count(len(run.skipped), 'intents not proposed')}"
            )
            without_intent = run.counts.get("withoutIntent", 0)
            if without_intent:
                summary.write(
                    f"  ! {count(without_intent, 'sessions')} without an intent {'was' if without_intent == 1 else 'were'} "
                    "not mined: send an intent with each "
                    "session, or label them (import_sessions --intent-from)"
                )
            for version in versions:
                flag = " [QUARANTINED]" if version.quarantined else ""
                if (version.evidence.get("orderBeyondTools") or {}).get("toolList"):
                    flag += " [a tool list, not an order]"
                summary.write(
                    f"  + {version.procedure.key} v{version.number}{flag}: {version.evidence.get('summary', '')}"
                )
            # the report names every intent, with what happened to it and why
            for entry in run.report or run.skipped:
                if entry.get("status") in ("mined", "quarantined"):
                    continue
                skeleton = entry.get("skeleton") or (entry.get("figures") or {}).get("topSkeleton")
                # a coding agent's entry names its task family (library/mining/coding_runs.py)
                skeleton_text = (
                    f"family {entry['family']}" if entry.get("family") else (" → ".join(skeleton) if skeleton else "-")
                )
                status = f"{entry['status']}: " if entry.get("status") else ""
                if entry.get("toolList"):
                    status += "[a tool list, not an order] "
                summary.write(f"  - {entry.get('intent') or '(agent)'} [{skeleton_text}]: {status}{entry['reason']}")
            runs.append(
                {
                    "agent": agent.name,
                    "run": run.pk,
                    "counts": run.counts,
                    "report": run.report,
                    "candidates": [{"id": v.procedure.key, "version": v.number, "pk": v.pk} for v in versions],
                }
            )
        if options["json"]:
            self.stdout.write(json.dumps(runs, indent=2))
