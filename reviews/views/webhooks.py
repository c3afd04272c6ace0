"""An agent's outgoing webhooks (admins of the agent only): the list with a form to add one, each
webhook's page with its settings, the delivery log, "send test", secret rotation and deletion.
The secret is shown once, in the response to the POST that made it, and never again."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import OuterRef, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from ..access import get_agent_for_user, get_webhook_for_user, signed_in
from ..forms import WebhookForm, add_service_errors
from ..models import Webhook, WebhookDelivery
from ..webhooks import webhook_create, webhook_delete, webhook_rotate_secret, webhook_send_test, webhook_update

LOG_ROWS = 50


@require_http_methods(["GET", "POST"])
@signed_in
def webhook_list(request: HttpRequest, agent: str) -> HttpResponse:
    target = get_agent_for_user(request, agent, for_="manage")
    form = WebhookForm(request.POST or None, initial={"body_format": Webhook.BodyFormat.JSON, "is_active": True})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            webhook, secret = webhook_create(
                agent=target,
                user=request.user,
                name=data["name"],
                url=data["url"],
                events=data["events"],
                body_format=data["body_format"],
            )
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            if not data["is_active"]:
                webhook = webhook_update(
                    webhook=webhook,
                    user=request.user,
                    name=webhook.name,
                    url=webhook.url,
                    events=webhook.events,
                    body_format=webhook.body_format,
                    is_active=False,
                )
            # no redirect: the secret is in this response only
            return _detail(request, webhook, secret=secret, status=201)
    latest = WebhookDelivery.objects.filter(webhook=OuterRef("pk")).order_by("-created_at", "-id")
    webhooks = (
        Webhook.objects.filter(agent=target)
        .order_by("name", "id")
        .annotate(
            last_status=Subquery(latest.values("status")[:1]),
            last_code=Subquery(latest.values("response_code")[:1]),
            last_at=Subquery(latest.values("created_at")[:1]),
        )
    )
    return render(
        request,
        "reviews/webhooks/list.html",
        {"agent": target, "webhooks": webhooks, "form": form, "tab": "webhooks"},
        status=400 if request.method == "POST" else 200,
    )


def _detail(
    request: HttpRequest, webhook: Webhook, *, form: WebhookForm | None = None, secret: str = "", status: int = 200
) -> HttpResponse:
    form = form or WebhookForm(
        initial={
            "name": webhook.name,
            "url": webhook.url,
            "events": webhook.events,
            "body_format": webhook.body_format,
            "is_active": webhook.is_active,
        }
    )
    deliveries = webhook.deliveries.all()[:LOG_ROWS]
    return render(
        request,
        "reviews/webhooks/detail.html",
        {
            "agent": webhook.agent,
            "webhook": webhook,
            "form": form,
            "secret": secret,
            "deliveries": deliveries,
            "tab": "webhooks",
        },
        status=status,
    )


@require_http_methods(["GET", "POST"])
@signed_in
def webhook_detail(request: HttpRequest, agent: str, pk: int) -> HttpResponse:
    webhook = get_webhook_for_user(request, agent, pk)
    if request.method == "POST":
        form = WebhookForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                webhook = webhook_update(webhook=webhook, user=request.user, **data)
            except ValidationError as exc:
                add_service_errors(form, exc)
            else:
                messages.success(request, f"Webhook {webhook.name} saved.")
                return redirect("reviews:webhook_detail", agent=webhook.agent.name, pk=webhook.pk)
        return _detail(request, webhook, form=form, status=400)
    return _detail(request, webhook)


@require_POST
@signed_in
def webhook_test(request: HttpRequest, agent: str, pk: int) -> HttpResponse:
    webhook = get_webhook_for_user(request, agent, pk)
    delivery = webhook_send_test(webhook=webhook, user=request.user)
    messages.info(request, f"Test delivery {delivery.delivery_id} queued; its result shows in the log below.")
    return redirect("reviews:webhook_detail", agent=webhook.agent.name, pk=webhook.pk)


@require_POST
@signed_in
def webhook_rotate(request: HttpRequest, agent: str, pk: int) -> HttpResponse:
    webhook = get_webhook_for_user(request, agent, pk)
    webhook, secret = webhook_rotate_secret(webhook=webhook, user=request.user)
    return _detail(request, webhook, secret=secret)


@require_POST
@signed_in
def webhook_remove(request: HttpRequest, agent: str, pk: int) -> HttpResponse:
    webhook = get_webhook_for_user(request, agent, pk)
    name, agent_name = webhook.name, webhook.agent.name
    webhook_delete(webhook=webhook, user=request.user)
    messages.success(request, f"Webhook {name} deleted.")
    return redirect("reviews:webhook_list", agent=agent_name)
