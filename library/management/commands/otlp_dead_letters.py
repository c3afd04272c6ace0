"""manage.py otlp_dead_letters: the OTLP sessions whose storing failed (retrying or dead-lettered),
and retrying dead-lettered ones once the cause is fixed (library/ingest/otlp_failures.py;
docs/operations.md "OTLP sessions that fail")."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from library.formatting import count
from library.ingest import otlp_failures
from library.ingest.otlp import sessions_flush
from library.models import Agent, OtlpFlushFailure


class Command(BaseCommand):
    help = "Lists the OTLP sessions whose storing failed; --retry puts dead-lettered ones back and flushes."

    def add_arguments(self, parser):
        parser.add_argument("--agent", help="only this agent's sessions")
        parser.add_argument(
            "--retry", nargs="+", metavar="SESSION_ID", help="retry these dead-lettered sessions (with --agent)"
        )
        parser.add_argument("--retry-all", action="store_true", help="retry every dead-lettered session shown")
        parser.add_argument("--json", action="store_true", help="one JSON list on stdout")

    def handle(self, *args, **options):
        agents = Agent.objects.all()
        if options["agent"]:
            agents = agents.filter(name=options["agent"])
            if not agents.exists():
                raise CommandError(f"Unknown agent {options['agent']!r}")
        if options["retry"] and not options["agent"]:
            raise CommandError("--retry names sessions of one agent: give --agent too")
        failures = otlp_failures.failures_for(agents)
        if options["retry"] or options["retry_all"]:
            failures = self._retry(failures, options["retry"])
        if options["json"]:
            self.stdout.write(json.dumps([_row(f) for f in failures], indent=1))
            return
        if not failures:
            self.stdout.write("No OTLP session is failing.")
        for failure in failures:
            row = _row(failure)
            what = f"session {row['session']}" if row["session"] else "the whole flush"
            self.stdout.write(
                f"{row['agent']}: {what}: {row['state']} after {count(row['attempts'], 'attempts')}, "
                f"last {row['lastFailedAt']}: {row['error']}"
                + (f"; next attempt {row['nextAttemptAt']}" if row["nextAttemptAt"] else "")
            )

    def _retry(self, failures: list[OtlpFlushFailure], session_ids: list[str] | None) -> list[OtlpFlushFailure]:
        wanted = [f for f in failures if f.state == OtlpFlushFailure.State.DEAD and f.session_id]
        if session_ids:
            by_id = {f.session_id: f for f in wanted}
            missing = [s for s in session_ids if s not in by_id]
            if missing:
                raise CommandError(f"Not dead-lettered: {', '.join(missing)}")
            wanted = [by_id[s] for s in session_ids]
        agents = {}
        for failure in wanted:
            try:
                otlp_failures.session_retry(failure=failure, actor_label="manage.py otlp_dead_letters")
            except otlp_failures.RetryRefused as exc:
                self.stderr.write(str(exc))
                continue
            agents[failure.agent_id] = failure.agent
        for agent in agents.values():
            result = sessions_flush(agent=agent)
            self.stderr.write(
                f"{agent.name}: retried; {len(result.stored)} stored, {len(result.refused)} refused, "
                f"{len(result.failed)} failed again"
            )
        return otlp_failures.failures_for(Agent.objects.filter(pk__in=[f.agent_id for f in failures]))


def _row(failure: OtlpFlushFailure) -> dict:
    return {
        "agent": failure.agent.name,
        "session": failure.session_id,
        "state": failure.get_state_display().lower(),
        "attempts": failure.attempts,
        "error": failure.error,
        "firstFailedAt": failure.first_failed_at.isoformat(),
        "lastFailedAt": failure.last_failed_at.isoformat(),
        "nextAttemptAt": failure.next_attempt_at.isoformat() if failure.next_attempt_at else None,
        "traces": failure.trace_ids,
    }
