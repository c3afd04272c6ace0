"""The notification pages: the list, marking read, and each user's choices of what they receive
in the app and by e-mail (reviews.notifications)."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ..access import signed_in
from ..models import Notification, NotificationKind
from ..notifications import notification_mark_read, notification_preferences_set, preferences_for


@require_GET
@signed_in
def notifications(request: HttpRequest) -> HttpResponse:
    rows = Notification.objects.filter(user=request.user).order_by("-created_at", "-id")
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    return render(request, "reviews/ops/notifications.html", {"page": page})


@require_POST
@signed_in
def notification_read(request: HttpRequest, pk: int) -> HttpResponse:
    notification = get_object_or_404(Notification, pk=pk, user=request.user)
    notification_mark_read(user=request.user, notification_ids=[notification.pk])
    if request.POST.get("follow") and notification.url.startswith("/"):
        return redirect(notification.url)
    return redirect("reviews:notifications")


@require_POST
@signed_in
def notifications_read_all(request: HttpRequest) -> HttpResponse:
    count = notification_mark_read(user=request.user)
    messages.success(request, f"Marked {count} notification{'s' if count != 1 else ''} read.")
    return redirect("reviews:notifications")


@require_http_methods(["GET", "POST"])
@signed_in
def notification_preferences(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        notification_preferences_set(
            user=request.user,
            choices={
                kind: (request.POST.get(f"{kind}-in_app") == "on", request.POST.get(f"{kind}-email") == "on")
                for kind in NotificationKind.values
            },
        )
        messages.success(request, "Saved your notification choices.")
        return redirect("reviews:notification_preferences")
    prefs = preferences_for(request.user)
    rows = [(kind, label, prefs[kind]) for kind, label in NotificationKind.choices]
    return render(request, "reviews/ops/preferences.html", {"rows": rows, "has_email": bool(request.user.email)})
