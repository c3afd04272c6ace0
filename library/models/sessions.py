"""Sessions as reported or imported, their label history, OTLP spans waiting to become sessions,
and the mining runs that read them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .agents import Agent, Intent


class AgentSession(models.Model):
    """A finished agent session, as reported or imported. Tool-call args and the task text are kept
    raw only until the retention window passes (mining needs tool names and order, not the text);
    reviewers only ever see `redacted_excerpt`."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="sessions")
    session_id = models.CharField(max_length=200)
    intent = models.ForeignKey(Intent, null=True, blank=True, on_delete=models.SET_NULL, related_name="sessions")
    task = models.TextField(blank=True)
    # What makes repeated trials of one task one piece of evidence: the reported task key, the
    # tau-bench task id, or a hash of the redacted opening request (library ingest).
    task_key = models.CharField(max_length=200, blank=True)
    resolved = models.BooleanField(null=True)
    escalated = models.BooleanField(null=True)
    rating = models.FloatField(null=True, blank=True)
    skeleton = models.JSONField(default=list)
    tool_calls = models.JSONField(default=list, blank=True)
    redacted_excerpt = models.JSONField(default=list, blank=True)
    injected = models.JSONField(default=list, blank=True)
    instruction_chars = models.PositiveIntegerField(null=True, blank=True)
    model = models.CharField(max_length=128, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True, db_index=True)
    received_at = models.DateTimeField(auto_now_add=True)
    raw_purged = models.BooleanField(default=False)
    source_format = models.CharField(max_length=16, blank=True)

    class Channel(models.TextChoices):
        CLIENT = "client", "Client (POST /api/v1/sessions)"
        FILE = "file", "File import (manage.py import_sessions)"
        OTLP = "otlp", "OpenTelemetry traces (OTLP)"
        HOOK = "hook", "Coding-agent hook (trace format)"

    # How the session reached procmem (the agent settings page counts them); empty: stored before
    # channels were recorded.
    channel = models.CharField(max_length=8, choices=Channel.choices, blank=True)
    # The label is not final before this moment (the agent's complaint window is open): mining leaves
    # the session out until then (library/ingest/outcomes.py). Null: final as it stands.
    label_pending_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-ended_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["agent", "session_id"], name="session_id_unique_per_agent")]
        indexes = [
            models.Index(fields=["agent", "intent", "resolved"], name="session_agent_intent_idx"),
            # the metrics rollup's incremental refresh reads the sessions received since its watermark
            models.Index(fields=["agent", "received_at"], name="session_agent_received_idx"),
            # the miner's held-back cut and its evidence samples read each intent's sessions in
            # this order ("newest" = by end time, then receipt time, then id)
            models.Index(
                fields=["agent", "intent", "ended_at", "received_at", "id"], name="session_agent_intent_end_idx"
            ),
        ]

    def __str__(self) -> str:
        return self.session_id


class SessionLabel(models.Model):
    """One outcome report of a session, kept as its label history (POST /api/v1/sessions/outcomes,
    manage.py import_outcomes; the first row, source "session", is what the session itself said).
    Rows are never changed; the session's resolved/escalated/rating are derived from them by the
    agent's label rule (library/ingest/outcomes.py)."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="labels")
    resolved = models.BooleanField(null=True)
    escalated = models.BooleanField(null=True)
    rating = models.FloatField(null=True, blank=True)
    complaint = models.BooleanField(null=True)
    closed_by_customer = models.BooleanField(null=True)
    at = models.DateTimeField(help_text="When the outcome happened (a rating given, a complaint made)")
    source = models.CharField(max_length=100, blank=True, help_text="What reported it: csat_survey, helpdesk, session…")
    via = models.CharField(max_length=100, blank=True, help_text="How it came: api token prefix, file name")
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "id"]


class OtlpSpan(models.Model):
    """A span received on POST /api/otlp/v1/traces, kept until its session is complete
    (library/ingest/otlp.py: the root span has arrived and no span of the session came for
    PROCMEM_OTLP_QUIET_SECONDS, or PROCMEM_OTLP_MAX_WAIT_SECONDS passed without a root). Only the
    GenAI / OpenInference attributes are kept. Once the session is stored (or refused) the spans stay
    a day as a record of what was received, so a resent span changes nothing."""

    class State(models.TextChoices):
        PENDING = "pending"
        STORED = "stored"
        REFUSED = "refused"
        DEAD = "dead", "Dead-lettered"  # storing its session kept failing (OtlpFlushFailure)

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True)
    conversation_id = models.CharField(max_length=200, blank=True)
    name = models.CharField(max_length=200, blank=True)
    start_ns = models.BigIntegerField(default=0)
    end_ns = models.BigIntegerField(default=0)
    failed = models.BooleanField(default=False)
    attributes = models.JSONField(default=dict, blank=True)
    events = models.JSONField(default=list, blank=True)
    received_at = models.DateTimeField()
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    session_id = models.CharField(max_length=200, blank=True, help_text="The session the span became part of")
    note = models.CharField(max_length=300, blank=True, help_text="Why the session was refused")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "trace_id", "span_id"], name="otlp_span_unique_per_agent")
        ]
        indexes = [
            # the completion check's two look-ups (library/ingest/otlp.py `_due_sessions`): by trace,
            # and the waiting spans of a conversation
            models.Index(fields=["agent", "state", "trace_id"], name="otlp_span_agent_state_idx"),
            models.Index(
                fields=["agent", "conversation_id"],
                condition=models.Q(state="pending"),
                name="otlp_span_pending_conv_idx",
            ),
        ]


class OtlpFlushFailure(models.Model):
    """An OTLP session whose storing failed with an error (not a refusal: a refused session is
    stored as refused at once), or, with no session id, an agent's whole flush. The flush retries it
    with back-off (PROCMEM_OTLP_FLUSH_RETRY_SECONDS, doubling); after PROCMEM_OTLP_FLUSH_MAX_ATTEMPTS
    the session is dead-lettered: its spans stop waiting (OtlpSpan.State.DEAD) until an operator
    retries it (the ops page, `manage.py otlp_dead_letters --retry`). The row goes once the session
    is stored. `error` is the exception's class and where it was raised, never a value of the spans."""

    class State(models.TextChoices):
        RETRYING = "retrying"
        DEAD = "dead", "Dead-lettered"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    session_id = models.CharField(max_length=200, blank=True, help_text="Empty: the agent's flush as a whole")
    state = models.CharField(max_length=8, choices=State.choices, default=State.RETRYING)
    attempts = models.PositiveIntegerField(default=0)
    error = models.CharField(max_length=300, blank=True)
    first_failed_at = models.DateTimeField()
    last_failed_at = models.DateTimeField()
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    trace_ids = models.JSONField(default=list, blank=True, help_text="The traces of the session")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "session_id"], name="otlp_flush_failure_unique_per_agent")
        ]
        ordering = ["agent_id", "-last_failed_at"]


class HeldOutcome(models.Model):
    """An outcome sent for an OTLP session whose spans still wait for the quiet period
    (library/ingest/otlp_outcomes.py): held until the session is stored, then applied as if it had
    just arrived; dropped at `hold_until` if the session never is."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    session_id = models.CharField(max_length=200)
    outcome = models.JSONField(help_text="The parsed outcome (library/ingest/outcomes.py OutcomeIn), `at` in ISO 8601")
    via = models.CharField(max_length=100)
    actor_label = models.CharField(max_length=150, blank=True)
    received_at = models.DateTimeField()
    hold_until = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["agent", "session_id"], name="held_outcome_session_idx")]


class MiningRun(models.Model):
    class State(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="mining_runs")
    state = models.CharField(max_length=10, choices=State.choices, default=State.RUNNING)
    parameters = models.JSONField(default=dict)
    counts = models.JSONField(default=dict, help_text="sessions in, labelled, unlabelled, groups, candidates, skipped")
    skipped = models.JSONField(default=list, help_text="[{intent, skeleton, reason}]")
    report = models.JSONField(
        default=list,
        blank=True,
        help_text="One entry per intent: status (mined, reported, below threshold, …), reason and figures",
    )
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]


class CodingFileIndex(models.Model):
    """What a coding agent's stored sessions of one repository saw: the repository's source files
    they named and the symbols they saw defined in each (library/coding/file_index.py), from which a
    task's words point to files (procmem_client.task_files). Derived data, rebuilt as a whole by each
    mining run of the agent (library/services/task_files.py); served to the agent's read tokens
    (GET /api/v1/agents/{agent}/file-index) and named first in the recall pointers of a select that
    asks for them. Only repository-relative source paths and Python identifiers are stored."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="file_indexes")
    # owner/name, lower-cased, as a mined family records it (evidence.repository); '' for the
    # sessions whose task names no repository
    repository = models.CharField(max_length=200, blank=True)
    files = models.JSONField(default=list, help_text="The known source files, sorted")
    definitions = models.JSONField(default=dict, help_text="{symbol: [positions in files]}")
    sessions = models.PositiveIntegerField(default=0, help_text="Sessions read")
    digest = models.CharField(max_length=64, help_text="sha256 of the repository, files and definitions")
    mining_run = models.ForeignKey(
        MiningRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="file_indexes"
    )
    built_at = models.DateTimeField()

    class Meta:
        ordering = ["agent_id", "repository"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "repository"], name="one_file_index_per_agent_repository")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}:{self.repository or '(no repository)'}"
