from django.urls import path

from .views import agents, cases, evals, metrics, notifications, ops, procedures, queue, versions, webhooks

app_name = "reviews"

urlpatterns = [
    # the review workspace
    path("queue/", queue.queue, name="queue"),
    path("queue/reject/", queue.queue_bulk_reject, name="queue_bulk_reject"),
    path("versions/<int:pk>/", versions.version_detail, name="version"),
    path("versions/<int:pk>/edit/", versions.version_edit, name="version_edit"),
    path("versions/<int:pk>/comment/", versions.version_comment, name="version_comment"),
    path("versions/<int:pk>/reject/", versions.version_reject, name="version_reject"),
    path("versions/<int:pk>/approve/", versions.version_approve, name="version_approve"),
    path("versions/<int:pk>/eval/", versions.version_eval_panel, name="version_eval_panel"),
    path("versions/<int:pk>/eval/start/", versions.version_eval_start, name="version_eval_start"),
    path("procedures/new/", procedures.procedure_new, name="procedure_new"),
    path("procedures/<int:pk>/", procedures.procedure_detail, name="procedure"),
    path("procedures/<slug:agent>/<str:key>/", procedures.procedure_by_key, name="procedure_by_key"),
    # eval runs and regression cases
    path("evals/<int:pk>/", evals.eval_detail, name="eval_detail"),
    path("evals/<int:pk>/progress/", evals.eval_progress, name="eval_progress"),
    path("evals/<int:pk>/cancel/", evals.eval_cancel, name="eval_cancel"),
    path("evals/<int:pk>/resume/", evals.eval_resume, name="eval_resume"),
    path("agents/<str:agent>/eval-settings/", evals.agent_eval_settings, name="agent_eval_settings"),
    path("agents/<str:agent>/cases/", cases.case_list, name="case_list"),
    path("agents/<str:agent>/cases/new/", cases.case_create, name="case_create"),
    path("agents/<str:agent>/cases/import/", cases.case_import, name="case_import"),
    path("agents/<str:agent>/cases/from-session/", cases.case_from_session, name="case_from_session"),
    path("cases/<int:pk>/edit/", cases.case_edit, name="case_edit"),
    # agents' tool lists
    path("agents/<str:agent>/tools/", agents.agent_tools, name="agent_tools"),
    path("agents/<str:agent>/tokens/", agents.agent_tokens, name="agent_tokens"),
    path("refused-at-load/", agents.refused_at_load, name="refused_at_load"),
    path("agents/<str:agent>/settings/", agents.agent_settings, name="agent_settings"),
    # an agent's outgoing webhooks
    path("agents/<str:agent>/webhooks/", webhooks.webhook_list, name="webhook_list"),
    path("agents/<str:agent>/webhooks/<int:pk>/", webhooks.webhook_detail, name="webhook_detail"),
    path("agents/<str:agent>/webhooks/<int:pk>/test/", webhooks.webhook_test, name="webhook_test"),
    path("agents/<str:agent>/webhooks/<int:pk>/rotate/", webhooks.webhook_rotate, name="webhook_rotate"),
    path("agents/<str:agent>/webhooks/<int:pk>/delete/", webhooks.webhook_remove, name="webhook_remove"),
    # operating the library
    path("ops/", ops.ops_index, name="ops_index"),
    path("ops/agents/<str:agent>/", ops.ops_agent, name="ops_agent"),
    path("ops/agents/<str:agent>/procedures/<str:key>/", ops.ops_procedure, name="ops_procedure"),
    path("ops/versions/<int:pk>/retire/", ops.ops_retire, name="ops_retire"),
    path("ops/versions/<int:pk>/rollback/", ops.ops_rollback, name="ops_rollback"),
    path("ops/agents/<str:agent>/approvers/", ops.ops_approvers, name="ops_approvers"),
    path("ops/agents/<str:agent>/approvers/grant/", ops.ops_grant, name="ops_grant"),
    path("ops/agents/<str:agent>/approvers/revoke/", ops.ops_revoke, name="ops_revoke"),
    path("ops/audit/", ops.ops_audit, name="ops_audit"),
    path("ops/audit.csv", ops.ops_audit_csv, name="ops_audit_csv"),
    path("ops/agents/<str:agent>/metrics/", metrics.ops_metrics, name="ops_metrics"),
    path("ops/versions/<int:pk>/metrics/", metrics.ops_version_metrics, name="ops_version_metrics"),
    path("notifications/", notifications.notifications, name="notifications"),
    path("notifications/<int:pk>/read/", notifications.notification_read, name="notification_read"),
    path("notifications/read-all/", notifications.notifications_read_all, name="notifications_read_all"),
    path("notifications/preferences/", notifications.notification_preferences, name="notification_preferences"),
]
