"""Notifications: in the app (a list with an unread count in the top bar) and by e-mail through
Django's mail settings. The library sends signals after its transactions commit
(library/signals.py; the metric warning is the review side's own, reviews/signals.py); the receivers
here name the recipients by the rulebook's rules (library/permissions.py: active_reviewers,
agent_admins, procedure_approvers, user_can_read_agent), write one Notification row per user who
wants it in the app, and queue one e-mail per user who wants it by mail.

Who receives what (each user switches kinds on and off on the preferences page; without a saved
preference a kind is shown in the app, and only a refusal at load is also mailed — an agent
silently losing a procedure must reach its admins even if they never opened the preferences):
- new candidates waiting: reviewers;
- an eval run finished: whoever started it, and the reviewers;
- a procedure refused at load: the agent's admins (superusers, holders of manage_agent or
  manage_agent_procedures on the agent, or manage_procedure on the procedure);
- a metric warning: those admins and the procedure's approvers;
- a mention (@username in a thread): that user, if they are an active reviewer who can see the
  version, and not the author.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from celery import signature
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMessage, get_connection
from django.db import transaction
from django.dispatch import receiver
from django.urls import reverse
from django.utils import timezone

from library import signals
from library.models import (
    Agent,
    EvalRun,
    ProcedureVersion,
)
from library.permissions import active_reviewers, agent_admins, procedure_approvers, user_can_read_agent
from library.services.erasure_sweep import FingerprintMatcher

from .models import Notification, NotificationKind, NotificationPreference
from .signals import metric_warning

logger = logging.getLogger(__name__)

EMAIL_BY_DEFAULT = {NotificationKind.REFUSED_AT_LOAD}
EMAIL_TASK = "reviews.notification_email"
ERASED_MESSAGE = "(This notification quoted text that has since been erased.)"


def default_preference(user, kind: str) -> NotificationPreference:
    return NotificationPreference(user=user, kind=kind, in_app=True, email=kind in EMAIL_BY_DEFAULT)


# ---------------------------------------------------------------------------------------------- recipients


# ---------------------------------------------------------------------------------------------- sending


def preferences_for(user) -> dict[str, NotificationPreference]:
    """Every kind with the user's choice; kinds never saved get the default (see EMAIL_BY_DEFAULT)."""
    saved = {p.kind: p for p in NotificationPreference.objects.filter(user=user)}
    return {kind: saved.get(kind) or default_preference(user, kind) for kind in NotificationKind.values}


def notification_send(
    *, users: Iterable, kind: str, message: str, url: str = "", agent: Agent | None = None
) -> list[Notification]:
    """Writes an in-app notification for each user who wants this kind in the app and queues an
    e-mail (after commit) for each who wants it by mail. Returns the rows written. `agent`: the
    agent the message is about; users who may not read it (read isolation by namespace) get
    nothing."""
    if kind not in NotificationKind.values:
        raise ValueError(f"unknown notification kind {kind!r}")
    users = {u.pk: u for u in users if agent is None or user_can_read_agent(u, agent)}
    if not users:
        return []
    saved = {p.user_id: p for p in NotificationPreference.objects.filter(user_id__in=users, kind=kind)}
    default = default_preference(None, kind)
    in_app = [uid for uid in users if (saved.get(uid) or default).in_app]
    by_mail = [uid for uid in users if (saved.get(uid) or default).email and users[uid].email]
    with transaction.atomic():
        rows = Notification.objects.bulk_create(
            [Notification(user_id=uid, kind=kind, message=message, url=url) for uid in in_app]
        )
        if by_mail:
            # by name: reviews.tasks imports this module, so this module does not import it back
            email = signature(EMAIL_TASK, kwargs={"user_ids": by_mail, "kind": kind, "message": message, "url": url})
            transaction.on_commit(email.delay, robust=True)
    return rows


def notification_mark_read(*, user, notification_ids: list[int] | None = None) -> int:
    """Marks the user's unread notifications read (all of them when no ids are given)."""
    unread = Notification.objects.filter(user=user, read_at__isnull=True)
    if notification_ids is not None:
        unread = unread.filter(pk__in=notification_ids)
    return unread.update(read_at=timezone.now())


def notification_preferences_set(*, user, choices: dict[str, tuple[bool, bool]]) -> None:
    """Saves (in_app, email) per kind; kinds not in `choices` are left as they are."""
    with transaction.atomic():
        for kind, (in_app, email) in choices.items():
            if kind not in NotificationKind.values:
                raise ValueError(f"unknown notification kind {kind!r}")
            NotificationPreference.objects.update_or_create(
                user=user, kind=kind, defaults={"in_app": bool(in_app), "email": bool(email)}
            )


def notification_email_send(*, user_ids: list[int], kind: str, message: str, url: str = "") -> int:
    """One e-mail per recipient through Django's mail settings (reviews.tasks.notification_email
    runs this and retries while the mail server is unreachable). Recipients who were deactivated or
    lost their address meanwhile are skipped. A message that quotes text erased after it was queued
    (library/services/erasure_sweep.py's fingerprints) is sent without it. Returns the number of e-mails sent."""
    users = get_user_model().objects.filter(pk__in=user_ids, is_active=True).exclude(email="")
    if FingerprintMatcher().matches(message):
        # queued before an erasure whose text it quotes: the in-app copy was rewritten then, this one now
        message = ERASED_MESSAGE
    subject = f"[procmem] {NotificationKind(kind).label}"
    base = getattr(settings, "PROCMEM_BASE_URL", "")
    body = (
        message
        + (f"\n\n{base}{url}" if url else "")
        + "\n\nChoose what you receive: "
        + base
        + reverse("reviews:notification_preferences")
    )
    messages = [EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [u.email]) for u in users]
    if not messages:
        return 0
    with get_connection() as connection:
        return connection.send_messages(messages) or 0


# ---------------------------------------------------------------------------------------------- mentions

# @ at the start or after a non-word character, then a Django username (letters, digits, @.+-_);
# a trailing dot or dash is punctuation, not part of the name.
MENTION_RE = re.compile(r"(?<![\w@])@([\w.@+-]+)")


def mentioned_usernames(body: str) -> list[str]:
    names = []
    for match in MENTION_RE.finditer(body or ""):
        name = match.group(1).rstrip(".-")
        if name and name not in names:
            names.append(name)
    return names


def notify_mentions(*, comment, thread, version: ProcedureVersion) -> list[Notification]:
    """Notifies the reviewers a comment mentions. Names that are not active reviewers who can see
    the version are ignored (a mention is not a way to show a version to someone)."""
    names = mentioned_usernames(comment.body)
    if not names:
        return []
    agent = version.procedure.agent
    users = [
        user
        for user in active_reviewers().filter(username__in=names).exclude(pk=comment.author_id)
        if user_can_read_agent(user, agent)
    ]
    excerpt = comment.body if len(comment.body) <= 160 else comment.body[:157] + "…"
    return notification_send(
        users=users,
        kind=NotificationKind.MENTION,
        message=f"{comment.author.get_username()} mentioned you on {version.procedure.key} v{version.number} ({thread.anchor_label}): {excerpt}",
        url=reverse("reviews:version", kwargs={"pk": version.pk}) + f"#thread-{thread.pk}",
        agent=agent,
    )


# ---------------------------------------------------------------------------------------------- receivers


@receiver(signals.candidates_created, dispatch_uid="reviews.notify_candidates_created")
def _on_candidates_created(sender, agent_id: int, version_ids: list[int], mining_run_id: int | None = None, **kwargs):
    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None or not version_ids:
        return
    count = len(version_ids)
    versions = list(
        ProcedureVersion.objects.filter(pk__in=version_ids).select_related("procedure").order_by("procedure__key")[:5]
    )
    names = ", ".join(f"{v.procedure.key} v{v.number}" for v in versions) + (" …" if count > len(versions) else "")
    origin = f" from mining run {mining_run_id}" if mining_run_id else ""
    notification_send(
        users=active_reviewers(),
        kind=NotificationKind.NEW_CANDIDATES,
        message=f"{count} new candidate{'s' if count != 1 else ''} for {agent.name} wait{'s' if count == 1 else ''} for review{origin}: {names}",
        url=reverse("reviews:queue"),
        agent=agent,
    )


@receiver(signals.eval_run_finished, dispatch_uid="reviews.notify_eval_run_finished")
def _on_eval_run_finished(sender, run_id: int, **kwargs):
    run = EvalRun.objects.filter(pk=run_id).select_related("version__procedure__agent", "started_by").first()
    if run is None:
        return
    version = run.version
    outcome = run.get_verdict_display().lower() if run.verdict else run.get_state_display().lower()
    users = list(active_reviewers())
    if run.started_by is not None and run.started_by.is_active:
        users.append(run.started_by)
    notification_send(
        users=users,
        kind=NotificationKind.EVAL_FINISHED,
        message=f"Eval run {run.pk} for {version.procedure.key} v{version.number} ({version.procedure.agent.name}) finished: {outcome}.",
        url=reverse("reviews:ops_procedure", args=[version.procedure.agent.name, version.procedure.key]),
        agent=version.procedure.agent,
    )


@receiver(signals.version_refused_at_load, dispatch_uid="reviews.notify_version_refused")
def _on_version_refused(sender, version_id: int, missing_tools: list[str], **kwargs):
    version = ProcedureVersion.objects.filter(pk=version_id).select_related("procedure__agent").first()
    if version is None:
        return
    agent = version.procedure.agent
    notification_send(
        users=agent_admins(agent, version.procedure_id),
        kind=NotificationKind.REFUSED_AT_LOAD,
        message=(
            f"{version.procedure.key} v{version.number} was refused at load for {agent.name}: the agent no longer "
            f"has {', '.join(missing_tools) or 'a required tool'}. Agents do not receive it until the tools "
            "are back or the procedure is retired or rolled back."
        ),
        url=reverse("reviews:ops_agent", args=[agent.name]),
        agent=agent,
    )


@receiver(metric_warning, dispatch_uid="reviews.notify_metric_warning")
def _on_metric_warning(sender, version_id: int, message: str, **kwargs):
    version = ProcedureVersion.objects.filter(pk=version_id).select_related("procedure__agent").first()
    if version is None:
        return
    agent = version.procedure.agent
    users = list(agent_admins(agent, version.procedure_id)) + list(procedure_approvers(agent, version.procedure_id))
    notification_send(
        users=users,
        kind=NotificationKind.METRIC_WARNING,
        message=message,
        url=reverse("reviews:ops_version_metrics", args=[version.pk]),
        agent=agent,
    )
