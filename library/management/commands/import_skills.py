from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from library.formatting import count
from library.models import Agent
from library.skill_import.importing import skills_import_path


class Command(BaseCommand):
    help = (
        "Imports Agent Skills (a folder of skill folders, a git checkout, one skill folder, or a .zip/.skill "
        "archive) for an agent: each SKILL.md becomes a CANDIDATE through the write gate (validation, tool "
        "contract, redaction, policy screen), then review and eval as usual. An unchanged skill changes nothing; "
        "a bad one is reported with its path and reason and the others go on (exit 1 if any was bad)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--agent", required=True, help="The agent the skills become procedures of")
        parser.add_argument("--as-user", help="Record this user as the proposer")
        parser.add_argument(
            "--intent", default="", help="Put new procedures under this intent (default: the skill's own name)"
        )

    def handle(self, *args, path: Path, agent: str, as_user=None, intent="", **options):
        try:
            target = Agent.objects.get(name=agent)
        except Agent.DoesNotExist:
            raise CommandError(f"--agent: no agent named {agent!r}") from None
        user = None
        if as_user:
            try:
                user = get_user_model().objects.get(username=as_user)
            except get_user_model().DoesNotExist:
                raise CommandError(f"--as-user: no user named {as_user!r}") from None
        report = skills_import_path(agent=target, path=path, user=user, intent=intent)
        for where, version in report.created:
            flag = " (quarantined by the policy screen)" if version.quarantined else ""
            self.stdout.write(f"  candidate {target.name}/{version.procedure.key} v{version.number}{flag}  ← {where}")
        for where, label in report.unchanged:
            self.stdout.write(f"  unchanged {label}  ← {where}")
        for name in report.intents_created:
            self.stdout.write(f"  intent created {name}")
        for warning in report.warnings:
            self.stdout.write(f"  warning {warning}")
        for error in report.errors:
            self.stderr.write(f"  refused {error}")
        self.stdout.write(
            self.style.SUCCESS(
                f"{count(len(report.created), 'skills')} imported as candidates, {len(report.unchanged)} unchanged, "
                f"{len(report.errors)} refused."
            )
        )
        if report.errors:
            raise CommandError(
                f"{count(len(report.errors), 'skills')} refused (nothing of them stored); the others went on."
            )
