"""manage.py import_sessions FILE: streams finished sessions into the store (docs/api.md "Sessions in: ingestion")."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from concurrent.futures.process import BrokenProcessPool

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import reset_queries
from tqdm import tqdm

from library.formatting import count
from library.ingest.formats import CODING_FORMATS, FORMATS, INTENT_DERIVATIONS, ImportOptions, outcomes_from_results
from library.ingest.pipeline import ImportSpec, Refused, import_outcomes, import_workers
from library.ingest.reader import ARCHIVE_ERRORS, iter_session_files
from library.ingest.store import prepared_store
from library.models import Agent, AgentSession, slug_validator
from library.services import agent_set_tools

# With worker processes, once every file is read, the sessions in hand are stored while the workers
# finish the last files when there are at least this many (pipeline.import_outcomes' on_idle).
IDLE_BATCH = 10


class Command(BaseCommand):
    help = (
        "Imports finished sessions from a JSON list or JSON Lines file (procmem JSONL, OpenAI chat "
        "messages with tool_calls such as tau-bench trajectories, or Google ADK sessions), streaming "
        "it in batches: memory stays constant whatever the file's size. Coding agents: mini-swe-agent "
        "trajectories (a .traj.json file, a directory or a tar.gz of them) with --outcomes results.json, "
        "or the trace-hook format."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "file", help="the file to import ('-' reads standard input), or a directory or tar archive of session files"
        )
        parser.add_argument("--agent", required=True, help="the agent the sessions belong to")
        parser.add_argument(
            "--create-agent",
            action="store_true",
            help="create the agent if it does not exist. An agent without tools (a new one, or one left empty) gets the tools seen in the sessions stored",
        )
        parser.add_argument(
            "--format", default="auto", choices=("auto",) + FORMATS, help="input format (default: detected per item)"
        )
        parser.add_argument("--intent-field", help="dotted path of the intent in each item, e.g. info.task.intent")
        parser.add_argument(
            "--intent-map", help="JSON file mapping the intent field's value (or the session id) to an intent name"
        )
        parser.add_argument(
            "--intent-from",
            choices=INTENT_DERIVATIONS,
            help="derive the intent: taubench-actions = the set of the task's gold write actions",
        )
        parser.add_argument(
            "--id-prefix", default="", help="prefix for session ids (keeps ids of different files apart)"
        )
        parser.add_argument("--model", default="", help="model name to record where the file does not say")
        parser.add_argument(
            "--outcomes",
            help="outcome file: SWE-bench results.json ({instances: [{instance_id, resolved}]}) or {id: true|false}",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=100,
            help="sessions stored per transaction (default 100): the store works while the next ones are read",
        )
        parser.add_argument("--no-progress", action="store_true")
        parser.add_argument(
            "--workers",
            type=int,
            help="processes that parse and redact the files of a directory or archive, this one included (default: PROCMEM_IMPORT_WORKERS, else one per CPU; 1 = this process only)",
        )

    def handle(self, *args, **options):
        if options["batch_size"] < 1:
            raise CommandError(f"--batch-size must be at least 1, got {options['batch_size']}")
        if options["workers"] is not None and options["workers"] < 1:
            raise CommandError(f"--workers must be at least 1, got {options['workers']}")
        try:
            workers = options["workers"] or import_workers()
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        agent = Agent.objects.filter(name=options["agent"]).first()
        if agent is None:
            if not options["create_agent"]:
                raise CommandError(f"Unknown agent {options['agent']!r}; create it first or pass --create-agent.")
            try:
                slug_validator(options["agent"])
            except ValidationError as exc:
                raise CommandError(f"--agent {options['agent']!r}: {'; '.join(exc.messages)}") from None
            kind = Agent.Kind.CODING if options["format"] in CODING_FORMATS else Agent.Kind.TOOLS
            agent = Agent.objects.create(name=options["agent"], description="Created by import_sessions", kind=kind)
        intent_map = None
        if options["intent_map"]:
            try:
                with open(options["intent_map"], encoding="utf-8") as handle:
                    intent_map = json.load(handle)
            except (OSError, ValueError) as exc:
                raise CommandError(f"--intent-map {options['intent_map']}: {exc}") from None
            if not isinstance(intent_map, dict) or not all(isinstance(v, str) for v in intent_map.values()):
                raise CommandError(
                    f"--intent-map {options['intent_map']}: must be a JSON object of strings to intent names"
                )
        outcomes = None
        if options["outcomes"]:
            try:
                with open(options["outcomes"], encoding="utf-8") as handle:
                    outcomes = outcomes_from_results(json.load(handle))
            except (OSError, ValueError) as exc:
                raise CommandError(f"--outcomes {options['outcomes']}: {exc}") from None
        import_options = ImportOptions(
            outcomes=outcomes,
            intent_field=options["intent_field"],
            intent_map={str(k): v for k, v in intent_map.items()} if intent_map else None,
            intent_from=options["intent_from"],
            id_prefix=options["id_prefix"],
            model=options["model"],
        )
        if options["file"] != "-" and not os.path.exists(options["file"]):
            raise CommandError(f"{options['file']}: no such file or directory")
        totals = Counter()
        tools_in_store: set[str] = set()
        refused: list[str] = []
        batch = []
        unread_after: int | None = None
        progress = tqdm(unit="B", unit_scale=True, desc="import", disable=options["no_progress"], file=self.stderr._out)

        def flush():
            result = prepared_store(agent=agent, prepared=batch, channel=AgentSession.Channel.FILE)
            # With DEBUG on, Django keeps every query's SQL; bulk inserts are large, so a long import
            # would grow by megabytes per batch. Constant memory means forgetting them.
            reset_queries()
            totals["stored"] += len(result.stored)
            totals["duplicate"] += len(result.duplicate)
            in_store = set(result.stored) | set(result.duplicate)
            for session in batch:
                if session.session_id in in_store:
                    tools_in_store.update(session.tool_names)
            progress.set_postfix(stored=totals["stored"], duplicate=totals["duplicate"], refused=totals["refused"])
            batch.clear()

        def flush_idle(last: bool) -> None:
            # the workers are on the last files: what is here is stored meanwhile, a few at a time
            # (each transaction costs its queries), the rest once the last file is in
            if len(batch) >= min(IDLE_BATCH, options["batch_size"]) or (last and batch):
                flush()

        name = options["file"]

        def refuse(line: int, what: str) -> None:
            totals["refused"] += 1
            refused.append(f"{name}: line {line}: {what}")

        if options["file"] == "-":
            sources = iter([("-", sys.stdin.buffer, None)])
        else:
            # a file, or every session file of a directory or tar archive (one session per file)
            sources = iter_session_files(options["file"])
        reading = [options["file"]]  # the file being read, for an error that stops the reading

        def counted(sources):
            for source in sources:
                reading[0] = source[0]
                if source[2] is not None:
                    progress.total = (progress.total or 0) + source[2]
                yield source

        spec = ImportSpec(fmt=options["format"], options=import_options, redaction_patterns=agent.redaction_patterns)
        stopped = ""  # why the reading stopped early, if it did
        try:
            for name, outcome in import_outcomes(
                counted(sources), spec, workers=workers, on_bytes=progress.update, on_idle=flush_idle
            ):
                if isinstance(outcome, Refused):
                    refuse(outcome.line, outcome.message)
                    if outcome.fatal and name == options["file"]:
                        unread_after = outcome.line
                    continue
                batch.append(outcome)
                if len(batch) >= options["batch_size"]:
                    flush()
        except BrokenProcessPool as exc:
            stopped = f"{options['file']}: a worker process stopped unexpectedly ({exc}); try --workers 1"
        except ARCHIVE_ERRORS as exc:  # a cut or corrupt archive
            stopped = f"{reading[0]}: {exc}"
        finally:
            # whatever stopped the reading, what was read and valid is stored, and the agent gets
            # the tools of what is in the store
            try:
                if batch:
                    flush()
                if not agent.tools and tools_in_store:
                    agent_set_tools(
                        agent=agent,
                        tools=sorted(tools_in_store),
                        actor_label="import_sessions",
                        reason=f"tools seen in the sessions of {options['file']}",
                    )
            finally:
                progress.close()
        if stopped:
            raise CommandError(f"{stopped} ({totals['stored']} sessions stored before it)")
        for line in refused[:50]:
            self.stderr.write(line)
        if len(refused) > 50:
            self.stderr.write(f"… and {len(refused) - 50} more refused items")
        summary = (
            f"{agent.name}: {totals['stored']} stored, {totals['duplicate']} duplicate, {totals['refused']} refused"
        )
        if unread_after is not None:
            summary += f"; the rest of the file after line {unread_after} was not read (a JSON list cannot resume after a malformed item; JSON Lines can)"
        self.stdout.write(summary + ".")
        if refused:
            raise CommandError(
                f"{count(len(refused), 'items')} refused (listed above); {totals['stored']} stored and {totals['duplicate']} "
                "duplicate were kept, each item whole or not at all."
            )
