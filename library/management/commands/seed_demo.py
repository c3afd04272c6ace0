from django.core.management.base import BaseCommand

from library.demo import DEMO_USERS, seed_demo


class Command(BaseCommand):
    help = "Creates the demo data (the refund example of docs/design.md) and prints the demo users' passwords."

    def handle(self, *args, **options):
        result = seed_demo()
        if result.created:
            self.stdout.write(self.style.SUCCESS(f"Seeded demo agent {result.agent.name}."))
        else:
            self.stdout.write(f"Demo agent {result.agent.name} already exists; left as it is.")
        self.stdout.write("Demo users (user name / password / role):")
        for name, (password, role) in DEMO_USERS.items():
            self.stdout.write(f"  {name:<10} {password:<20} {role}")
