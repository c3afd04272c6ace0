"""What the import commands share: run one all-or-nothing import and report it the same way."""

from __future__ import annotations

from collections.abc import Callable

from django.core.management.base import BaseCommand, CommandError

from library.interchange.procedure_files import ImportReport


def import_and_report(
    command: BaseCommand,
    run: Callable[[], ImportReport],
    *,
    refused: type[Exception],
    listed: str,
    prefix: str,
    noun: str,
) -> ImportReport:
    """Runs the import; a `refused` error stores nothing and becomes a CommandError. Prints each of
    `report.<listed>` after `prefix`, then how many `noun` were imported and skipped."""
    try:
        report = run()
    except refused as exc:
        raise CommandError(f"Nothing was imported. {exc}") from None
    for item in getattr(report, listed):
        command.stdout.write(f"  {prefix} {item}")
    command.stdout.write(
        command.style.SUCCESS(
            f"Imported {len(report.created)} {noun}; {len(report.skipped)} already present were skipped."
        )
    )
    return report
