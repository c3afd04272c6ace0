from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from library.interchange import ImportFileError, import_library
from library.management.importing import import_and_report


class Command(BaseCommand):
    help = (
        "Imports procedure JSON files (a file, an agent directory, or a directory of agent directories). "
        "Every imported version arrives as a CANDIDATE; nothing is stored if any file is malformed."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--as-user", help="Record this user as the proposer")
        parser.add_argument("--create-intents", action="store_true", help="Create intents the agent lacks")

    def handle(self, *args, paths, as_user=None, create_intents=False, **options):
        user = None
        if as_user:
            try:
                user = get_user_model().objects.get(username=as_user)
            except get_user_model().DoesNotExist:
                raise CommandError(f"--as-user: no user named {as_user!r}") from None
        import_and_report(
            self, lambda: import_library(paths, user=user, create_intents=create_intents),
            refused=ImportFileError, listed="created", prefix="candidate", noun="versions as candidates",
        )
