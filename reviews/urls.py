from django.urls import path

from . import agent_tools, views

app_name = "reviews"

urlpatterns = [
    path("queue/", views.queue, name="queue"),
    path("agents/<str:agent>/tools/", agent_tools.agent_tools, name="agent_tools"),
    path("refused-at-load/", agent_tools.refused_at_load, name="refused_at_load"),
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
    path("versions/<int:version_pk>/evals/start/", eval_views.eval_start, name="eval_start"),
    path("evals/<int:pk>/", eval_views.eval_detail, name="eval_detail"),
    path("evals/<int:pk>/progress/", eval_views.eval_progress, name="eval_progress"),
    path("evals/<int:pk>/cancel/", eval_views.eval_cancel, name="eval_cancel"),
    path("evals/<int:pk>/resume/", eval_views.eval_resume, name="eval_resume"),
]
