"""Writes of the review workspace that are not lifecycle changes (those are library.services):
claims on candidates, discussion threads, and a bulk rejection that goes through `version_reject`
for each version.

Claims. Any reviewer claims a candidate for themselves (claiming again renews it); a claim lapses
after PROCMEM_CLAIM_HOURS. Assigning a candidate to someone else, taking over a live claim of
someone else, and releasing someone else's claim need the agent's admin right
(`library.manage_agent` on the candidate's agent, or a superuser): the people who run an agent
distribute its review work. Every decision is taken under the version's row lock, so of two
reviewers claiming at once exactly one wins; the other gets a LifecycleError naming the holder.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.dispatch import receiver
from django.utils import timezone

from library import signals as library_signals
from library.models import Agent, AuditEvent, ProcedureVersion, Status
from library.permissions import user_can_manage_agent, user_can_manage_procedure, user_can_review, user_is_reviewer
from library.services import LifecycleError, audit, required_reason, version_reject, version_retire

from .metrics.demotion import demotion_findings
from .models import CandidateClaim, Comment, DemotionProposal, Thread
from .notifications import notify_mentions

MAX_COMMENT_CHARS = 5000
MAX_BULK_REJECT = 500


# ---------------------------------------------------------------------------------------------- claims


def user_can_assign(user, agent) -> bool:
    """Whether `user` may hand the agent's candidates to other people (and take or release theirs)."""
    return user_is_reviewer(user) and user_can_manage_agent(user, agent)


def _lock_candidate(version: ProcedureVersion) -> ProcedureVersion:
    locked = (
        ProcedureVersion.objects.select_for_update(of=("self",)).select_related("procedure__agent").get(pk=version.pk)
    )
    if locked.status != Status.CANDIDATE:
        raise LifecycleError(f"Only candidates are claimed; {locked} is {locked.status}.")
    return locked


def live_claim(version: ProcedureVersion, *, now=None) -> CandidateClaim | None:
    """The version's claim if it has not expired. Caller holds the version's row lock when it acts on it."""
    now = now or timezone.now()
    claim = CandidateClaim.objects.filter(version=version).select_related("assignee").first()
    return claim if claim is not None and claim.expires_at > now else None


def candidate_claim(*, version: ProcedureVersion, user, assignee=None) -> CandidateClaim:
    """Claims the candidate for `user`, or assigns it to `assignee`. Refused (409) while someone
    else holds a live claim, unless `user` may assign (then the claim moves, audited with the
    previous holder)."""
    assignee = assignee or user
    if not user_can_review(user, version.procedure):
        raise PermissionDenied("Only reviewers may claim candidates.")
    can_assign = user_can_assign(user, version.procedure.agent)
    if assignee.pk != user.pk and not can_assign:
        raise PermissionDenied(
            f"Only the admins of {version.procedure.agent.name} may assign its candidates to someone else."
        )
    if not user_can_review(assignee, version.procedure):
        raise ValidationError({"assignee": f"{assignee.get_username()} is not a reviewer."})
    with transaction.atomic():
        locked = _lock_candidate(version)
        now = timezone.now()
        existing = CandidateClaim.objects.filter(version=locked).select_related("assignee").first()
        held = existing if existing is not None and existing.expires_at > now else None
        if held is not None and held.assignee_id != assignee.pk and not can_assign:
            raise LifecycleError(
                f"{locked} is claimed by {held.assignee.get_username()} until {held.expires_at:%Y-%m-%d %H:%M} UTC."
            )
        expires = now + timedelta(hours=settings.PROCMEM_CLAIM_HOURS)
        before = {"assignee": held.assignee.get_username(), "expiresAt": held.expires_at.isoformat()} if held else {}
        if existing is None:
            claim = CandidateClaim.objects.create(
                version=locked,
                assignee=assignee,
                assigned_by=user,
                claimed_at=now,
                expires_at=expires,
                **CandidateClaim.keys_of(locked),
            )
        else:
            claim = existing
            claim.assignee, claim.assigned_by, claim.claimed_at, claim.expires_at = assignee, user, now, expires
            claim.save(update_fields=["assignee", "assigned_by", "claimed_at", "expires_at"])
        audit(
            action=AuditEvent.Action.CLAIM if assignee.pk == user.pk else AuditEvent.Action.ASSIGN,
            actor=user,
            version=locked,
            reason=f"until {expires:%Y-%m-%d %H:%M} UTC",
            before=before,
            after={"assignee": assignee.get_username(), "expiresAt": expires.isoformat()},
        )
    return claim


def candidate_release(*, version: ProcedureVersion, user) -> None:
    """Gives the candidate back to the queue: the holder, or someone who may assign."""
    if not user_can_review(user, version.procedure):
        raise PermissionDenied("Only reviewers may release candidates.")
    with transaction.atomic():
        locked = (
            ProcedureVersion.objects.select_for_update(of=("self",))
            .select_related("procedure__agent")
            .get(pk=version.pk)
        )
        held = live_claim(locked)
        if held is None:
            raise LifecycleError(f"{locked} is not claimed by anyone.")
        if held.assignee_id != user.pk and not user_can_assign(user, locked.procedure.agent):
            raise PermissionDenied(
                f"{locked} is claimed by {held.assignee.get_username()}; only they or an admin of the agent may release it."
            )
        CandidateClaim.objects.filter(version=locked).delete()
        audit(
            action=AuditEvent.Action.RELEASE,
            actor=user,
            version=locked,
            before={"assignee": held.assignee.get_username(), "expiresAt": held.expires_at.isoformat()},
        )


# ---------------------------------------------------------------------------------------------- threads


def _clean_body(body: str) -> str:
    body = (body or "").strip()
    if not body:
        raise ValidationError({"body": "A comment cannot be empty."})
    if len(body) > MAX_COMMENT_CHARS:
        raise ValidationError({"body": f"A comment is at most {MAX_COMMENT_CHARS} characters."})
    return body


def _clean_anchor(version: ProcedureVersion, anchor: str, step: int | None) -> tuple[str, int | None]:
    anchor = anchor or ""
    if anchor not in Thread.Anchor.values:
        raise ValidationError(
            {
                "anchor": f"Unknown anchor {anchor!r}: use one of {', '.join(a or '(whole version)' for a in Thread.Anchor.values)}."
            }
        )
    if anchor != Thread.Anchor.STEP:
        return anchor, None
    steps = len(version.steps or [])
    if not isinstance(step, int) or not 1 <= step <= steps:
        raise ValidationError({"step": f"{version} has steps 1 to {steps}; step {step} does not exist."})
    return anchor, step


def _add_comment(*, thread: Thread, version: ProcedureVersion, user, body: str) -> Comment:
    comment = Comment.objects.create(thread=thread, version=version, author=user, body=body)
    audit(
        action=AuditEvent.Action.COMMENT,
        actor=user,
        version=version,
        reason=body[:200],
        after={"comment": comment.pk, "thread": thread.pk, "anchor": thread.anchor_label},
    )
    notify_mentions(comment=comment, thread=thread, version=version)
    return comment


ERASED_COMMENT = "(erased with the version)"


@receiver(library_signals.version_erasing, dispatch_uid="reviews.wipe_comments_of_erased_version")
def _wipe_comments(sender, version_id: int, **kwargs) -> list[str]:
    """Inside the erasing transaction: comments can quote the erased content. The rows stay (who
    commented when), their text goes; the texts are returned, so the erasure sweep removes their
    copies (audit reasons of "Commented" events, mention notifications; library/services/erasure_sweep.py). The
    search document follows the body (its trigger fires on UPDATE OF body)."""
    comments = Comment.objects.filter(version_id=version_id)
    bodies = [body for body in comments.values_list("body", flat=True) if body != ERASED_COMMENT]
    comments.update(body=ERASED_COMMENT)
    return bodies


def thread_create(*, version: ProcedureVersion, user, body: str, anchor: str = "", step: int | None = None) -> Thread:
    """Opens a thread on a version (any status: a rejected one can still be discussed), anchored to
    the whole version, a field, or one step. @username mentions notify those reviewers."""
    if not user_can_review(user, version.procedure):
        raise PermissionDenied("Only reviewers may comment.")
    body = _clean_body(body)
    anchor, step = _clean_anchor(version, anchor, step)
    with transaction.atomic():
        thread = Thread.objects.create(version=version, anchor=anchor, step=step, created_by=user)
        _add_comment(thread=thread, version=version, user=user, body=body)
    return thread


def comment_create(*, version: ProcedureVersion, user, body: str) -> Comment:
    """A comment on the whole version: a new unanchored thread with one comment."""
    return thread_create(version=version, user=user, body=body).comments.get()


def thread_reply(*, thread: Thread, user, body: str) -> Comment:
    """A reply; replying to a resolved thread reopens it (someone still has something to say)."""
    if not user_can_review(user, thread.version.procedure):
        raise PermissionDenied("Only reviewers may comment.")
    body = _clean_body(body)
    with transaction.atomic():
        locked = (
            Thread.objects.select_for_update(of=("self",)).select_related("version__procedure__agent").get(pk=thread.pk)
        )
        if locked.resolved_at is not None:
            locked.resolved_at = locked.resolved_by = None
            locked.save(update_fields=["resolved_at", "resolved_by"])
            audit(
                action=AuditEvent.Action.THREAD_REOPEN,
                actor=user,
                version=locked.version,
                reason="reopened by a reply",
                after={"thread": locked.pk},
            )
        return _add_comment(thread=locked, version=locked.version, user=user, body=body)


def thread_set_resolved(*, thread: Thread, user, resolved: bool) -> Thread:
    """Resolves or reopens a thread; refused (409) when it already is in that state."""
    if not user_can_review(user, thread.version.procedure):
        raise PermissionDenied("Only reviewers may resolve or reopen threads.")
    with transaction.atomic():
        locked = (
            Thread.objects.select_for_update(of=("self",)).select_related("version__procedure__agent").get(pk=thread.pk)
        )
        if locked.is_resolved == resolved:
            raise LifecycleError(
                f"The thread on {locked.anchor_label} is already {'resolved' if resolved else 'open'}."
            )
        locked.resolved_at, locked.resolved_by = (timezone.now(), user) if resolved else (None, None)
        locked.save(update_fields=["resolved_at", "resolved_by"])
        audit(
            action=AuditEvent.Action.THREAD_RESOLVE if resolved else AuditEvent.Action.THREAD_REOPEN,
            actor=user,
            version=locked.version,
            reason=locked.anchor_label,
            after={"thread": locked.pk},
        )
    return locked


def versions_bulk_reject(*, versions: Sequence[ProcedureVersion], user, reason: str) -> list[ProcedureVersion]:
    """Rejects every version with one reason, all or nothing: one transaction, each through
    `version_reject` (which locks, re-checks the status and audits). If one of them is no longer a
    candidate the whole batch is refused with that version named, and nothing changes."""
    if not user_is_reviewer(user):
        raise PermissionDenied("Only reviewers may reject candidates.")
    if not versions:
        raise ValidationError({"versions": "Select at least one candidate."})
    if len(versions) > MAX_BULK_REJECT:
        raise ValidationError({"versions": f"At most {MAX_BULK_REJECT} candidates at once."})
    with transaction.atomic():
        return [version_reject(version=version, user=user, reason=reason) for version in versions]


# ---------------------------------------------------------------------------------------------- demotion


def demotions_propose(*, agent: Agent, today=None) -> list[DemotionProposal]:
    """Runs the demotion check (reviews.metrics.demotion) for one agent and opens a proposal, with an
    audit row, for each finding on a version that has no open proposal yet. Retires nothing."""

    findings = demotion_findings(agent=agent, today=today)
    opened: list[DemotionProposal] = []
    with transaction.atomic():
        for finding in findings:
            locked = (
                ProcedureVersion.objects.select_for_update().filter(pk=finding.version.pk, status=Status.ACTIVE).first()
            )
            if (
                locked is None
                or DemotionProposal.objects.filter(version=locked, state=DemotionProposal.State.OPEN).exists()
            ):
                continue
            proposal = DemotionProposal.objects.create(
                version=locked, kind=finding.kind, figures=finding.figures, message=finding.message
            )
            audit(
                action=AuditEvent.Action.DEMOTION_PROPOSE,
                actor_label="demotion check",
                version=finding.version,
                reason=finding.message,
                after={"proposal": proposal.pk, "kind": finding.kind, **finding.figures},
            )
            opened.append(proposal)
    return opened


@receiver(library_signals.retirement_requested, dispatch_uid="reviews.retirement_request_as_demotion")
def _on_retirement_requested(sender, version_id: int, reason: str, actor_label: str = "", **kwargs) -> None:
    """A retirement request (a sync found the file gone) becomes a demotion proposal: an admin
    confirms (retires) or dismisses it. One open proposal per version, as for the demotion check."""
    with transaction.atomic():
        locked = ProcedureVersion.objects.select_for_update().filter(pk=version_id, status=Status.ACTIVE).first()
        if (
            locked is None
            or DemotionProposal.objects.filter(version=locked, state=DemotionProposal.State.OPEN).exists()
        ):
            return
        proposal = DemotionProposal.objects.create(
            version=locked, kind=DemotionProposal.Kind.REMOVED_FILE, figures={}, message=reason
        )
        audit(
            action=AuditEvent.Action.DEMOTION_PROPOSE,
            actor_label=actor_label or "sync",
            version=locked,
            reason=reason,
            after={"proposal": proposal.pk, "kind": proposal.kind},
        )


def _lock_open_proposal(proposal: DemotionProposal, user) -> DemotionProposal:
    locked = (
        DemotionProposal.objects.select_for_update(of=("self",))
        .select_related("version__procedure__agent")
        .get(pk=proposal.pk)
    )
    if not user_can_manage_procedure(user, locked.version.procedure):
        raise PermissionDenied(f"You may not decide demotions of {locked.version.procedure.key}.")
    if locked.state != DemotionProposal.State.OPEN:
        raise LifecycleError(f"This proposal was already {locked.get_state_display().lower()}.")
    return locked


def _close(locked: DemotionProposal, *, user, state: str, reason: str) -> None:
    locked.state = state
    locked.decided_by = user
    locked.decided_at = timezone.now()
    locked.decision_reason = reason
    locked.save(update_fields=["state", "decided_by", "decided_at", "decision_reason"])


def demotion_confirm(*, proposal: DemotionProposal, user, reason: str) -> DemotionProposal:
    """An admin agrees: the version is retired through version_retire (same transaction, its own
    row lock and audit row) and the proposal closed. A version that is no longer ACTIVE is refused."""
    reason = required_reason(reason, "Confirming a demotion")
    with transaction.atomic():
        locked = _lock_open_proposal(proposal, user)
        version_retire(version=locked.version, user=user, reason=f"Demotion confirmed: {reason}")
        _close(locked, user=user, state=DemotionProposal.State.CONFIRMED, reason=reason)
        audit(
            action=AuditEvent.Action.DEMOTION_CONFIRM,
            actor=user,
            version=locked.version,
            reason=reason,
            after={"proposal": locked.pk, "kind": locked.kind},
        )
    return locked


def demotion_dismiss(*, proposal: DemotionProposal, user, reason: str) -> DemotionProposal:
    """An admin disagrees: the version stays ACTIVE, the proposal is closed with the reason."""
    reason = required_reason(reason, "Dismissing a demotion")
    with transaction.atomic():
        locked = _lock_open_proposal(proposal, user)
        _close(locked, user=user, state=DemotionProposal.State.DISMISSED, reason=reason)
        audit(
            action=AuditEvent.Action.DEMOTION_DISMISS,
            actor=user,
            version=locked.version,
            reason=reason,
            after={"proposal": locked.pk, "kind": locked.kind},
        )
    return locked
