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
