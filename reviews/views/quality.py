"""The quality figures of the metrics pages as JSON, for the review UI and operations scripts:
session-authenticated (a signed-in user who may operate the agent; others get 404, as on the
pages). The figures come from the rollup (reviews.metrics.quality_report); see docs/operations.md."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from ..access import get_agent_for_user, get_version_for_user, signed_in
from ..metrics import reads
from ..metrics.quality_report import agent_quality_report, version_quality_report
from ..models import MetricsState
from .metrics import _window_days


def _refreshed_at(agent_id: int) -> str | None:
    at = MetricsState.objects.filter(agent_id=agent_id).values_list("refreshed_at", flat=True).first()
    return at.isoformat() if at else None


def _response(request: HttpRequest, agent_id: int, report_for) -> JsonResponse:
    """`report_for(start, end)` is the report of the window `?days=` asks for."""
    days = _window_days(request)
    report = report_for(*reads.window(days))
    return JsonResponse({**report.to_dict(), "windowDays": days, "refreshedAt": _refreshed_at(agent_id)})


@require_GET
@signed_in
def ops_metrics_json(request: HttpRequest, agent: str) -> JsonResponse:
    agent_obj = get_agent_for_user(request, agent, for_="operate")
    return _response(
        request,
        agent_obj.pk,
        lambda start, end: agent_quality_report(
            agent_obj, reads.versions_with_metrics(agent_obj, start, end), start, end, with_charts=False
        ),
    )


@require_GET
@signed_in
def ops_version_metrics_json(request: HttpRequest, pk: int) -> JsonResponse:
    version = get_version_for_user(request, pk, for_="operate")
    return _response(
        request,
        version.procedure.agent_id,
        lambda start, end: version_quality_report(version, start, end, with_chart=False),
    )
