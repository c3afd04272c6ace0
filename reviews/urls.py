from django.urls import path

from . import operations, views

app_name = "reviews"

urlpatterns = [
    path("queue/", views.queue, name="queue"),
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
