"""Erasure: any status → ERASED, with a tombstone; content, evidence and eval replies wiped."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from ..models import AuditEvent, EvalCaseResult, EvalRun, ProcedureVersion, Status, VersionEmbedding, VersionTombstone
from ..permissions import user_can_manage_procedure
from ..signals import eval_run_finished, version_erased, version_erasing
from . import erasure_sweep as erasure
from .errors import LifecycleError
from .events import _notify_active_set_changed, _on_commit, audit
from .locking import _lock_procedure, _lock_version
from .rollouts import release_for_erasure

# What erasure leaves of a version's content, evidence, provenance and policy excerpts: the values
# the database's version guard lets an erasure write, once.
ERASED_CONTENT = {
    "applies_when": "",
    "steps": [],
    "required_tools": [],
    "forbidden_actions": [],
    "skeleton": [],
    "quarantine_reasons": [],
    "evidence": {},
    "provenance": {},
    "preconditions": [],
    "postconditions": [],
    "verify_command": "",
    "search_vector": None,  # the full-text document of the erased content
}


def version_erase(*, version: ProcedureVersion, user, ground: str, reason: str) -> VersionTombstone:
    """Any status → ERASED (admin): a personal-data request or poisoned content. In one transaction,
    under the version's row lock: a VersionTombstone keeps id, number, content hash, who, when and
    why; the version's content, evidence, provenance and policy excerpts are wiped (the database's
    version guard allows exactly this change, once, and only with the tombstone present); its
    stored embeddings are deleted; the replies and tool calls its eval runs recorded are wiped and
    unfinished runs cancelled; listeners of `version_erasing` (reviews: comments) wipe what they
    hold. After commit the served sets drop it (`active_set_changed`, whatever the old status was,
    so caches and ETags change at once)."""

    if ground not in VersionTombstone.Ground.values:
        raise ValidationError(
            {"ground": f"unknown ground {ground!r}; one of {', '.join(VersionTombstone.Ground.values)}"}
        )
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Erasing needs a reason (it is kept in the tombstone)."})
    if user is None or not user.is_authenticated:
        raise PermissionDenied("Sign in to erase.")
    with transaction.atomic():
        _lock_procedure(version, agent_too=True)  # erasing an ACTIVE version changes the active set
        locked = _lock_version(version)
        if not user_can_manage_procedure(user, locked.procedure):
            raise PermissionDenied(f"You may not erase versions of {locked.procedure.key}.")
        if locked.status == Status.ERASED:
            raise LifecycleError(f"{locked} was already erased.")
        release_for_erasure(locked=locked, user=user)  # it leaves every environment and rollout first
        erased_texts = erasure.version_texts(locked)
        mined_from = erasure.mined_from_sessions(locked.evidence)  # read before the evidence is wiped
        now = timezone.now()
        status_before = locked.status
        tombstone = VersionTombstone.objects.create(
            version=locked,
            procedure_key=locked.procedure.key,
            number=locked.number,
            content_hash=locked.content_hash,
            status_before=status_before,
            ground=ground,
            reason=reason,
            erased_by=user,
            erased_at=now,
        )
        updated = ProcedureVersion.objects.filter(pk=locked.pk, status=status_before).update(
            status=Status.ERASED,
            status_reason=f"Erased: {tombstone.get_ground_display()}",
            status_changed_at=now,
            **ERASED_CONTENT,
        )
        if updated != 1:
            raise LifecycleError(f"{locked} changed while you were deciding; reload and try again.")
        VersionEmbedding.objects.filter(version=locked).delete()
        _erase_eval_records(version_id=locked.pk)
        for _receiver, wiped in version_erasing.send(sender=ProcedureVersion, version_id=locked.pk):
            erased_texts.extend(wiped or [])  # listeners return the texts they wiped (comment bodies)
        sweep = erasure.erasure_sweep(
            version=locked, tombstone=tombstone, texts=erased_texts, user=user, session_ids=mined_from
        )
        audit(
            action=AuditEvent.Action.ERASE,
            actor=user,
            version=locked,
            reason=reason,
            before={"version": locked.number, "status": status_before, "contentHash": locked.content_hash},
            after={
                "version": locked.number,
                "status": Status.ERASED,
                "ground": ground,
                "copiesRewritten": sweep.rewritten_count,
                "versionsFlagged": sweep.flagged_versions,
                "copiesRemaining": len(sweep.remaining),
            },
        )
        agent_id = locked.procedure.agent_id
        _on_commit(lambda: _notify_active_set_changed(agent_id))
        version_id = locked.pk
        _on_commit(lambda: version_erased.send(sender=ProcedureVersion, agent_id=agent_id, version_id=version_id))
    locked.refresh_from_db()
    return tombstone


def _erase_eval_records(*, version_id: int) -> None:
    """Part of `version_erase` (caller holds the version's row lock inside its transaction): the
    version's unfinished eval runs are cancelled (a chunk task stops at its next case; a claimed row
    cannot be finished, its claim nonce is cleared), and the replies, tool calls and failure texts
    every run recorded are wiped, since a replay can echo the erased content. Verdicts stay (a
    finished run's verdict never changes)."""

    unfinished = [EvalRun.State.QUEUED, EvalRun.State.RUNNING]
    cancelled = list(
        EvalRun.objects.select_for_update()
        .filter(version_id=version_id, state__in=unfinished)
        .values_list("pk", flat=True)
    )
    EvalRun.objects.filter(pk__in=cancelled).update(
        state=EvalRun.State.CANCELLED, failure_reason="Cancelled: the version was erased", finished_at=timezone.now()
    )
    for run_id in cancelled:
        _on_commit(lambda run_id=run_id: eval_run_finished.send(sender=EvalRun, run_id=run_id))
    EvalCaseResult.objects.filter(run__version_id=version_id).update(
        reply="", tool_calls=[], failures=[], error="", claim_nonce=""
    )
