from django.core.management.base import BaseCommand, CommandError

from library.api.tokens import token_create
from library.models import Agent, ApiToken


class Command(BaseCommand):
    help = "Creates an agent API token (read: the active set; ingest: write sessions) and prints it once."

    def add_arguments(self, parser):
        parser.add_argument("agent")
        parser.add_argument("--scope", choices=ApiToken.Scope.values, required=True)
        parser.add_argument("--name", default="")

    def handle(self, *args, agent, scope, name, **options):
        try:
            agent_obj = Agent.objects.get(name=agent)
        except Agent.DoesNotExist:
            raise CommandError(f"No agent named {agent!r}") from None
        token, raw = token_create(agent=agent_obj, scope=scope, name=name, actor_label="manage.py create_token")
        self.stdout.write(raw)
        self.stderr.write(f"Created {scope} token {token.prefix}… for {agent}. It is shown only this once.")
