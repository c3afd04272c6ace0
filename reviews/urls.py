from django.urls import path

from . import agent_tools, operations, playground, views

app_name = "reviews"

urlpatterns = [
    path("queue/", views.queue, name="queue"),
    path("queue/reject/", views.queue_bulk_reject, name="queue_bulk_reject"),
    path("versions/<int:pk>/", views.version_detail, name="version"),
    path("versions/<int:pk>/edit/", views.version_edit, name="version_edit"),
    path("versions/<int:pk>/comment/", views.version_comment, name="version_comment"),
    path("versions/<int:pk>/reject/", views.version_reject, name="version_reject"),
    path("versions/<int:pk>/approve/", views.version_approve, name="version_approve"),
    path("versions/<int:pk>/eval/", views.version_eval_panel, name="version_eval_panel"),
    path("versions/<int:pk>/eval/start/", views.version_eval_start, name="version_eval_start"),
    path("versions/<int:pk>/eval/<int:run_pk>/cancel/", views.version_eval_cancel, name="version_eval_cancel"),
    path("procedures/new/", views.procedure_new, name="procedure_new"),
    path("procedures/<int:pk>/", views.procedure_detail, name="procedure"),
    path("procedures/<slug:agent>/<str:key>/", views.procedure_by_key, name="procedure_by_key"),
    path("agents/<str:agent>/tools/", agent_tools.agent_tools, name="agent_tools"),
    path("agents/<str:agent>/playground/", playground.agent_playground, name="agent_playground"),
    path("refused-at-load/", agent_tools.refused_at_load, name="refused_at_load"),
    # operating the library (issue 7): reviews/operations.py
    path("ops/", operations.ops_index, name="ops_index"),
    path("ops/agents/<str:agent>/", operations.ops_agent, name="ops_agent"),
    path("ops/agents/<str:agent>/procedures/<str:key>/", operations.ops_procedure, name="ops_procedure"),
    path("ops/versions/<int:pk>/retire/", operations.ops_retire, name="ops_retire"),
    path("ops/versions/<int:pk>/rollback/", operations.ops_rollback, name="ops_rollback"),
    path("ops/versions/<int:pk>/metrics/", operations.ops_version_metrics, name="ops_version_metrics"),
    path("ops/agents/<str:agent>/approvers/", operations.ops_approvers, name="ops_approvers"),
    path("ops/agents/<str:agent>/approvers/grant/", operations.ops_grant, name="ops_grant"),
    path("ops/agents/<str:agent>/approvers/revoke/", operations.ops_revoke, name="ops_revoke"),
    path("ops/agents/<str:agent>/metrics/", operations.ops_metrics, name="ops_metrics"),
    path("ops/audit/", operations.ops_audit, name="ops_audit"),
    path("ops/audit.csv", operations.ops_audit_csv, name="ops_audit_csv"),
    path("notifications/", operations.notifications, name="notifications"),
    path("notifications/<int:pk>/read/", operations.notification_read, name="notification_read"),
    path("notifications/read-all/", operations.notifications_read_all, name="notifications_read_all"),
    path("notifications/preferences/", operations.notification_preferences, name="notification_preferences"),
]

# Regression cases and eval runs (issue 5): reviews/cases.py, reviews/eval_views.py
from . import cases, eval_views  # noqa: E402

urlpatterns += [
    path("agents/<str:agent_name>/cases/", cases.case_list, name="case_list"),
    path("agents/<str:agent_name>/cases/new/", cases.case_create, name="case_create"),
    path("agents/<str:agent_name>/cases/import/", cases.case_import, name="case_import"),
    path("agents/<str:agent_name>/cases/from-session/", cases.case_from_session, name="case_from_session"),
    path("cases/<int:pk>/edit/", cases.case_edit, name="case_edit"),
    path("agents/<str:agent_name>/eval-settings/", eval_views.agent_eval_settings, name="agent_eval_settings"),
    path("evals/<int:pk>/", eval_views.eval_detail, name="eval_detail"),
    path("evals/<int:pk>/progress/", eval_views.eval_progress, name="eval_progress"),
    path("evals/<int:pk>/cancel/", eval_views.eval_cancel, name="eval_cancel"),
    path("evals/<int:pk>/resume/", eval_views.eval_resume, name="eval_resume"),
]
