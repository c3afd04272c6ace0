from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from library.evals.cases import CaseImportError, import_cases, parse_jsonl, parse_tau2, tau2_tools
from library.management.importing import import_and_report
from library.models import Agent


class Command(BaseCommand):
    help = (
        "Imports regression cases from a JSONL file (one case a line), or from a tau2-bench task file "
        "with --tau2 (reason_for_call as the task, the gold actions as the expected calls). Every line is "
        "validated first; nothing is stored if one is malformed. Cases already imported are skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--agent", help="The agent the cases belong to (required with --tau2)")
        parser.add_argument(
            "--tau2", action="store_true", help="The file is a tau2-bench task list (tau2_*_tasks.json)"
        )
        parser.add_argument("--create-intents", action="store_true", help="Create intents the agent lacks")
        parser.add_argument(
            "--create-agent",
            action="store_true",
            help="With --tau2: create the agent when missing, with the tools the tasks name",
        )

    def handle(self, *args, path, agent=None, tau2=False, create_intents=False, create_agent=False, **options):
        try:
            if tau2:
                items = parse_tau2(path)
            else:
                with open(path, encoding="utf-8") as handle:
                    items = parse_jsonl(handle, source=str(path))
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc}") from None
        except CaseImportError as exc:
            raise CommandError(f"Nothing was imported. {exc}") from None
        target = None
        if agent:
            target = Agent.objects.filter(name=agent).first()
            if target is None:
                if not (tau2 and create_agent):
                    raise CommandError(f"--agent: no agent named {agent!r}" + (" (add --create-agent)" if tau2 else ""))
                target = Agent.objects.create(
                    name=agent,
                    tools=tau2_tools(items),
                    description=f"Imported with the tau2-bench tasks of {path.name}",
                )
                self.stdout.write(f"Created agent {agent} with {len(target.tools)} tools.")
        elif tau2:
            raise CommandError("--tau2 needs --agent")
        import_and_report(
            self,
            lambda: import_cases(items, agent=target, create_intents=create_intents),
            refused=CaseImportError,
            listed="intents_created",
            prefix="new intent",
            noun="regression cases",
        )
