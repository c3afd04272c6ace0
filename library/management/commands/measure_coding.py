"""manage.py measure_coding: what a coding agent's task-family procedures would have saved, leave one
task out over its stored sessions (library/coding/measure.py; docs/mining.md)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from library.coding.families import clean_family_rules
from library.coding.measure import measure, traces_from_rows
from library.formatting import count
from library.models import Agent, AgentSession
from procmem_client.ranking import Ranker  # the bundled model, loaded on first use
from procmem_client.task_files import TASK_FILES


def _percent(figure: dict) -> str:
    return f"{figure['count']} of {figure['of']}" + (
        f" ({100 * figure['rate']:.0f} %)" if figure.get("rate") is not None else ""
    )


class Command(BaseCommand):
    help = (
        "Leave one task out over a coding agent's sessions: for each resolved one, the task-family procedures "
        "of the other tasks of its repository (with --across-repositories: of every repository, the agents' "
        "sessions pooled) are recalled with its task text; reports the verify command form match, the edited files "
        "the pointer names, the failed test invocations it avoids and how often the first pointer is another "
        "repository's, per repository and overall."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "agent",
            nargs="+",
            help="the coding agent (several: their sessions pooled as one library; the first one's settings)",
        )
        parser.add_argument(
            "--across-repositories",
            action="store_true",
            help="offer each task every repository's families, not only its own repository's",
        )
        parser.add_argument(
            "--min-traces",
            type=int,
            help="resolved sessions with a verify command a family needs (default: the agent's)",
        )
        parser.add_argument(
            "--family-rules",
            metavar="JSON",
            help="family rules to use instead of the agent's (a JSON list of {prefix, family})",
        )
        parser.add_argument(
            "--task-files",
            type=int,
            default=TASK_FILES,
            metavar="N",
            help="each pointer names first the N files the task's words point to in what the repository's other "
            f"sessions saw, as the select endpoint's taskFiles and the clients' recall serve it (default {TASK_FILES}, "
            "chosen leaving one repository out; 0: the set's pointer without them)",
        )
        parser.add_argument("--cap", type=int, help="pointers recalled per task (default: the agent's injection cap)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, agent, min_traces, family_rules, cap, across_repositories, task_files, **options):
        agents = []
        for name in dict.fromkeys(agent):
            try:
                agents.append(Agent.objects.get(name=name))
            except Agent.DoesNotExist:
                raise CommandError(f"No agent named {name!r}") from None
        agent_obj = agents[0]
        try:
            rules = clean_family_rules(
                _loads(family_rules) if family_rules is not None else agent_obj.coding_family_rules
            )
        except ValueError as exc:
            raise CommandError(f"--family-rules: {exc}") from None
        min_traces = min_traces if min_traces is not None else agent_obj.coding_min_traces
        if min_traces < 1:
            raise CommandError("--min-traces must be at least 1")
        if task_files < 0:
            raise CommandError("--task-files must be 0 or more")
        cap = cap if cap is not None else (agent_obj.injection_cap or 2)
        rows = (
            AgentSession.objects.filter(agent__in=agents)
            .order_by("pk")
            .values_list("session_id", "task_key", "task", "resolved", "tool_calls")
        )
        traces = traces_from_rows(rows.iterator(chunk_size=200))
        if not traces:
            raise CommandError(f"No stored sessions of {', '.join(a.name for a in agents)}")

        ranker = Ranker()

        def recall(records, task):
            return ranker.index(records).select(task=task or "(empty)", cap=cap)["injected"]

        result = measure(
            traces,
            recall,
            min_traces=min_traces,
            rules=rules,
            across_repositories=across_repositories,
            task_files=task_files,
        ).to_dict()
        result["parameters"] = {
            "agent": agent_obj.name,
            "agents": [a.name for a in agents],
            "acrossRepositories": across_repositories,
            "minTraces": min_traces,
            "familyRules": [r.__dict__ for r in rules],
            "cap": cap,
            "taskFiles": task_files,
        }
        if options["json"]:
            self.stdout.write(_dumps(result))
            return
        self.stdout.write(
            f"{', '.join(a.name for a in agents)}: leave one task out"
            + (", every repository's families offered" if across_repositories else "")
            + f", min traces {min_traces}, {count(len(rules), 'family rules')}, cap {cap}"
            + (f", {count(task_files, 'file')} for the task's words first" if task_files else "")
        )
        for name, figures in [("overall", result["overall"]), *result["repositories"].items()]:
            failed = figures["failedTestInvocations"]
            self.stdout.write(
                f"  {name}: {figures['resolvedTraces']} resolved sessions, {figures['recalled']} recalled a pointer "
                f"(the first another repository's in {figures['firstFromAnotherRepository']['count']}); "
                f"verify form matches in {_percent(figures['verifyMatch'])}; the first pointer names an edited file in "
                f"{_percent(figures['namesEditedFile'])}, a recalled one in {_percent(figures['namesEditedFileAnyRecalled'])}; "
                f"failed test invocations before the first pass {failed['before']} ({failed['perTrace']} a session), "
                f"avoided {failed['avoided']} ({failed['reduction']}), of which the command was wrong {failed['commandFailures']}"
            )


def _loads(text: str):
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc})") from None


def _dumps(value) -> str:
    return json.dumps(value, indent=1, sort_keys=True)
