"""The append-only audit log: who did what to which agent, procedure or version, when and why."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .agents import Agent, Procedure
from .versions import ProcedureVersion


class AuditEvent(models.Model):
    """Append-only: the database refuses UPDATE and DELETE on this table (see 0002_invariants)."""

    class Action(models.TextChoices):
        PROPOSE = "propose", "Proposed"
        REVISE = "revise", "Edited (new version)"
        APPROVE = "approve", "Approved"
        REJECT = "reject", "Rejected"
        RETIRE = "retire", "Retired"
        ROLLBACK = "rollback", "Rolled back"
        AUTO_RETIRE = "auto_retire", "Retired by a newer approval"
        IMPORT = "import", "Imported"
        GRANT = "grant", "Approver right granted"
        REVOKE = "revoke", "Approver right revoked"
        TOKEN_CREATE = "token_create", "API token created"
        TOKEN_REVOKE = "token_revoke", "API token revoked"
        TOOLS_CHANGE = "tools_change", "Tool list changed"
        REFUSED_AT_LOAD = "refused_at_load", "Refused at load"
        EVAL_START = "eval_start", "Eval run started"
        EVAL_FINISH = "eval_finish", "Eval run finished"
        EVAL_CANCEL = "eval_cancel", "Eval run cancelled"
        MINE = "mine", "Mining run"
        COMMENT = "comment", "Commented"
        SETTINGS = "settings", "Agent settings changed"
        CASE_CHANGE = "case_change", "Regression case changed"
        ERASE = "erase", "Erased (tombstone kept)"
        ERASE_COPY = "erase_copy", "Erased text removed (flagged for review)"
        REVIEW = "review", "Re-reviewed (kept ACTIVE)"
        DEMOTION_PROPOSE = "demotion_propose", "Demotion proposed"
        DEMOTION_DISMISS = "demotion_dismiss", "Demotion dismissed"
        DEMOTION_CONFIRM = "demotion_confirm", "Demotion confirmed"
        CONFLICT_SCAN = "conflict_scan", "Conflict scan changed the open conflicts"
        CONFLICT_ACK = "conflict_ack", "Approved despite a conflict (acknowledged)"
        CLAIM = "claim", "Candidate claimed"
        ASSIGN = "assign", "Candidate assigned"
        RELEASE = "release", "Candidate released"
        THREAD_RESOLVE = "thread_resolve", "Thread resolved"
        THREAD_REOPEN = "thread_reopen", "Thread reopened"
        STAGE = "stage", "Released to a non-production environment"
        PROMOTE = "promote", "Promoted to production"
        WITHDRAW = "withdraw", "Withdrawn from an environment"
        ROLLOUT_START = "rollout_start", "Rollout started"
        ROLLOUT_COMPLETE = "rollout_complete", "Rollout completed"
        ROLLOUT_ROLLBACK = "rollout_rollback", "Rollout rolled back"
        SCOPE = "scope", "Scope changed (namespace, roles, priority, confidence)"
        NAMESPACE_CREATE = "namespace_create", "Namespace created"
        OUTCOMES = "outcomes", "Session outcomes reported"
        OTLP_RETRY = "otlp_retry", "Dead-lettered OTLP session retried"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_label = models.CharField(max_length=150, blank=True, help_text="For non-human actors: miner, import, token")
    action = models.CharField(max_length=20, choices=Action.choices, db_index=True)
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    procedure = models.ForeignKey(
        Procedure, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events"
    )
    version = models.ForeignKey(
        ProcedureVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events"
    )
    reason = models.TextField(blank=True)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.action} {self.actor_label or self.actor}"

    @property
    def who(self) -> str:
        if self.actor_id:
            return self.actor.get_username()
        return self.actor_label or "system"
