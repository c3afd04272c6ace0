"""Where an approved version is served besides production: releases to other environments and
staged production rollouts (written by library/services/releases.py, served by library/serving/environment_sets.py)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from .agents import Procedure
from .versions import ProcedureVersion

PRODUCTION = "production"
STAGING = "staging"
ENVIRONMENT_RE = r"^[a-z][a-z0-9_\-]{0,31}$"


class ProcedureRelease(models.Model):
    """Which approved version a non-production environment (staging, or a name the agent's admins
    define) serves for a procedure; without a row the environment serves the production (ACTIVE)
    version. Production itself has no rows: its version is the ACTIVE one. The database refuses a
    release of a version that is not APPROVED, of another procedure, or to an environment the agent
    does not have (migration 0015_environments_and_rollouts), and one row per (procedure,
    environment)."""

    procedure = models.ForeignKey(Procedure, on_delete=models.PROTECT, related_name="releases")
    environment = models.CharField(max_length=32)
    version = models.ForeignKey(ProcedureVersion, on_delete=models.PROTECT, related_name="releases")
    released_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    released_at = models.DateTimeField()

    class Meta:
        ordering = ["procedure_id", "environment"]
        constraints = [
            models.UniqueConstraint(fields=["procedure", "environment"], name="one_release_per_procedure_environment"),
            models.CheckConstraint(condition=~Q(environment=PRODUCTION), name="release_not_production"),
        ]

    def __str__(self) -> str:
        return f"{self.procedure_id} in {self.environment}: version {self.version_id}"


class Rollout(models.Model):
    """A staged rollout in production: an APPROVED version serves `share` percent of the sessions
    (chosen by a hash of the session id, library/serving/environment_sets.py) while the ACTIVE version at the start
    (`control_version`, none when the procedure had none) serves the rest. At most one running per
    procedure; the share is strictly between 0 and 100 (a full share is a promotion). Completing
    makes the version ACTIVE; rolling back leaves production as it was. Rows are kept: the metrics
    compare the arms of finished rollouts too."""

    class State(models.TextChoices):
        RUNNING = "running"
        COMPLETED = "completed", "Completed (the version is ACTIVE)"
        ROLLED_BACK = "rolled_back", "Rolled back"

    class Arm(models.TextChoices):
        ROLLOUT = "rollout", "Rollout (the new version)"
        CONTROL = "control", "Control (the previous version)"

    procedure = models.ForeignKey(Procedure, on_delete=models.PROTECT, related_name="rollouts")
    version = models.ForeignKey(ProcedureVersion, on_delete=models.PROTECT, related_name="rollouts")
    control_version = models.ForeignKey(
        ProcedureVersion,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The ACTIVE version when the rollout started (serves the control arm)",
    )
    share = models.PositiveSmallIntegerField(help_text="Percent of production sessions that get the new version")
    state = models.CharField(max_length=12, choices=State.choices, default=State.RUNNING)
    reason = models.TextField()
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    started_at = models.DateTimeField()
    # who ended it and why (completed or rolled back), and when
    ended_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    end_reason = models.TextField(blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(share__gt=0) & Q(share__lt=100), name="rollout_share_between_0_and_100"),
            models.UniqueConstraint(
                fields=["procedure"], condition=Q(state="running"), name="one_running_rollout_per_procedure"
            ),
            models.CheckConstraint(
                condition=Q(state__in=["running", "completed", "rolled_back"]), name="rollout_state_valid"
            ),
            models.CheckConstraint(
                condition=(Q(state="running") & Q(ended_at__isnull=True) & Q(ended_by__isnull=True))
                | (~Q(state="running") & Q(ended_at__isnull=False)),
                name="rollout_ended_when_not_running",
            ),
            models.CheckConstraint(
                condition=~Q(version=models.F("control_version")), name="rollout_version_not_control"
            ),
        ]

    def __str__(self) -> str:
        return f"rollout {self.pk} ({self.share}%, {self.state})"
