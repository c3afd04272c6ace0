"""The agent-facing JSON API, versioned under /api/v1/ and /api/v2/ (docs/api.md "Serving agents:
the agent API"). Both versions have the same endpoints; v2's served procedures carry their evidence's
scalar facts only. v1's route names are the app's own (api:active_set), v2's are namespaced
(api:v2:active_set)."""

from django.urls import include, path

from . import ingest, mcp_endpoint, otlp, views

app_name = "api"


def _routes(api_version: str) -> list:
    served = {"api_version": api_version}
    return [
        path("health", views.health, served, name="health"),
        path("sessions", ingest.sessions_ingest, name="sessions"),
        path("sessions/outcomes", ingest.outcomes_ingest, name="outcomes"),
        path("openapi.json", views.openapi, served, name="openapi"),
        path(
            "agents/<str:agent>/",
            include(
                [
                    path("procedures", views.active_set, served, name="active_set"),
                    path("select", views.select, served, name="select"),
                    path("file-index", views.file_index, served, name="file_index"),
                    path("tools", views.agent_tools, name="agent_tools"),
                    path("mcp", mcp_endpoint.mcp, served, name="mcp"),
                ]
            ),
        ),
    ]


urlpatterns = [
    path("v1/", include(_routes("v1"))),
    path("v2/", include((_routes("v2"), "v2"))),
    # OTLP/HTTP: exporters append /v1/traces to OTEL_EXPORTER_OTLP_ENDPOINT=<procmem>/api/otlp
    path("otlp/v1/traces", otlp.traces, name="otlp_traces"),
]
