from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from library.formatting import count
from library.interchange.procedure_files import ImportReport, import_library, library_differences, library_sync


class Command(BaseCommand):
    help = (
        "Imports procedure JSON files (a file, an agent directory, or a directory of agent directories). "
        "Every imported version arrives as a CANDIDATE; a bad file is reported with its path and reason and the "
        "others go on (exit 1 if any was bad); symbolic links, files over 5 MB or nested over 64 levels, and two files "
        "with one id are refused. --check reports what differs between the files and the library "
        "(exit 1 if anything does) and writes nothing; --sync turns each difference into what the library allows (a procedure without a file counts as removed only "
        "when its agent's whole directory was given and none of its files was refused)."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument(
            "--as-user", help="Record this user as the proposer (and, with --sync, the one who changes scope)"
        )
        parser.add_argument("--create-intents", action="store_true", help="Create intents the agent lacks")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--check", action="store_true", help="Report per procedure what differs; write nothing")
        mode.add_argument(
            "--sync",
            action="store_true",
            help="New or changed file → candidate; scope → scope change; removed file → retirement request",
        )

    def handle(self, *args, paths, as_user=None, create_intents=False, check=False, sync=False, **options):
        for path in paths:
            if not Path(path).exists():
                raise CommandError(f"{path}: does not exist")
        if check:
            return self._check(paths)
        user = None
        if as_user:
            try:
                user = get_user_model().objects.get(username=as_user)
            except get_user_model().DoesNotExist:
                raise CommandError(f"--as-user: no user named {as_user!r}") from None
        if sync:
            report = library_sync(paths, user=user, create_intents=create_intents)
            self._imported(report.imported)
            for label in report.scope_changed:
                self.stdout.write(f"  scope changed {label}")
            for label in report.retirement_requested:
                self.stdout.write(
                    f"  retirement requested {label} (an admin confirms or dismisses it on the demotions page)"
                )
            for line in report.not_applied:
                self.stdout.write(f"  not applied {line}")
            for line in report.partial:
                self.stdout.write(f"  partial {line}")
            self._fail_on_errors(report.imported)
            return
        report = import_library(paths, user=user, create_intents=create_intents)
        self._imported(report)
        self._fail_on_errors(report)

    def _imported(self, report: ImportReport) -> None:
        for item in report.created:
            self.stdout.write(f"  candidate {item}")
        for error in report.errors:
            self.stderr.write(f"  refused {error}")
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {len(report.created)} versions as candidates; {len(report.skipped)} already present were skipped."
            )
        )

    def _fail_on_errors(self, report: ImportReport) -> None:
        if report.errors:
            raise CommandError(
                f"{count(len(report.errors), 'files')} refused (nothing of them stored); the others were imported."
            )

    def _check(self, paths) -> None:
        comparison = library_differences(paths)
        for error in comparison.errors:
            self.stderr.write(f"  refused {error}")
        for difference in comparison.differences:
            self.stdout.write(f"  {difference}")
        for line in comparison.partial:
            self.stdout.write(f"  partial {line}")
        if comparison.differences or comparison.errors:
            raise CommandError(
                f"{count(len(comparison.differences), 'differences')} between the files and the library"
                + (f", {count(len(comparison.errors), 'bad files')}" if comparison.errors else "")
            )
        self.stdout.write(self.style.SUCCESS("The files and the library agree."))
