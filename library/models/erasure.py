"""What an erasure leaves: the tombstone of an erased version and the sweep of its copies
(library/services/erasure_sweep.py, `version_erase` in library/services/erasing.py)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .versions import ProcedureVersion


class VersionTombstone(models.Model):
    """What is left of an erased version: the version row keeps its id, number and content hash
    (its content, evidence and provenance are wiped); this row says who erased it, when and why.
    Written once by `version_erase`, never changed or deleted (database triggers, migration
    0008_version_erasure), and the database lets a version's content change only to the wiped
    values, only once, and only when this row exists for it."""

    class Ground(models.TextChoices):
        PERSONAL_DATA = "personal_data", "Personal-data request"
        POISONED = "poisoned", "Poisoned or harmful content"
        OTHER = "other"

    version = models.OneToOneField(ProcedureVersion, on_delete=models.PROTECT, related_name="tombstone")
    procedure_key = models.CharField(max_length=200)
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    status_before = models.CharField(max_length=10)
    ground = models.CharField(max_length=16, choices=Ground.choices)
    reason = models.TextField()
    erased_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    erased_at = models.DateTimeField()

    class Meta:
        ordering = ["-erased_at", "-id"]

    def __str__(self) -> str:
        return f"tombstone of {self.procedure_key} v{self.number}"

    @property
    def reference(self) -> str:
        """What replaces a copy of the erased text wherever erasure finds one (library/services/erasure_sweep.py)."""
        return f"[erased with tombstone {self.pk}]"


class ErasureSweep(models.Model):
    """What an erasure did to the copies of the erased text outside the version row
    (library/services/erasure_sweep.py), written in the erasing transaction: the stored rows it rewrote, the later
    versions it flagged for review, and the copies the check after the sweep still found.
    `fingerprints` are keyed digests of the erased text's word windows, never the text, so
    `scan_erased` can prove later that no stored text contains it. While a sweep's `finished_at` is
    NULL (only inside the erasing transaction) the database lets audit rows change their reason,
    before and after to a text that carries a tombstone's reference (migration 0023_erasure_sweep)."""

    tombstone = models.OneToOneField(VersionTombstone, on_delete=models.PROTECT, related_name="sweep")
    fingerprints = models.JSONField(default=list, blank=True)
    rewritten = models.JSONField(default=dict, blank=True, help_text='{"library.AuditEvent": [pk, ...], ...}')
    flagged_versions = models.JSONField(
        default=list, blank=True, help_text="Later versions that shared erased text verbatim"
    )
    remaining = models.JSONField(default=list, blank=True, help_text="Copies the check after the sweep still found")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"erasure sweep of tombstone {self.tombstone_id}"

    @property
    def rewritten_count(self) -> int:
        return sum(len(pks) for pks in (self.rewritten or {}).values())
