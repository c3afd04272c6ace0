from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from library.demo import DEMO_AGENT, DEMO_USERS, seed_demo
from library.models import Agent


class Command(BaseCommand):
    help = (
        "Creates the demo data (the refund example of docs/design.md) and prints the demo users' passwords. "
        "Refuses a database that already has users (unless --force): the demo users have published passwords."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--force",
            action="store_true",
            help="seed even though the database has users (never on a production database: it creates admin / a known password)",
        )

    def handle(self, *args, force: bool = False, **options):
        has_users = get_user_model().objects.exists()
        if has_users and Agent.objects.filter(name=DEMO_AGENT).exists() and not force:
            # a demo database seeded before (`make demo` runs this on every start): nothing to do
            self.stdout.write(f"Demo agent {DEMO_AGENT} already exists; left as it is.")
        elif has_users and not force:
            raise CommandError(
                "This database already has users, so it is not a fresh demo database. seed_demo would add the "
                "demo users, among them a superuser with a published password. Use a new database, or pass "
                "--force if you really want the demo data here."
            )
        else:
            result = seed_demo()
            if result.created:
                self.stdout.write(self.style.SUCCESS(f"Seeded demo agent {result.agent.name}."))
            else:
                self.stdout.write(f"Demo agent {result.agent.name} already exists; left as it is.")
        self.stdout.write("Demo users (user name / password / role):")
        for name, (password, role) in DEMO_USERS.items():
            self.stdout.write(f"  {name:<10} {password:<20} {role}")
