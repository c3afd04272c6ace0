from django.urls import path

from . import agent_tools, views

app_name = "reviews"

urlpatterns = [
    path("queue/", views.queue, name="queue"),
    path("agents/<str:agent>/tools/", agent_tools.agent_tools, name="agent_tools"),
    path("refused-at-load/", agent_tools.refused_at_load, name="refused_at_load"),
]
