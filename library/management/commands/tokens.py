"""Agent API tokens from the command line: create (shown once), list, revoke.

manage.py tokens create support_agent --scope read --name "prod reader" --expires-in-days 90
manage.py tokens list [support_agent] [--all]
manage.py tokens revoke pm_AbCdEfG       (the prefix `list` shows, or the token's id)
"""

from __future__ import annotations

from datetime import timedelta

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from library.api.tokens import token_create, token_is_live, token_revoke
from library.models import Agent, ApiToken

ACTOR = "manage.py tokens"


class Command(BaseCommand):
    help = "Creates (shown once), lists and revokes agent API tokens."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a token and print it once")
        create.add_argument("agent")
        create.add_argument("--scope", choices=ApiToken.Scope.values, required=True)
        create.add_argument("--name", default="")
        create.add_argument(
            "--expires-in-days", type=float, default=None, help="refused after this many days (default: never)"
        )
        listing = sub.add_parser("list", help="list tokens (live ones unless --all)")
        listing.add_argument("agent", nargs="?")
        listing.add_argument("--all", action="store_true", help="also revoked and expired tokens")
        revoke = sub.add_parser("revoke", help="revoke a token by its prefix or id")
        revoke.add_argument("token")

    def handle(self, *args, action: str, **options):
        getattr(self, f"_{action}")(**options)

    def _agent(self, name: str) -> Agent:
        try:
            return Agent.objects.get(name=name)
        except Agent.DoesNotExist:
            raise CommandError(f"No agent named {name!r}") from None

    def _create(self, *, agent, scope, name, expires_in_days, **_):
        expires_at = None
        if expires_in_days is not None:
            if not 0 < expires_in_days <= 3650:
                raise CommandError("--expires-in-days must be more than 0 and at most 3650")
            expires_at = timezone.now() + timedelta(days=expires_in_days)
        try:
            token, raw = token_create(
                agent=self._agent(agent), scope=scope, name=name, actor_label=ACTOR, expires_at=expires_at
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(raw)
        until = f", expires {token.expires_at:%Y-%m-%d %H:%M} UTC" if token.expires_at else ", never expires"
        self.stderr.write(f"Created {scope} token {token.prefix}… for {agent}{until}. It is shown only this once.")

    def _list(self, *, agent=None, all=False, **_):
        tokens = ApiToken.objects.select_related("agent").order_by("agent__name", "-created_at")
        if agent:
            tokens = tokens.filter(agent=self._agent(agent))
        now = timezone.now()
        rows = [t for t in tokens if all or token_is_live(t, now=now)]
        if not rows:
            self.stdout.write("No tokens.")
            return
        self.stdout.write(
            f"{'id':>5}  {'prefix':<11} {'agent':<20} {'scope':<7} {'state':<8} {'expires':<17} {'last used':<17} name"
        )
        for t in rows:
            state = "revoked" if t.revoked_at else ("expired" if not token_is_live(t, now=now) else "live")
            when = lambda d: f"{d:%Y-%m-%d %H:%M}" if d else "-"  # noqa: E731
            self.stdout.write(
                f"{t.pk:>5}  {t.prefix:<11} {t.agent.name:<20} {t.scope:<7} {state:<8} {when(t.expires_at):<17} {when(t.last_used_at):<17} {t.name}"
            )

    def _revoke(self, *, token, **_):
        matches = list(
            ApiToken.objects.filter(pk=int(token))
            if token.isdigit()
            else ApiToken.objects.filter(prefix__startswith=token)
        )
        if not matches:
            raise CommandError(f"No token matches {token!r} (give the prefix `tokens list` shows, or the id)")
        if len(matches) > 1:
            raise CommandError(f"{len(matches)} tokens start with {token!r}; give the id")
        revoked = token_revoke(token=matches[0], actor_label=ACTOR)
        self.stdout.write(
            f"Revoked {revoked.prefix}… of {revoked.agent.name} at {revoked.revoked_at:%Y-%m-%d %H:%M:%S} UTC."
        )
