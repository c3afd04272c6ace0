"""Django's admin for the library: for looking things up. Writes that have a service (status
changes, tool lists, settings, tokens, eval runs) happen on the app's pages, where they are checked
and audited; here those models are read-only. Where the database itself forbids a change (a
version's content, the append-only audit log, a finished eval run) the admin offers none either:
no add, change or delete permission. Secrets (model API keys, token hashes) are never shown."""

from __future__ import annotations

from django.contrib import admin
from django.db import models

from .models import (
    Agent,
    AgentGroupObjectPermission,
    AgentSession,
    AgentToolChange,
    AgentUserObjectPermission,
    ApiToken,
    AuditEvent,
    CodingFileIndex,
    ErasureSweep,
    EvalCaseResult,
    EvalRun,
    HeldOutcome,
    Intent,
    LoadRefusal,
    MiningRun,
    Namespace,
    NamespaceGroupObjectPermission,
    NamespaceUserObjectPermission,
    OtlpFlushFailure,
    OtlpSpan,
    Procedure,
    ProcedureGroupObjectPermission,
    ProcedureRelease,
    ProcedureUserObjectPermission,
    ProcedureVersion,
    RegressionCase,
    Rollout,
    SessionLabel,
    VersionConflict,
    VersionEmbedding,
    VersionTombstone,
)

# URLs without a scheme are read as https (Django 6's default), on every admin form
URL_FIELDS = {models.URLField: {"assume_scheme": "https"}}


class ReadOnlyModelAdmin(admin.ModelAdmin):
    """View only: list, search, filter and the detail page, without add, change or delete."""

    formfield_overrides = URL_FIELDS

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class IntentInline(admin.TabularInline):
    model = Intent
    extra = 0
    fields = ("name", "description")


class EditOnlyModelAdmin(admin.ModelAdmin):
    """Some fields edited here; rows are created (and moved, and granted rights) on the app's audited
    pages and never deleted here, since other rows point at them."""

    formfield_overrides = URL_FIELDS

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Namespace)
class NamespaceAdmin(EditOnlyModelAdmin):
    """Descriptions are edited here; namespaces are created, agents moved and rights granted on the
    namespaces page (audited). A namespace is never deleted here (agents and procedures point at it)."""

    list_display = ("name", "description", "created_at")
    search_fields = ("name", "description")
    readonly_fields = ("name", "created_at")


@admin.register(Agent)
class AgentAdmin(EditOnlyModelAdmin):
    """Description, model and base instruction are edited here; tools, switches, limits and
    redaction patterns on the agent settings page (audited), the eval runner on its own page. Never
    deleted here: that would take its sessions, cases and audit trail with it."""

    list_display = (
        "name",
        "namespace",
        "current_model",
        "procedural_memory_enabled",
        "auto_capture_enabled",
        "injection_cap",
        "support_threshold",
        "eval_runner",
        "created_at",
    )
    list_select_related = ("namespace",)
    list_filter = ("procedural_memory_enabled", "auto_capture_enabled", "eval_runner")
    search_fields = ("name", "description")
    exclude = ("model_api_key",)
    readonly_fields = (
        "name",
        "namespace",
        "tools",
        "procedural_memory_enabled",
        "auto_capture_enabled",
        "injection_cap",
        "support_threshold",
        "redaction_patterns",
        "eval_runner",
        "eval_url",
        "eval_python_path",
        "eval_concurrency",
        "eval_timeout_seconds",
        "model_base_url",
        "model_name",
        "tool_schemas",
        "selects_with_intent",
        "model_drafts_enabled",
        "created_at",
    )
    inlines = [IntentInline]


@admin.register(Intent)
class IntentAdmin(EditOnlyModelAdmin):
    list_display = ("name", "agent", "description")
    list_select_related = ("agent",)
    list_filter = ("agent",)
    search_fields = ("name", "description")
    readonly_fields = ("agent", "name")


@admin.register(AgentToolChange)
class AgentToolChangeAdmin(ReadOnlyModelAdmin):
    list_display = ("agent", "changed_at", "changed_by", "reason")
    list_select_related = ("agent", "changed_by")
    list_filter = ("agent",)
    search_fields = ("reason",)
    date_hierarchy = "changed_at"


@admin.register(Procedure)
class ProcedureAdmin(ReadOnlyModelAdmin):
    list_display = ("key", "agent", "intent", "namespace", "roles", "priority", "confidence", "created_at")
    list_select_related = ("agent", "intent", "namespace")
    list_filter = ("agent", "namespace", "confidence")
    search_fields = ("key",)


@admin.register(ProcedureVersion)
class ProcedureVersionAdmin(ReadOnlyModelAdmin):
    """Content never changes (the database refuses it); status changes only through the lifecycle
    services (approve, reject, retire, roll back) on the review pages."""

    list_display = (
        "procedure",
        "number",
        "status",
        "source",
        "quarantined",
        "approved_by",
        "approved_at",
        "created_at",
    )
    list_select_related = ("procedure", "approved_by")
    list_filter = ("status", "source", "quarantined", "procedure__agent")
    search_fields = ("procedure__key", "applies_when", "content_hash")
    date_hierarchy = "created_at"


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyModelAdmin):
    """Append-only in the database: no UPDATE, no DELETE."""

    list_display = ("at", "action", "actor", "actor_label", "agent", "procedure", "version", "reason")
    list_select_related = ("actor", "agent", "procedure", "version__procedure")
    list_filter = ("action", "agent")
    search_fields = ("reason", "actor_label", "procedure__key", "actor__username")
    date_hierarchy = "at"


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyModelAdmin):
    """The redacted excerpt only: the raw task and tool calls (kept for the retention window, for
    mining and regression cases) are personal data, and admins review too: reviewers never see
    unredacted personal data (docs/redaction.md)."""

    exclude = ("task", "tool_calls")
    list_display = ("session_id", "agent", "intent", "resolved", "escalated", "model", "ended_at", "received_at")
    list_select_related = ("agent", "intent")
    list_filter = ("agent", "resolved", "escalated", "raw_purged", "source_format")
    search_fields = ("session_id", "model")
    date_hierarchy = "ended_at"


@admin.register(SessionLabel)
class SessionLabelAdmin(ReadOnlyModelAdmin):
    """A session's outcome labels as they arrived (library/ingest/outcomes.py, audited there)."""

    list_display = (
        "session",
        "resolved",
        "escalated",
        "rating",
        "complaint",
        "closed_by_customer",
        "at",
        "source",
        "via",
    )
    list_select_related = ("session",)
    list_filter = ("source",)
    search_fields = ("session__session_id", "source")


@admin.register(OtlpSpan)
class OtlpSpanAdmin(ReadOnlyModelAdmin):
    """Spans waiting to become sessions (library/ingest/otlp.py): ids and state only. Their attributes
    and events are the raw, unredacted messages and tool arguments, which no reviewer (admins
    included) sees; the session they become is redacted."""

    # the span's name and the refusal note are text from the sender (a note may quote a value)
    exclude = ("attributes", "events", "name", "note")
    list_display = ("trace_id", "span_id", "agent", "state", "received_at", "session_id")
    list_select_related = ("agent",)
    list_filter = ("state", "agent")
    search_fields = ("trace_id", "span_id", "session_id")


@admin.register(OtlpFlushFailure)
class OtlpFlushFailureAdmin(ReadOnlyModelAdmin):
    """OTLP sessions whose storing failed (library/ingest/otlp_failures.py): retried on the ops page
    or with `manage.py otlp_dead_letters --retry`."""

    list_display = ("agent", "session_id", "state", "attempts", "error", "last_failed_at", "next_attempt_at")
    list_select_related = ("agent",)
    list_filter = ("state", "agent")


@admin.register(HeldOutcome)
class HeldOutcomeAdmin(ReadOnlyModelAdmin):
    """Outcomes waiting for their OTLP session to be stored (library/ingest/otlp_outcomes.py)."""

    list_display = ("agent", "session_id", "via", "received_at", "hold_until")
    list_select_related = ("agent",)
    list_filter = ("agent",)


@admin.register(ErasureSweep)
class ErasureSweepAdmin(ReadOnlyModelAdmin):
    """What each erasure rewrote and flagged (library/services/erasure_sweep.py); fingerprints are keyed digests, never text."""

    exclude = ("fingerprints",)
    list_display = ("tombstone", "started_at", "finished_at")
    list_select_related = ("tombstone",)


@admin.register(MiningRun)
class MiningRunAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "agent", "state", "started_by", "started_at", "finished_at")
    list_select_related = ("agent", "started_by")
    list_filter = ("state", "agent")
    search_fields = ("error",)


@admin.register(CodingFileIndex)
class CodingFileIndexAdmin(ReadOnlyModelAdmin):
    """Rebuilt by each coding mining run of the agent (library/services/task_files.py); the files and
    definitions are shown as stored (repository-relative paths and identifiers only)."""

    list_display = ("agent", "repository", "sessions", "built_at", "mining_run")
    list_select_related = ("agent", "mining_run")
    list_filter = ("agent",)
    search_fields = ("repository",)


@admin.register(RegressionCase)
class RegressionCaseAdmin(ReadOnlyModelAdmin):
    """Edited on the agent's regression-case pages (audited)."""

    list_display = ("id", "name", "agent", "intent", "is_active", "external_id", "updated_at")
    list_select_related = ("agent", "intent")
    list_filter = ("agent", "is_active")
    search_fields = ("name", "task", "external_id")


class ReadOnlyInline(admin.TabularInline):
    """Rows of a parent shown on its page, each field read-only, none added, changed or deleted."""

    extra = 0
    can_delete = False

    def get_readonly_fields(self, request, obj=None):
        return self.fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class EvalCaseResultInline(ReadOnlyInline):
    model = EvalCaseResult
    fields = ("case", "arm", "state", "passed", "attempts", "error", "duration_ms")
    show_change_link = True


@admin.register(EvalRun)
class EvalRunAdmin(ReadOnlyModelAdmin):
    """A finished run never changes (the database refuses it) and a running one belongs to its
    Celery tasks; cancel and resume are on the eval page."""

    list_display = (
        "id",
        "version",
        "kind",
        "environment",
        "state",
        "verdict",
        "cases_done",
        "cases_total",
        "errors",
        "runner",
        "started_by",
        "created_at",
    )
    list_select_related = ("version__procedure", "started_by")
    list_filter = ("state", "verdict", "kind", "environment", "runner")
    search_fields = ("version__procedure__key", "content_hash")
    inlines = [EvalCaseResultInline]


@admin.register(EvalCaseResult)
class EvalCaseResultAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "run", "case", "arm", "state", "passed", "attempts", "duration_ms")
    list_select_related = ("run", "case")
    list_filter = ("arm", "state", "passed")
    search_fields = ("error",)


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyModelAdmin):
    list_display = ("name", "agent", "scope", "prefix", "created_by", "created_at", "last_used_at", "revoked_at")
    list_select_related = ("agent", "created_by")
    list_filter = ("scope", "agent")
    search_fields = ("name", "prefix")
    exclude = ("token_hash",)


@admin.register(LoadRefusal)
class LoadRefusalAdmin(ReadOnlyModelAdmin):
    list_display = ("version", "missing_tools", "created_at")
    list_select_related = ("version__procedure",)
    search_fields = ("version__procedure__key",)
    date_hierarchy = "created_at"


@admin.register(VersionEmbedding)
class VersionEmbeddingAdmin(ReadOnlyModelAdmin):
    list_display = ("version", "model_key", "dimensions", "created_at")
    list_select_related = ("version__procedure",)
    list_filter = ("model_key",)
    exclude = ("vector",)
    date_hierarchy = "created_at"


class ObjectPermissionAdmin(ReadOnlyModelAdmin):
    """Granted and revoked on the approver-rights and namespaces pages (audited)."""

    list_display = ("content_object", "permission", "__holder__")
    list_select_related = ("content_object", "permission")
    list_filter = ("permission",)

    @admin.display(description="held by")
    def __holder__(self, obj) -> str:
        return str(getattr(obj, "user", None) or getattr(obj, "group", None))


for _model in (
    ProcedureUserObjectPermission,
    ProcedureGroupObjectPermission,
    AgentUserObjectPermission,
    AgentGroupObjectPermission,
    NamespaceUserObjectPermission,
    NamespaceGroupObjectPermission,
):
    admin.site.register(_model, ObjectPermissionAdmin)


@admin.register(VersionTombstone)
class VersionTombstoneAdmin(ReadOnlyModelAdmin):
    """What stays of an erased version; the database refuses changing or deleting it."""

    list_display = ("procedure_key", "number", "status_before", "ground", "erased_by", "erased_at")
    list_select_related = ("erased_by",)
    list_filter = ("ground",)
    search_fields = ("procedure_key", "content_hash")


@admin.register(VersionConflict)
class VersionConflictAdmin(ReadOnlyModelAdmin):
    """Written by the conflict scan (library/conflicts.py)."""

    list_display = ("agent", "kind", "version_a", "version_b", "found_at", "cleared_at")
    list_select_related = ("agent", "version_a__procedure", "version_b__procedure")
    list_filter = ("kind", "agent")


@admin.register(ProcedureRelease)
class ProcedureReleaseAdmin(ReadOnlyModelAdmin):
    """Written by approval (staging first) and promotion (library/services/releases.py), audited there."""

    list_display = ("procedure", "environment", "version", "released_by", "released_at")
    list_select_related = ("procedure", "version__procedure", "released_by")
    list_filter = ("environment",)


@admin.register(Rollout)
class RolloutAdmin(ReadOnlyModelAdmin):
    """Started, completed and rolled back on the rollout's page (library/services/releases.py)."""

    list_display = ("procedure", "version", "control_version", "share", "state", "started_by", "started_at", "ended_at")
    list_select_related = ("procedure", "version__procedure", "control_version__procedure", "started_by")
    list_filter = ("state",)
