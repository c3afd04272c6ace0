"""manage.py import_outcomes: outcomes known after the sessions, from a CSV or JSON Lines file
(docs/api.md "Outcomes that arrive later"; the same rules as POST /api/v1/sessions/outcomes)."""

from __future__ import annotations

import csv
import os
import sys

from django.core.management.base import BaseCommand, CommandError

from library import safe_json
from library.ingest.outcomes import OUTCOME_FIELDS, OutcomeIn, OutcomeInvalid, outcomes_record, parse_outcome
from library.models import Agent

BATCH = 500
TRUE, FALSE = {"true", "1", "yes", "y"}, {"false", "0", "no", "n"}


def _csv_value(column: str, text: str):
    """A CSV cell as the JSON value the outcome field takes: empty → absent, booleans as words,
    the rating as a number; anything else stays text (and is refused by the field's check)."""
    text = text.strip()
    if text == "":
        return None
    if column in ("resolved", "escalated", "complaint", "closed_by_customer"):
        lowered = text.lower()
        return True if lowered in TRUE else False if lowered in FALSE else text
    if column == "rating":
        try:
            return float(text)
        except ValueError:
            return text
    return text


def _rows(path: str, fmt: str):
    """(line, item) per outcome of the file, or (line, None, message) for a line that is not one."""
    stream = sys.stdin if path == "-" else open(path, encoding="utf-8", newline="")
    try:
        if fmt == "csv":
            reader = csv.DictReader(stream)
            unknown = sorted(set(reader.fieldnames or []) - set(OUTCOME_FIELDS))
            if "session_id" not in (reader.fieldnames or []) or unknown:
                raise CommandError(
                    f"{path}: the header must name session_id and only {', '.join(OUTCOME_FIELDS)}"
                    + (f" (not {', '.join(unknown)})" if unknown else "")
                )
            for row in reader:
                yield (
                    reader.line_num,
                    {k: v for k, v in ((c, _csv_value(c, t or "")) for c, t in row.items() if c) if v is not None},
                    None,
                )
        else:
            for number, line in enumerate(stream, start=1):
                if not line.strip():
                    continue
                try:
                    yield number, safe_json.parse(line), None
                except safe_json.JsonRefused as exc:
                    yield number, None, exc.message
    except UnicodeDecodeError as exc:
        raise CommandError(f"{path}: not UTF-8 text ({exc.reason})") from None
    finally:
        if stream is not sys.stdin:
            stream.close()


class Command(BaseCommand):
    help = (
        "Imports outcomes known after the sessions (resolved, escalated, rating, complaint, closed_by_customer, "
        "at, source per session_id) from a CSV file with a header row or a JSON Lines file. Each becomes part of "
        "the session's label history; the agent's label rule derives the label the miner uses. Unknown session "
        "ids and refused lines are listed; the command then exits non-zero."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="the CSV or JSON Lines file ('-' reads standard input)")
        parser.add_argument("--agent", required=True)
        parser.add_argument(
            "--format",
            choices=("auto", "csv", "jsonl"),
            default="auto",
            help="default: by the file's extension (.csv, else JSON Lines)",
        )

    def handle(self, *args, **options):
        agent = Agent.objects.filter(name=options["agent"]).first()
        if agent is None:
            raise CommandError(f"no agent named {options['agent']!r}")
        path = options["file"]
        if path != "-" and not os.path.isfile(path):
            raise CommandError(f"{path}: no such file")
        fmt = options["format"]
        if fmt == "auto":
            fmt = "csv" if path.lower().endswith(".csv") else "jsonl"
        via = f"file:{os.path.basename(path) if path != '-' else 'stdin'}"[:100]
        applied = duplicate = 0
        unknown: list[str] = []
        refused: list[str] = []
        batch: list[OutcomeIn] = []

        def flush() -> None:
            nonlocal applied, duplicate
            result = outcomes_record(agent=agent, outcomes=batch, via=via, actor_label="import_outcomes")
            applied += len(result.applied)
            duplicate += len(result.duplicate)
            unknown.extend(result.unknown)
            batch.clear()

        for line, item, problem in _rows(path, fmt):
            if problem is not None:
                refused.append(f"line {line}: {problem}")
                continue
            try:
                batch.append(parse_outcome(item))
            except OutcomeInvalid as exc:
                refused.append(f"line {line}: {exc}")
                continue
            if len(batch) >= BATCH:
                flush()
        if batch:
            flush()
        for text in refused:
            self.stderr.write(f"refused {text}")
        if unknown:
            shown = ", ".join(unknown[:20]) + (f" and {len(unknown) - 20} more" if len(unknown) > 20 else "")
            self.stderr.write(f"unknown session ids (not stored for {agent.name}): {shown}")
        summary = (
            f"{agent.name}: {applied} applied, {duplicate} duplicate, {len(unknown)} unknown, {len(refused)} refused."
        )
        if refused or unknown:
            raise CommandError(summary)
        self.stdout.write(summary)
