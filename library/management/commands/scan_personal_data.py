"""manage.py scan_personal_data: looks for known personal values in everything reviewers and exports
see (docs/redaction.md, "The leak scanner"). Exits non-zero when it finds any."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from library.formatting import count
from library.models import Agent
from library.scans.personal_data import KnownValue, scan, taubench_values, values_from_file


class Command(BaseCommand):
    help = (
        "Scans candidates, versions, evidence, session excerpts, mining-run reports, audit rows, regression "
        "cases, eval results and the procedure export for known personal values; exits 1 on any hit."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--values",
            action="append",
            default=[],
            metavar="FILE",
            help="values to look for: a JSON list (strings or {value, kind}) or text, one value (or kind<TAB>value) a line; repeatable",
        )
        parser.add_argument(
            "--taubench",
            metavar="DIR",
            help="look for the tau-bench worlds' values: DIR holds airline_db/, retail_db/ and tau2_retail_tasks.json",
        )
        parser.add_argument("--agent", action="append", help="only this agent's rows (repeatable); default: everything")
        parser.add_argument("--no-export", action="store_true", help="skip the procedure export")
        parser.add_argument(
            "--show-values", action="store_true", help="print the leaked values in full (default: masked)"
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="print {values, hits: [{surface, pk, field, path, kind, value}]} as JSON",
        )

    def handle(self, *args, **options):
        values: list[KnownValue] = []
        for path in options["values"]:
            try:
                values.extend(values_from_file(Path(path)))
            except (OSError, ValueError) as exc:
                raise CommandError(f"--values {path}: {exc}") from None
        if options["taubench"]:
            try:
                values.extend(taubench_values(Path(options["taubench"])))
            except (OSError, ValueError, KeyError) as exc:
                raise CommandError(f"--taubench {options['taubench']}: {exc}") from None
        if not values:
            raise CommandError("Nothing to look for: give --values FILE and/or --taubench DIR")
        agent_names = options["agent"]
        if agent_names:
            missing = set(agent_names) - set(Agent.objects.filter(name__in=agent_names).values_list("name", flat=True))
            if missing:
                raise CommandError(
                    f"Unknown {'agent' if len(missing) == 1 else 'agents'}: {', '.join(sorted(missing))}"
                )
        hits = scan(values, agent_names=agent_names, include_export=not options["no_export"])
        by_kind = Counter(v.kind for v in values)
        show = options["show_values"] or options["json"]

        def shown(value: str) -> str:
            return value if show else value[:2] + "…" + f"({len(value)} chars)"

        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {"values": dict(sorted(by_kind.items())), "hits": [h.to_dict() for h in hits]},
                    indent=2,
                    default=str,
                )
            )
        else:
            self.stdout.write(
                f"Looked for {len(values)} values ({', '.join(f'{k} {n}' for k, n in sorted(by_kind.items()))})."
            )
            for hit in hits:
                self.stdout.write(
                    f"  {hit.surface} {hit.pk} {hit.field} {hit.path or '-'}: {hit.kind} {shown(hit.value)}"
                )
        if hits:
            kinds = Counter(h.kind for h in hits)
            raise CommandError(
                f"{count(len(hits), 'personal values')} found: "
                + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
            )
        if not options["json"]:
            self.stdout.write("No personal values found.")
