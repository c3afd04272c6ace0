from django.urls import path

from . import views

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
]
