"""manage.py scan_erased: proves that no stored text holds text that was erased (docs/operations.md,
"Erasure"). Exits non-zero when it finds a copy."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from library.models import ErasureSweep
from library.scans.erased_text import scan_erased
from library.services.erasure_sweep import FingerprintMatcher


class Command(BaseCommand):
    help = (
        "Looks for the text of every erased version (by the keyed fingerprints its erasure kept, never the text) in "
        "every stored text column of the library, reviews and admin tables, every version and the procedure export; "
        "prints the copies found and exits 1 on any."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--include-sessions", action="store_true", help="also the stored sessions (task, excerpt, tool calls)"
        )
        parser.add_argument("--no-export", action="store_true", help="skip the procedure export")
        parser.add_argument(
            "--json", action="store_true", help="print {erasures, copies: [{model, pk, field}]} as JSON"
        )

    def handle(self, *args, **options):
        erasures = ErasureSweep.objects.count()
        copies = (
            scan_erased(include_sessions=options["include_sessions"], include_export=not options["no_export"])
            if FingerprintMatcher()
            else []
        )
        as_json = options["json"]
        if as_json:
            self.stdout.write(
                json.dumps({"erasures": erasures, "copies": [c.__dict__ for c in copies]}, indent=2, default=str)
            )
        else:
            self.stdout.write(f"Looked for the text of {erasures} erasure{'s' if erasures != 1 else ''}.")
            for copy in copies:
                self.stdout.write(f"  {copy.model} {copy.pk} {copy.field}")
        if copies:
            raise CommandError(f"{len(copies)} stored cop{'y' if len(copies) == 1 else 'ies'} of erased text found")
        if not as_json:
            self.stdout.write("0 copies of erased text found.")
