"""The people's side: comments on versions and notifications."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from library.models import ProcedureVersion


class Comment(models.Model):
    version = models.ForeignKey(ProcedureVersion, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]


class NotificationKind(models.TextChoices):
    NEW_CANDIDATES = "new_candidates", "New candidates waiting for review"
    EVAL_FINISHED = "eval_finished", "An eval run finished"
    REFUSED_AT_LOAD = "refused_at_load", "A procedure was refused at load"
    METRIC_WARNING = "metric_warning", "A metric warning"


class Notification(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications")
    kind = models.CharField(max_length=20, choices=NotificationKind.choices)
    message = models.TextField()
    url = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "read_at"], name="notification_unread_idx")]


class NotificationPreference(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preferences")
    kind = models.CharField(max_length=20, choices=NotificationKind.choices)
    in_app = models.BooleanField(default=True)
    email = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "kind"], name="one_preference_per_kind")]


# ---------------------------------------------------------------------------------------------- metrics rollup
#
# The metrics pages never read AgentSession: over a million sessions that is seconds, not
# milliseconds. reviews/metrics/rollup.py folds sessions into the two daily tables below (one row per
# agent, day, intent and model; one per version, session intent, day and model) and the pages sum a
# few hundred of those rows. A refresh recomputes whole days, so running it twice, or over a day
# that is still receiving sessions, never counts a session twice.


class MetricsState(models.Model):
    """Per agent: how far the rollup has read the sessions (by received_at). The row is also the
    lock that serialises two refreshes of one agent."""

    agent = models.OneToOneField("library.Agent", on_delete=models.CASCADE, related_name="metrics_state")
    refreshed_until = models.DateTimeField(null=True, blank=True)
    refreshed_at = models.DateTimeField(null=True, blank=True)
    days_recomputed = models.PositiveIntegerField(default=0)
    # p95 of instruction length per version for the pages' fixed windows ending `as_of`, merged from
    # the day histograms at refresh time: {"as_of": "YYYY-MM-DD", "windows": {"30": {"<version id>": p95}}}.
    # Merging a year of histograms on every page view would cost more than the rest of the page.
    window_p95 = models.JSONField(default=dict, blank=True)


class IntentDayRollup(models.Model):
    """Sessions of one intent on one day under one model: all of them, and those that received no
    procedure ("bare"). `labelled` counts sessions with an outcome; `resolved` those resolved and
    not escalated."""

    agent = models.ForeignKey("library.Agent", on_delete=models.CASCADE, related_name="+")
    intent = models.ForeignKey("library.Intent", on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    model = models.CharField(max_length=128, blank=True)
    sessions = models.PositiveIntegerField(default=0)
    labelled = models.PositiveIntegerField(default=0)
    resolved = models.PositiveIntegerField(default=0)
    bare_sessions = models.PositiveIntegerField(default=0)
    bare_labelled = models.PositiveIntegerField(default=0)
    bare_resolved = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "intent", "day", "model"], name="intent_day_rollup_unique"),
        ]
        indexes = [models.Index(fields=["agent", "day"], name="intent_rollup_agent_day_idx")]


class VersionDayRollup(models.Model):
    """Sessions that received one procedure version, by the session's own intent, day and model.
    `chars_hist` is a log-bucket histogram of instruction lengths ({bucket index: count}, see
    reviews.metrics.histogram.CharsHistogram), so p95 over any range of days is a merge, not a rescan."""

    agent = models.ForeignKey("library.Agent", on_delete=models.CASCADE, related_name="+")
    version = models.ForeignKey("library.ProcedureVersion", on_delete=models.CASCADE, related_name="+")
    intent = models.ForeignKey("library.Intent", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    model = models.CharField(max_length=128, blank=True)
    sessions = models.PositiveIntegerField(default=0)
    labelled = models.PositiveIntegerField(default=0)
    resolved = models.PositiveIntegerField(default=0)
    chars_hist = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["agent", "day"], name="version_rollup_agent_day_idx"),
            models.Index(fields=["version", "day"], name="version_rollup_version_day_idx"),
        ]


class MetricAlert(models.Model):
    """An ACTIVE version whose resolution rate fell significantly below its eval result. Open until
    a later check finds the rate back within noise; one open alert per version, so the warning is
    sent once and not on every refresh."""

    version = models.ForeignKey("library.ProcedureVersion", on_delete=models.CASCADE, related_name="+")
    opened_at = models.DateTimeField(auto_now_add=True)
    cleared_at = models.DateTimeField(null=True, blank=True)
    figures = models.JSONField(default=dict)
    message = models.TextField()

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["version"], condition=models.Q(cleared_at__isnull=True), name="one_open_metric_alert_per_version"
            ),
        ]
