"""Procedure versions: the content fields and their hash, the status machine, the agent-facing record.

A version never changes after creation except its status columns (and only through
library/services/); the database enforces it (constraints below, triggers in
migrations/0002_invariants.py): at most one ACTIVE version per procedure, and an ACTIVE or APPROVED
version has an approver, an approval time and a passing eval run on its exact content.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, TypedDict

from django.conf import settings
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q

from .agents import Agent, Procedure

CONTENT_FIELDS = (
    "applies_when",
    "steps",
    "required_tools",
    "forbidden_actions",
    "preconditions",
    "postconditions",
    "verify_command",
)


def content_of(obj: Any) -> dict[str, Any]:
    """A version's content fields (what content_hash covers) from anything that carries them."""
    return {field: getattr(obj, field) for field in CONTENT_FIELDS}


def content_hash(
    *,
    applies_when: str,
    steps: list[str],
    required_tools: list[str],
    forbidden_actions: list[str],
    preconditions: list[str] | None = None,
    postconditions: list[str] | None = None,
    verify_command: str = "",
) -> str:
    """sha256 over the canonical JSON of the content fields. Eval runs and approvals pin it.

    A coding procedure's preconditions, postconditions and verify command are content too; they
    enter the hash only when set, so the hash of every procedure without them is what it always was."""
    fields: dict[str, Any] = {
        "appliesWhen": applies_when,
        "steps": list(steps),
        "requiredTools": list(required_tools),
        "forbiddenActions": list(forbidden_actions),
    }
    if preconditions:
        fields["preconditions"] = list(preconditions)
    if postconditions:
        fields["postconditions"] = list(postconditions)
    if verify_command:
        fields["verifyCommand"] = verify_command
    payload = json.dumps(
        fields,
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class Status(models.TextChoices):
    CANDIDATE = "CANDIDATE"
    ACTIVE = "ACTIVE"
    # approved (approver, time, passing eval on its content) but not the production version: in
    # staging (or another non-production environment) and/or a production rollout; see
    # ProcedureRelease and Rollout
    APPROVED = "APPROVED", "Approved (not in production)"
    RETIRED = "RETIRED"
    REJECTED = "REJECTED"
    # content and evidence wiped; a VersionTombstone says who erased it, when and why
    ERASED = "ERASED"


class Source(models.TextChoices):
    MINED = "mined", "Mined from sessions"
    CAPTURED = "captured", "Captured automatically"
    IMPORTED = "imported"  # from a file or another deployment (library/interchange/procedure_files.py)
    MANUAL = "manual", "Written by hand"
    REVISION = "revision", "Edited by a reviewer"


class VersionQuerySet(models.QuerySet):
    def active(self) -> VersionQuerySet:
        return self.filter(status=Status.ACTIVE)

    def due_for_review(self, today) -> VersionQuerySet:
        return self.filter(status=Status.ACTIVE, review_by__lte=today)

    def approved(self) -> VersionQuerySet:
        return self.filter(status=Status.APPROVED)

    def candidates(self) -> VersionQuerySet:
        return self.filter(status=Status.CANDIDATE)

    def for_agent(self, agent: Agent) -> VersionQuerySet:
        return self.filter(procedure__agent=agent)

    def quarantined(self) -> VersionQuerySet:
        return self.filter(quarantined=True)


class CodingRecordFields(TypedDict, total=False):
    """A coding procedure's optional v1 fields (absent otherwise): the artefacts that must exist
    before, those that exist after, and the command that verifies the work."""

    preconditions: list[str]
    postconditions: list[str]
    verifyCommand: str


class ProcedureRecord(CodingRecordFields):
    id: str
    version: int
    status: str
    appliesWhen: str
    steps: list[str]
    requiredTools: list[str]
    forbiddenActions: list[str]
    evidence: dict[str, Any]
    approvedBy: str | None
    approvedAt: str | None


def _carries_approval_when(status: str) -> Q:
    """A version in `status` carries an approval: approver, time and the approving eval run."""
    return ~Q(status=status) | (
        Q(approved_by__isnull=False) & Q(approved_at__isnull=False) & Q(approval_eval_run__isnull=False)
    )


class ProcedureVersion(models.Model):
    """One immutable version. Only the status columns change after creation (and only by services)."""

    procedure = models.ForeignKey(Procedure, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.CANDIDATE)
    applies_when = models.TextField()
    steps = models.JSONField()
    required_tools = models.JSONField(default=list)
    forbidden_actions = models.JSONField(default=list)
    evidence = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64)
    # provenance
    source = models.CharField(max_length=10, choices=Source.choices)
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    edited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Who made this version's content (the last editor), if a person did",
    )
    provenance = models.JSONField(default=dict, blank=True, help_text="who/what proposed it, mining run, file")
    based_on = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    mining_run = models.ForeignKey(
        "MiningRun", null=True, blank=True, on_delete=models.PROTECT, related_name="versions"
    )
    # the policy screen's verdict on this content (content never changes, so neither does this)
    quarantined = models.BooleanField(default=False)
    quarantine_reasons = models.JSONField(default=list, blank=True)
    skeleton = models.JSONField(default=list, blank=True, help_text="Ordered tool names of the mined group")
    # a coding procedure's contract (content: immutable and part of the content hash)
    preconditions = models.JSONField(
        default=list,
        blank=True,
        help_text="Artefacts that must exist before, e.g. a failing test that reproduces the issue",
    )
    postconditions = models.JSONField(
        default=list, blank=True, help_text="Artefacts that exist after, e.g. an edited source file, a passing test"
    )
    verify_command = models.TextField(
        blank=True, help_text="The command that verifies the work (a coding procedure needs one)"
    )
    # status columns
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    approval_eval_run = models.ForeignKey("EvalRun", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    status_reason = models.TextField(blank=True)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    review_by = models.DateField(
        null=True,
        blank=True,
        help_text="ACTIVE versions: due for re-review on this day (set on approval, roll back and review)",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The full-text document of the id and the four content fields. PostgreSQL fills it in a BEFORE
    # INSERT trigger (migrations/0006_review_day.py), so bulk inserts get it too, and indexes it
    # with GIN; content never changes, so neither does this. Unused (NULL) on SQLite.
    search_vector = SearchVectorField(null=True, editable=False)

    objects = VersionQuerySet.as_manager()

    class Meta:
        ordering = ["procedure_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["procedure", "number"], name="version_number_unique"),
            models.UniqueConstraint(
                fields=["procedure"], condition=Q(status="ACTIVE"), name="one_active_version_per_procedure"
            ),
            models.CheckConstraint(condition=_carries_approval_when("ACTIVE"), name="active_version_is_approved"),
            models.CheckConstraint(condition=_carries_approval_when("APPROVED"), name="approved_version_is_approved"),
            models.CheckConstraint(
                condition=Q(status__in=["CANDIDATE", "APPROVED", "ACTIVE", "RETIRED", "REJECTED", "ERASED"]),
                name="version_status_valid",
            ),
            models.CheckConstraint(condition=Q(number__gte=1), name="version_number_positive"),
            models.CheckConstraint(
                condition=~Q(status="ACTIVE") | Q(review_by__isnull=False), name="active_version_has_review_by"
            ),
        ]
        indexes = [models.Index(fields=["status", "procedure"], name="version_status_idx")]
        permissions = [("review_procedureversion", "Can review candidates: edit, comment, reject, start eval runs")]

    def __str__(self) -> str:
        return f"{self.procedure.key} v{self.number}"

    @property
    def key(self) -> str:
        return self.procedure.key

    @property
    def is_erased(self) -> bool:
        return self.status == Status.ERASED

    def compute_content_hash(self) -> str:
        return content_hash(**content_of(self))

    @property
    def is_coding(self) -> bool:
        return bool(self.verify_command or self.preconditions or self.postconditions)

    def to_dict(self) -> ProcedureRecord:
        """The agent-facing record (API v1 field names). Caller selects procedure and approved_by."""
        evidence = dict(self.evidence or {})
        if self.approval_eval_run_id:
            evidence["evalRunId"] = self.approval_eval_run_id
        record: ProcedureRecord = {
            "id": self.procedure.key,
            "version": self.number,
            "status": self.status,
            "appliesWhen": self.applies_when,
            "steps": list(self.steps),
            "requiredTools": list(self.required_tools),
            "forbiddenActions": list(self.forbidden_actions),
            "evidence": evidence,
            "approvedBy": self.approved_by.get_username() if self.approved_by_id else None,
            "approvedAt": self.approved_at.isoformat().replace("+00:00", "Z") if self.approved_at else None,
        }
        # v1 gains optional fields only: a procedure without them serialises exactly as before
        if self.preconditions:
            record["preconditions"] = list(self.preconditions)
        if self.postconditions:
            record["postconditions"] = list(self.postconditions)
        if self.verify_command:
            record["verifyCommand"] = self.verify_command
        return record
