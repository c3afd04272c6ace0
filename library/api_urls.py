"""The agent-facing JSON API, versioned under /api/v1/ (see README "Agent API")."""

from django.urls import path

from . import api, api_ingest

app_name = "api"

urlpatterns = [
    path("v1/health", api.health, name="health"),
    path("v1/sessions", api_ingest.sessions_ingest, name="sessions"),
    path("v1/openapi.json", api.openapi, name="openapi"),
    path("v1/agents/<str:agent>/procedures", api.active_set, name="active_set"),
    path("v1/agents/<str:agent>/select", api.select, name="select"),
    path("v1/agents/<str:agent>/tools", api.agent_tools, name="agent_tools"),
]
