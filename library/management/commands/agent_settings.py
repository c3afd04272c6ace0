"""manage.py agent_settings: shows or changes an agent's capture settings (docs: mining), through the one
agent-settings service (library/agents/settings.py)."""

from __future__ import annotations

import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from library.agents.settings import CAPTURE_FIELDS, LABELS, agent_settings_update
from library.models import Agent

_ON = {"on", "true", "yes", "1"}
_OFF = {"off", "false", "no", "0"}


def _switch(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _ON:
        return True
    if lowered in _OFF:
        return False
    raise CommandError(f"--auto-capture: {value!r} is not on or off")


class Command(BaseCommand):
    help = (
        "Shows an agent's capture settings, or changes them: automatic capture (opt-in), minimum tool "
        "calls, support threshold (distinct tasks), significance level, backtest share; for coding agents the "
        "traces a task family needs and the family rules."
    )

    def add_arguments(self, parser):
        parser.add_argument("agent")
        parser.add_argument("--auto-capture", type=_switch, dest="auto_capture_enabled", metavar="on|off")
        parser.add_argument("--min-tool-calls", type=int, dest="min_tool_calls")
        parser.add_argument("--support-threshold", type=int, dest="support_threshold")
        parser.add_argument("--significance-level", type=float, dest="significance_level")
        parser.add_argument("--backtest-share", type=float, dest="backtest_share")
        parser.add_argument(
            "--coding-min-traces",
            type=int,
            dest="coding_min_traces",
            help="coding agents: resolved sessions with a verify command a task family needs",
        )
        parser.add_argument(
            "--coding-family-rules",
            dest="coding_family_rules",
            metavar="JSON",
            help='coding agents: task families by path, e.g. \'[{"prefix": "django/db/migrations", "family": "django/db/migrations"}]\' ("[]" clears)',
        )
        parser.add_argument("--json", action="store_true", help="print the settings as JSON")

    def handle(self, *args, agent, **options):
        try:
            agent_obj = Agent.objects.get(name=agent)
        except Agent.DoesNotExist:
            raise CommandError(f"No agent named {agent!r}") from None
        changes = {field: options[field] for field in CAPTURE_FIELDS if options.get(field) is not None}
        if changes:
            try:
                agent_obj = agent_settings_update(
                    agent=agent_obj, user=None, changes=changes, actor_label="manage.py agent_settings"
                )
            except ValidationError as exc:
                raise CommandError(
                    "; ".join(f"{field}: {m}" for field, messages in exc.message_dict.items() for m in messages)
                ) from None
        snapshot = {field: getattr(agent_obj, field) for field in CAPTURE_FIELDS}
        if options["json"]:
            self.stdout.write(json.dumps({"agent": agent_obj.name, **snapshot}))
            return
        self.stdout.write(f"{agent_obj.name}: capture settings{' (changed)' if changes else ''}")
        for field in CAPTURE_FIELDS:
            value = snapshot[field]
            shown = ("on" if value else "off") if isinstance(value, bool) else value
            self.stdout.write(f"  {LABELS[field]}: {shown}")
