"""What serving the active set keeps beside the versions: the agent API's tokens, versions refused
at load, the embeddings of each version, and the conflicts between served versions."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.db.models import Q

from .agents import Agent
from .versions import ProcedureVersion


class ApiToken(models.Model):
    """A bearer token scoped to one agent and one capability. Only the sha256 is stored."""

    class Scope(models.TextChoices):
        READ = "read", "Read the active set"
        INGEST = "ingest", "Write sessions"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tokens")
    scope = models.CharField(max_length=10, choices=Scope.choices)
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, help_text="First characters, to recognise a token")
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Refused from this moment on (none: never expires)"
    )
    last_used_at = models.DateTimeField(null=True, blank=True, help_text="Written at most once a minute")

    class Meta:
        ordering = ["agent_id", "-created_at"]

    @staticmethod
    def hash(raw: str) -> str:
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()


class LoadRefusal(models.Model):
    """A version refused at load (requiredTools not all in the agent's tools). One row per version
    and tool-list state, so the alert is raised once and not on every request."""

    version = models.ForeignKey(ProcedureVersion, on_delete=models.CASCADE, related_name="load_refusals")
    tools_hash = models.CharField(max_length=64)
    missing_tools = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "tools_hash"], name="one_refusal_per_tool_state")]


class VersionEmbedding(models.Model):
    """The sentence embeddings of a version's appliesWhen and of each of its steps, computed once
    per version and model and shared by every process (versions are immutable, so they never go
    stale). Written by the agent API through the default connection the first time a version is
    ranked; read through the read-only one."""

    version = models.ForeignKey(ProcedureVersion, on_delete=models.CASCADE, related_name="embeddings")
    model_key = models.CharField(max_length=64, help_text="Identifies the embedding model (path digest)")
    dimensions = models.PositiveSmallIntegerField()
    vector = models.BinaryField(help_text="float32, little-endian, L2-normalised")
    steps_vectors = models.BinaryField(
        null=True, help_text="One vector per step, in step order (steps × dimensions float32); null until computed"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "model_key"], name="one_embedding_per_version_model")]


class VersionConflict(models.Model):
    """A pair of versions of one agent (different procedures, each ACTIVE or about to be: a candidate
    with a passing eval) whose steps contradict, found by the conflict scan (library/conflicts.py).
    Open while `cleared_at` is empty; a later scan that no longer finds it clears it. The pair is
    stored in primary-key order, at most one open row per pair and kind."""

    class Kind(models.TextChoices):
        REQUIRES_FORBIDDEN = "requires_forbidden", "One requires what the other forbids"
        SAME_SITUATION = "same_situation", "Same situation, different required tools"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="conflicts")
    version_a = models.ForeignKey(ProcedureVersion, on_delete=models.CASCADE, related_name="+")
    version_b = models.ForeignKey(ProcedureVersion, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    detail = models.JSONField(default=dict)
    message = models.TextField()
    found_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField()
    cleared_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-found_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(version_a__lt=models.F("version_b")), name="conflict_pair_ordered"),
            models.UniqueConstraint(
                fields=["version_a", "version_b", "kind"],
                condition=Q(cleared_at__isnull=True),
                name="one_open_conflict_per_pair_kind",
            ),
        ]
