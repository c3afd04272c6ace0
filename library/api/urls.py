"""The agent-facing JSON API, versioned under /api/v1/ (docs/api.md "Serving agents: the agent API")."""

from django.urls import include, path

from . import ingest, views

app_name = "api"

urlpatterns = [
    path("v1/health", views.health, name="health"),
    path("v1/sessions", ingest.sessions_ingest, name="sessions"),
    path("v1/openapi.json", views.openapi, name="openapi"),
    path("v1/agents/<str:agent>/", include([
        path("procedures", views.active_set, name="active_set"),
        path("select", views.select, name="select"),
        path("tools", views.agent_tools, name="agent_tools"),
    ])),
]
