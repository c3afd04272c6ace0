"""Eval replays: the regression cases, the runs that judge one version's exact content, and the
result of each case in each arm (library/evals/)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from .agents import Agent, Intent
from .releases import PRODUCTION
from .sessions import AgentSession
from .versions import ProcedureVersion


class RegressionCase(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="regression_cases")
    intent = models.ForeignKey(Intent, on_delete=models.PROTECT, related_name="regression_cases")
    name = models.CharField(max_length=200, blank=True)
    task = models.TextField()
    context = models.JSONField(default=dict, blank=True)
    expected_tools = models.JSONField(default=list, blank=True, help_text="Tool calls expected, in order")
    forbidden_tools = models.JSONField(default=list, blank=True)
    reply_must_match = models.JSONField(default=list, blank=True, help_text="Regexes the reply must match")
    reply_must_not_match = models.JSONField(default=list, blank=True)
    tool_results = models.JSONField(default=dict, blank=True, help_text="Recorded tool results for model replay")
    source_session = models.ForeignKey(AgentSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    external_id = models.CharField(
        max_length=200,
        blank=True,
        help_text="Where an imported case came from (e.g. tau2:airline:7); re-imports skip it",
    )
    is_active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["agent_id", "intent_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "external_id"], condition=~Q(external_id=""), name="case_external_id_unique_per_agent"
            ),
        ]

    def __str__(self) -> str:
        return self.name or self.task[:60]


class EvalRun(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Verdict(models.TextChoices):
        PASS = "pass"
        FAIL = "fail"
        INCONCLUSIVE = "inconclusive"

    class Kind(models.TextChoices):
        APPROVAL = "approval", "Approval: the set with the candidate added"
        RETIRE = "retire", "Retirement: the set with the version removed"
        ROLLBACK = "rollback", "Rollback: the set with the version replaced by its predecessor"
        PROMOTION = "promotion", "Promotion: production's set with the approved version in place of the active one"

    version = models.ForeignKey(ProcedureVersion, on_delete=models.PROTECT, related_name="eval_runs")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.APPROVAL)
    # The environment whose served set is the baseline (library/environments.py `eval_target_environment`):
    # an approval eval targets the environment approving releases the candidate to (staging when the
    # agent has one), every other kind production. Pinned at the start with the baseline.
    environment = models.CharField(
        max_length=32, default=PRODUCTION, help_text="The environment whose served set the baseline is"
    )
    # a rollback run: the version that would be served instead of `version`
    replacement = models.ForeignKey(
        ProcedureVersion,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    content_hash = models.CharField(max_length=64, help_text="The exact content this run judged")
    baseline_hash = models.CharField(
        max_length=64, blank=True, help_text="Hash of the target environment's set at the start"
    )
    baseline_versions = models.JSONField(default=list, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    verdict = models.CharField(max_length=12, choices=Verdict.choices, blank=True)
    verdict_detail = models.JSONField(default=dict, blank=True)
    thresholds = models.JSONField(default=dict, blank=True)
    cases_total = models.PositiveIntegerField(default=0)
    cases_done = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    runner = models.CharField(max_length=16, blank=True)
    failure_reason = models.TextField(blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last progress; the recovery task resumes stale runs"
    )
    resumes = models.PositiveSmallIntegerField(default=0)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(verdict="pass") | Q(state="done"), name="eval_pass_only_when_done"),
        ]

    def __str__(self) -> str:
        return f"eval run {self.pk} ({self.state}{', ' + self.verdict if self.verdict else ''})"

    @property
    def is_passing(self) -> bool:
        return self.state == self.State.DONE and self.verdict == self.Verdict.PASS

    @property
    def is_finished(self) -> bool:
        return self.state in {self.State.DONE, self.State.FAILED, self.State.CANCELLED}

    @property
    def set_label(self) -> str:
        """The baseline's set in words: "active set" (production's) or "staging set"."""
        return "active set" if self.environment == PRODUCTION else f"{self.environment} set"


class EvalCaseResult(models.Model):
    class Arm(models.TextChoices):
        BASELINE = "baseline", "Without the candidate"
        CANDIDATE = "candidate", "With the candidate"

    class State(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="case_results")
    case = models.ForeignKey(RegressionCase, on_delete=models.PROTECT, related_name="+")
    arm = models.CharField(max_length=10, choices=Arm.choices)
    # Every (case, arm) row exists from the start of the run as PENDING; a chunk task claims it with a
    # conditional UPDATE, so a redelivered task never runs a finished case again.
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    claimed_by = models.CharField(max_length=64, blank=True, help_text="The Celery task id that claimed it")
    claim_nonce = models.CharField(max_length=32, blank=True, help_text="One per claim; only its holder may finish it")
    claimed_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    finished_at = models.DateTimeField(null=True, blank=True)
    passed = models.BooleanField(null=True, help_text="None when the runner errored")
    error = models.TextField(blank=True)
    failures = models.JSONField(default=list, blank=True)
    tool_calls = models.JSONField(default=list, blank=True)
    reply = models.TextField(blank=True)
    duration_ms = models.FloatField(default=0)
    # what this arm injected for the case, as the select endpoint chose it: [{"id", "version", "intent"}]
    injected = models.JSONField(default=list, blank=True)
    rendered_hash = models.CharField(max_length=64, blank=True, help_text="sha256 of the instruction's procedure block")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "case", "arm"], name="one_result_per_case_arm")]
        indexes = [models.Index(fields=["run", "state"], name="evalcaseresult_run_state_idx")]
