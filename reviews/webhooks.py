"""Outgoing webhooks: per agent, chosen events POSTed as JSON to an http(s) URL.

Each delivery is signed so the receiver can tell it came from procmem and was not replayed:

    X-Procmem-Event:      version.approved
    X-Procmem-Delivery:   <uuid, the same on every attempt; drop duplicates by it>
    X-Procmem-Timestamp:  <unix seconds when this attempt was sent>
    X-Procmem-Signature:  sha256=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>

The receiver recomputes the HMAC over the raw body bytes with the webhook's secret, compares it in
constant time and refuses timestamps older than a few minutes (docs/operations.md, "Webhooks").

Flow: the library's signals (sent after their transactions commit) reach the receivers at the end
of this module; `webhooks_dispatch` writes one WebhookDelivery row per subscribed webhook and queues
`reviews.webhook_deliver` on commit; the task calls `webhook_delivery_attempt` and retries with
exponential backoff (PROCMEM_WEBHOOK_BACKOFF_SECONDS doubling, PROCMEM_WEBHOOK_MAX_ATTEMPTS in all).
Delivery is at least once: a worker lost mid-request may send the same delivery again.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from celery import signature
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.db.models import F
from django.dispatch import receiver
from django.urls import reverse
from django.utils import timezone

from library import signals
from library.models import Agent, AuditEvent, EvalRun, ProcedureVersion
from library.permissions import user_can_manage_agent
from library.services import audit

from . import outbound
from .models import SUBSCRIBABLE_EVENTS, Webhook, WebhookDelivery, WebhookEvent
from .signals import metric_warning

DELIVER_TASK = "reviews.webhook_deliver"
SIGNATURE_HEADER = "X-Procmem-Signature"
TIMESTAMP_HEADER = "X-Procmem-Timestamp"
MAX_NAME_CHARS = 100
MAX_URL_CHARS = 500
EXCERPT_CHARS = 500
_url_validator = URLValidator(schemes=["http", "https"])


# ---------------------------------------------------------------------------------------------- signing


def signature_for(*, secret: str, timestamp: int, body: bytes) -> str:
    """The X-Procmem-Signature value of one attempt."""
    mac = hmac.new(secret.encode("utf-8"), str(timestamp).encode("ascii") + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def signature_valid(
    *,
    secret: str,
    timestamp_header: str,
    signature_header: str,
    body: bytes,
    tolerance_seconds: int = 300,
    now: float | None = None,
) -> bool:
    """What a receiver does (written here once so the tests and the docs agree): the timestamp is
    recent, and the signature matches in constant time."""
    try:
        timestamp = int(timestamp_header)
    except (TypeError, ValueError):
        return False
    if abs((now if now is not None else time.time()) - timestamp) > tolerance_seconds:
        return False
    expected = signature_for(secret=secret, timestamp=timestamp, body=body)
    return hmac.compare_digest(expected, signature_header or "")


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


# ---------------------------------------------------------------------------------------------- bodies


def _site(path: str) -> str:
    return f"{settings.PROCMEM_BASE_URL}{path}"


def delivery_body(delivery: WebhookDelivery) -> bytes:
    """The exact bytes POSTed: the procmem JSON envelope, or Slack's {"text": …}."""
    payload = delivery.payload
    if delivery.webhook.body_format == Webhook.BodyFormat.SLACK:
        link = payload.get("url") or ""
        text = f"[procmem · {payload.get('agent', '')}] {payload.get('text', '')}"
        if link.startswith(("http://", "https://")):
            text += f" <{link}|Open in procmem>"
        body: dict[str, Any] = {"text": text}
    else:
        body = {"id": str(delivery.delivery_id), **payload}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode("utf-8")


def _version_data(version: ProcedureVersion) -> dict[str, Any]:
    return {
        "procedure": version.procedure.key,
        "version": version.number,
        "versionId": version.pk,
        "status": version.status,
    }


# ---------------------------------------------------------------------------------------------- managing webhooks


def _url_shape_problem(url: str) -> str | None:
    """What the URL validator lets through and a delivery cannot use: a port out of range, or a user
    and password (shown on the webhook's page and sent in clear over http; sign with the secret)."""
    parts = urlsplit(url)
    try:
        port = parts.port  # None when the URL names none; ValueError past 65535
    except ValueError:
        port = 0
    if port is not None and not 1 <= port <= 65535:
        return f"{url!r} has a port outside 1 to 65535."
    if parts.username is not None or parts.password is not None:
        return "A webhook URL may not carry a user or password; receivers check the signature instead."
    return None


def _clean(*, name: Any, url: Any, events: Any, body_format: Any) -> dict[str, Any]:
    errors: dict[str, str] = {}
    name = (name or "").strip() if isinstance(name, str) else ""
    if not name:
        errors["name"] = "A webhook needs a name."
    elif len(name) > MAX_NAME_CHARS:
        errors["name"] = f"At most {MAX_NAME_CHARS} characters."
    url = (url or "").strip() if isinstance(url, str) else ""
    if len(url) > MAX_URL_CHARS:
        errors["url"] = f"At most {MAX_URL_CHARS} characters."
    else:
        try:
            _url_validator(url)
        except ValidationError:
            errors["url"] = f"{url!r} is not an http:// or https:// URL."
        else:
            problem = _url_shape_problem(url) or outbound.destination_problem(url)
            if problem:
                errors["url"] = problem
    allowed = {e.value for e in SUBSCRIBABLE_EVENTS}
    if not isinstance(events, (list, tuple)) or not events:
        errors["events"] = "Choose at least one event."
    else:
        unknown = [e for e in events if e not in allowed]
        if unknown:
            errors["events"] = f"Unknown event {unknown[0]!r}; choose from {', '.join(sorted(allowed))}."
    if body_format not in Webhook.BodyFormat.values:
        errors["body_format"] = f"Unknown body format {body_format!r}."
    if errors:
        raise ValidationError(errors)
    ordered = [e.value for e in SUBSCRIBABLE_EVENTS if e.value in set(events)]
    return {"name": name, "url": url, "events": ordered, "body_format": body_format}


def _snapshot(webhook: Webhook) -> dict[str, Any]:
    # never the secret
    return {
        "webhook": webhook.pk,
        "name": webhook.name,
        "url": webhook.url,
        "events": list(webhook.events),
        "body_format": webhook.body_format,
        "is_active": webhook.is_active,
    }


def _require_manage(user, agent: Agent) -> None:
    if not user_can_manage_agent(user, agent):
        raise PermissionDenied(f"Only the admins of {agent.name} may change its webhooks.")


def webhook_create(
    *, agent: Agent, user, name: str, url: str, events: list[str], body_format: str = Webhook.BodyFormat.JSON
) -> tuple[Webhook, str]:
    """Creates a webhook with a fresh secret. Returns (webhook, secret): the caller shows the secret
    once; pages never show it again (rotate to get a new one)."""
    _require_manage(user, agent)
    cleaned = _clean(name=name, url=url, events=events, body_format=body_format)
    secret = new_secret()
    with transaction.atomic():
        webhook = Webhook.objects.create(agent=agent, secret=secret, created_by=user, **cleaned)
        audit(
            action=AuditEvent.Action.SETTINGS,
            actor=user,
            agent=agent,
            reason=f"Webhook {webhook.name!r} created",
            after=_snapshot(webhook),
        )
    return webhook, secret


def webhook_update(
    *, webhook: Webhook, user, name: str, url: str, events: list[str], body_format: str, is_active: bool
) -> Webhook:
    _require_manage(user, webhook.agent)
    cleaned = _clean(name=name, url=url, events=events, body_format=body_format)
    with transaction.atomic():
        locked = Webhook.objects.select_for_update().select_related("agent").get(pk=webhook.pk)
        before = _snapshot(locked)
        for field, value in {**cleaned, "is_active": bool(is_active)}.items():
            setattr(locked, field, value)
        after = _snapshot(locked)
        if after == before:
            return locked
        locked.save()
        audit(
            action=AuditEvent.Action.SETTINGS,
            actor=user,
            agent=locked.agent,
            reason=f"Webhook {locked.name!r} changed",
            before=before,
            after=after,
        )
    return locked


def webhook_rotate_secret(*, webhook: Webhook, user) -> tuple[Webhook, str]:
    """A new secret at once (the old one stops verifying); returned to be shown once."""
    _require_manage(user, webhook.agent)
    secret = new_secret()
    with transaction.atomic():
        locked = Webhook.objects.select_for_update().select_related("agent").get(pk=webhook.pk)
        locked.secret = secret
        locked.save(update_fields=["secret"])
        audit(
            action=AuditEvent.Action.SETTINGS,
            actor=user,
            agent=locked.agent,
            reason=f"Webhook {locked.name!r}: secret rotated",
            after={"webhook": locked.pk},
        )
    return locked, secret


def webhook_delete(*, webhook: Webhook, user) -> None:
    _require_manage(user, webhook.agent)
    with transaction.atomic():
        locked = Webhook.objects.select_for_update().select_related("agent").get(pk=webhook.pk)
        before = _snapshot(locked)
        agent = locked.agent
        locked.delete()
        audit(
            action=AuditEvent.Action.SETTINGS,
            actor=user,
            agent=agent,
            reason=f"Webhook {before['name']!r} deleted",
            before=before,
        )


# ---------------------------------------------------------------------------------------------- dispatching


def _queue(delivery_ids: list[int]) -> None:
    for delivery_id in delivery_ids:
        # by name: reviews.tasks imports this module
        task = signature(DELIVER_TASK, args=[delivery_id])
        transaction.on_commit(task.delay, robust=True)


def webhooks_dispatch(
    *,
    agent_id: int,
    event: str,
    text: str,
    url: str = "",
    data: dict[str, Any] | None = None,
    webhooks: Iterable[Webhook] | None = None,
) -> list[WebhookDelivery]:
    """One delivery per active webhook of the agent that subscribed to `event`, each queued after
    commit. `text` is the one-line human summary (the Slack body); `data` the event's fields."""
    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None:
        return []
    if webhooks is None:
        webhooks = [w for w in Webhook.objects.filter(agent=agent, is_active=True) if event in w.events]
    payload = {
        "event": event,
        "agent": agent.name,
        "createdAt": timezone.now().isoformat().replace("+00:00", "Z"),
        "text": text,
        "url": _site(url) if url else "",
        "data": data or {},
    }
    with transaction.atomic():
        deliveries = WebhookDelivery.objects.bulk_create(
            [WebhookDelivery(webhook=w, event=event, delivery_id=uuid.uuid4(), payload=payload) for w in webhooks]
        )
        _queue([d.pk for d in deliveries])
    return deliveries


def webhook_send_test(*, webhook: Webhook, user) -> WebhookDelivery:
    """A "webhook.test" delivery to this webhook only (even if it is switched off)."""
    _require_manage(user, webhook.agent)
    (delivery,) = webhooks_dispatch(
        agent_id=webhook.agent_id,
        event=WebhookEvent.TEST,
        webhooks=[webhook],
        text=f"Test delivery from procmem for {webhook.agent.name}, sent by {user.get_username()}.",
        url=reverse("reviews:webhook_detail", args=[webhook.agent.name, webhook.pk]),
        data={"webhook": webhook.name},
    )
    return delivery


# ---------------------------------------------------------------------------------------------- delivering


@dataclass(frozen=True)
class AttemptOutcome:
    status: str
    retry_in: float | None = None  # seconds until the next attempt, when one is due


_opener = outbound.opener()  # public addresses only (reviews/outbound.py), no redirects, no proxy


def backoff_seconds(attempts: int) -> float:
    """Delay before attempt `attempts + 1`: the base, doubled after each failed attempt."""
    return settings.PROCMEM_WEBHOOK_BACKOFF_SECONDS * (2 ** max(attempts - 1, 0))


def webhook_delivery_attempt(*, delivery_id: int) -> AttemptOutcome:
    """One HTTP attempt of a pending delivery, recorded on its row. A delivery that is no longer
    pending (delivered, or given up) is left alone, so a redelivered task sends nothing."""
    claimed = WebhookDelivery.objects.filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING).update(
        attempts=F("attempts") + 1, last_attempt_at=timezone.now(), next_attempt_at=None
    )
    if not claimed:
        return AttemptOutcome(status="not pending")
    delivery = WebhookDelivery.objects.select_related("webhook__agent").get(pk=delivery_id)
    body = delivery_body(delivery)
    timestamp = int(time.time())
    request = urllib.request.Request(
        delivery.webhook.url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": "procmem-webhooks/1",
            "X-Procmem-Event": delivery.event,
            "X-Procmem-Delivery": str(delivery.delivery_id),
            TIMESTAMP_HEADER: str(timestamp),
            SIGNATURE_HEADER: signature_for(secret=delivery.webhook.secret, timestamp=timestamp, body=body),
        },
    )
    code: int | None = None
    excerpt = error = ""
    refused = False
    started = time.monotonic()
    try:
        with _opener.open(request, timeout=settings.PROCMEM_WEBHOOK_TIMEOUT_SECONDS) as response:
            code = response.status
            excerpt = response.read(EXCERPT_CHARS).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        code = exc.code
        try:
            excerpt = exc.read(EXCERPT_CHARS).decode("utf-8", "replace")
        except OSError:
            excerpt = ""
        error = f"HTTP {exc.code}"
    except (OSError, ValueError) as exc:  # refused, DNS, timeout, TLS, a local address
        reason = getattr(exc, "reason", exc)
        refused = isinstance(reason, outbound.DestinationRefused)
        error = (f"refused: {reason}" if refused else f"{type(exc).__name__}: {exc}")[:EXCERPT_CHARS]
    duration_ms = (time.monotonic() - started) * 1000
    ok = code is not None and 200 <= code < 300
    now = timezone.now()
    fields: dict[str, Any] = {
        "response_code": code,
        "response_excerpt": excerpt[:EXCERPT_CHARS],
        "error": error,
        "duration_ms": duration_ms,
    }
    retry_in = None
    if ok:
        fields.update(status=WebhookDelivery.Status.SUCCEEDED, finished_at=now)
    elif refused or delivery.attempts >= settings.PROCMEM_WEBHOOK_MAX_ATTEMPTS:  # a refused address stays refused
        fields.update(status=WebhookDelivery.Status.FAILED, finished_at=now)
    else:
        retry_in = backoff_seconds(delivery.attempts)
        fields.update(next_attempt_at=now + timedelta(seconds=retry_in))
    WebhookDelivery.objects.filter(pk=delivery.pk).update(**fields)
    return AttemptOutcome(status=fields.get("status", WebhookDelivery.Status.PENDING), retry_in=retry_in)


def webhook_delivery_give_up(*, delivery_id: int, reason: str) -> None:
    """The task failed outside an attempt (time limit, lost broker): mark the delivery failed."""
    WebhookDelivery.objects.filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING).update(
        status=WebhookDelivery.Status.FAILED,
        error=reason[:EXCERPT_CHARS],
        finished_at=timezone.now(),
        next_attempt_at=None,
    )


# ---------------------------------------------------------------------------------------------- receivers
# The library's signals arrive after their transactions committed; each receiver writes deliveries
# (in its own transaction) and queues them on its commit.


def _subscribed(agent_id: int, event: str) -> bool:
    return any(
        event in events
        for events in Webhook.objects.filter(agent_id=agent_id, is_active=True).values_list("events", flat=True)
    )


@receiver(signals.candidates_created, dispatch_uid="reviews.webhook_candidates_created")
def _on_candidates_created(sender, agent_id: int, version_ids: list[int], mining_run_id: int | None = None, **kwargs):
    if not version_ids or not _subscribed(agent_id, WebhookEvent.CANDIDATE_CREATED):
        return
    versions = list(
        ProcedureVersion.objects.filter(pk__in=version_ids).select_related("procedure").order_by("procedure__key")
    )
    names = ", ".join(f"{v.procedure.key} v{v.number}" for v in versions[:5]) + (" …" if len(versions) > 5 else "")
    webhooks_dispatch(
        agent_id=agent_id,
        event=WebhookEvent.CANDIDATE_CREATED,
        text=f"{len(versions)} new candidate{'s' if len(versions) != 1 else ''} wait for review: {names}",
        url=reverse("reviews:queue"),
        data={"candidates": [_version_data(v) for v in versions], "miningRunId": mining_run_id},
    )


@receiver(signals.eval_run_finished, dispatch_uid="reviews.webhook_eval_run_finished")
def _on_eval_run_finished(sender, run_id: int, **kwargs):
    run = EvalRun.objects.filter(pk=run_id).select_related("version__procedure").first()
    if run is None or not _subscribed(run.version.procedure.agent_id, WebhookEvent.EVAL_FINISHED):
        return
    version = run.version
    outcome = run.verdict or run.state
    webhooks_dispatch(
        agent_id=version.procedure.agent_id,
        event=WebhookEvent.EVAL_FINISHED,
        text=f"Eval run {run.pk} for {version.procedure.key} v{version.number} finished: {outcome}.",
        url=reverse("reviews:eval_detail", args=[run.pk]),
        data={**_version_data(version), "evalRunId": run.pk, "state": run.state, "verdict": run.verdict},
    )


STATUS_EVENTS = {
    "approve": (WebhookEvent.VERSION_APPROVED, "approved"),
    "retire": (WebhookEvent.VERSION_RETIRED, "retired"),
    "rollback": (WebhookEvent.VERSION_ROLLED_BACK, "rolled back to"),
}


@receiver(signals.version_status_changed, dispatch_uid="reviews.webhook_version_status_changed")
def _on_version_status_changed(
    sender, version_id: int, action: str, user_id: int | None = None, reason: str = "", **kwargs
):
    if action not in STATUS_EVENTS:
        return
    version = ProcedureVersion.objects.filter(pk=version_id).select_related("procedure").first()
    event, verb = STATUS_EVENTS[action]
    if version is None or not _subscribed(version.procedure.agent_id, event):
        return

    who = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    by = f" by {who.get_username()}" if who else ""
    text = (
        f"{version.procedure.key} {verb} v{version.number}{by}"
        if action == "rollback"
        else f"{version.procedure.key} v{version.number} {verb}{by}"
    )
    webhooks_dispatch(
        agent_id=version.procedure.agent_id,
        event=event,
        text=text + (f": {reason}" if reason else "."),
        url=reverse("reviews:procedure", args=[version.procedure_id]),
        data={**_version_data(version), "by": who.get_username() if who else None, "reason": reason},
    )


@receiver(signals.version_refused_at_load, dispatch_uid="reviews.webhook_version_refused")
def _on_version_refused(sender, version_id: int, missing_tools: list[str], **kwargs):
    version = ProcedureVersion.objects.filter(pk=version_id).select_related("procedure__agent").first()
    if version is None or not _subscribed(version.procedure.agent_id, WebhookEvent.REFUSED_AT_LOAD):
        return
    webhooks_dispatch(
        agent_id=version.procedure.agent_id,
        event=WebhookEvent.REFUSED_AT_LOAD,
        text=(
            f"{version.procedure.key} v{version.number} is refused at load: the agent no longer has "
            f"{', '.join(missing_tools) or 'a required tool'}."
        ),
        url=reverse("reviews:ops_agent", args=[version.procedure.agent.name]),
        data={**_version_data(version), "missingTools": list(missing_tools)},
    )


@receiver(metric_warning, dispatch_uid="reviews.webhook_metric_warning")
def _on_metric_warning(sender, version_id: int, message: str, **kwargs):
    version = ProcedureVersion.objects.filter(pk=version_id).select_related("procedure").first()
    if version is None or not _subscribed(version.procedure.agent_id, WebhookEvent.METRIC_WARNING):
        return
    webhooks_dispatch(
        agent_id=version.procedure.agent_id,
        event=WebhookEvent.METRIC_WARNING,
        text=message,
        url=reverse("reviews:ops_version_metrics", args=[version.pk]),
        data={**_version_data(version), "message": message},
    )
