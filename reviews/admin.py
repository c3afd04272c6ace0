"""Django's admin for the review side, for looking things up: claims, threads, comments, notifications, the metrics
rollup, metric alerts and webhooks are read-only here (they are written by their services, which
audit and notify); a user's notification preferences may be changed. A webhook's secret is never
shown."""

from __future__ import annotations

from django.contrib import admin

from library.admin import ReadOnlyInline, ReadOnlyModelAdmin

from .models import (
    AgentDayQuality,
    CandidateClaim,
    Comment,
    DemotionProposal,
    ExternalIdentity,
    IntentDayRollup,
    MetricAlert,
    MetricsState,
    Notification,
    NotificationPreference,
    Thread,
    VersionDayQuality,
    VersionDayRollup,
    Webhook,
    WebhookDelivery,
)


@admin.register(Comment)
class CommentAdmin(ReadOnlyModelAdmin):
    list_display = ("version", "author", "created_at")
    list_select_related = ("version__procedure", "author")
    search_fields = ("body", "author__username")


@admin.register(Thread)
class ThreadAdmin(ReadOnlyModelAdmin):
    list_display = ("version", "anchor", "step", "created_by", "created_at", "resolved_by", "resolved_at")
    list_select_related = ("version__procedure", "created_by", "resolved_by")
    list_filter = ("anchor",)


@admin.register(CandidateClaim)
class CandidateClaimAdmin(ReadOnlyModelAdmin):
    list_display = ("version", "assignee", "assigned_by", "claimed_at", "expires_at")
    list_select_related = ("version__procedure", "assignee", "assigned_by")


@admin.register(Notification)
class NotificationAdmin(ReadOnlyModelAdmin):
    list_display = ("user", "kind", "created_at", "read_at", "message")
    list_select_related = ("user",)
    list_filter = ("kind",)
    search_fields = ("message", "user__username")


@admin.register(ExternalIdentity)
class ExternalIdentityAdmin(ReadOnlyModelAdmin):
    """Who signed in through single sign-on, as whom at the provider (written at sign-in)."""

    list_display = ("user", "subject", "issuer", "created_at")
    list_select_related = ("user",)
    search_fields = ("user__username", "subject")


@admin.register(NotificationPreference)
class NotificationPreferenceAdmin(admin.ModelAdmin):
    list_display = ("user", "kind", "in_app", "email")
    list_select_related = ("user",)
    list_filter = ("kind", "in_app", "email")
    search_fields = ("user__username",)


@admin.register(MetricsState)
class MetricsStateAdmin(ReadOnlyModelAdmin):
    list_display = ("agent", "refreshed_until", "refreshed_at", "days_recomputed")
    list_select_related = ("agent",)
    exclude = ("window_p95",)


@admin.register(MetricAlert)
class MetricAlertAdmin(ReadOnlyModelAdmin):
    list_display = ("version", "opened_at", "cleared_at", "message")
    list_select_related = ("version__procedure",)
    list_filter = ("cleared_at", "version__procedure__agent")
    search_fields = ("message",)


class DayRollupAdmin(ReadOnlyModelAdmin):
    """The rollup tables (DayRollup rows), by agent and day."""

    date_hierarchy = "day"
    list_select_related = ("agent",)
    list_filter = ("agent",)


class SessionOutcomesDayAdmin(DayRollupAdmin):
    """The session-outcome rollups (SessionOutcomesDay rows), also by model."""

    list_filter = ("agent", "model")


@admin.register(IntentDayRollup)
class IntentDayRollupAdmin(SessionOutcomesDayAdmin):
    list_display = ("day", "agent", "intent", "model", "sessions", "labelled", "resolved", "bare_sessions")
    list_select_related = ("agent", "intent")


@admin.register(VersionDayRollup)
class VersionDayRollupAdmin(SessionOutcomesDayAdmin):
    list_display = ("day", "agent", "version", "intent", "model", "sessions", "labelled", "resolved")
    list_select_related = ("agent", "version__procedure", "intent")


@admin.register(VersionDayQuality)
class VersionDayQualityAdmin(DayRollupAdmin):
    list_display = (
        "day",
        "agent",
        "version",
        "sessions",
        "checked",
        "followed",
        "required_calls",
        "forbidden_calls",
        "conflicted",
        "stale",
    )
    list_select_related = ("agent", "version__procedure")


@admin.register(AgentDayQuality)
class AgentDayQualityAdmin(DayRollupAdmin):
    list_display = ("day", "agent", "served", "multi", "conflicted", "stale")


class WebhookDeliveryInline(ReadOnlyInline):
    model = WebhookDelivery
    fields = ("created_at", "event", "status", "attempts", "response_code", "error")
    ordering = ("-created_at",)


@admin.register(Webhook)
class WebhookAdmin(ReadOnlyModelAdmin):
    """Managed on the agent's webhook pages (http(s) URLs only, audited, the secret shown once)."""

    list_display = ("name", "agent", "url", "body_format", "is_active", "created_at")
    list_select_related = ("agent",)
    list_filter = ("agent", "is_active", "body_format")
    search_fields = ("name", "url")
    exclude = ("secret",)
    inlines = [WebhookDeliveryInline]


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyModelAdmin):
    list_display = ("created_at", "webhook", "event", "status", "attempts", "response_code", "next_attempt_at")
    list_select_related = ("webhook",)
    list_filter = ("status", "event")
    search_fields = ("delivery_id", "webhook__name")


@admin.register(DemotionProposal)
class DemotionProposalAdmin(ReadOnlyModelAdmin):
    """Proposed by the demotion check; an admin confirms or dismisses it on the app's pages."""

    list_display = ("version", "kind", "state", "created_at", "decided_by", "decided_at")
    list_select_related = ("version__procedure", "decided_by")
    list_filter = ("kind", "state")
