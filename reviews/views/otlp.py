"""The ops page's OTLP panel: an agent's spans waiting to become sessions, and the sessions whose
storing failed (retrying with back-off, or dead-lettered), with a retry for the agent's admins
(library/ingest/otlp_failures.py; docs/operations.md "OTLP sessions that fail").

Access as the rest of the ops pages: who may not see the agent gets 404, who may see but not manage
it 403 from the retry."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from library.ingest import otlp_failures
from library.ingest.otlp import sessions_flush
from library.models import Agent, OtlpFlushFailure, OtlpSpan
from library.permissions import user_can_manage_agent

from ..access import get_agent_for_user, signed_in


def otlp_panel(agent: Agent, user) -> dict:
    """What the panel shows: spans waiting, sessions retrying and dead-lettered, a failing flush."""
    failures = otlp_failures.failures_for([agent])
    return {
        "can_retry": user_can_manage_agent(user, agent),
        "waiting_spans": OtlpSpan.objects.filter(agent=agent, state=OtlpSpan.State.PENDING).count(),
        "retrying": [f for f in failures if f.session_id and f.state == OtlpFlushFailure.State.RETRYING],
        "dead": [f for f in failures if f.state == OtlpFlushFailure.State.DEAD],
        "agent_flush": next((f for f in failures if not f.session_id), None),
    }


@require_POST
@signed_in
def ops_otlp_retry(request: HttpRequest, agent: str, pk: int) -> HttpResponse:
    """Puts a dead-lettered session back among the waiting ones and flushes the agent at once."""
    agent_obj = get_agent_for_user(request, agent, for_="manage")
    failure = get_object_or_404(OtlpFlushFailure.objects.select_related("agent"), pk=pk, agent=agent_obj)
    try:
        otlp_failures.session_retry(failure=failure, user=request.user)
    except otlp_failures.RetryRefused as exc:
        messages.error(request, str(exc))
    except PermissionDenied:
        raise
    else:
        result = sessions_flush(agent=agent_obj)
        if failure.session_id in result.stored or failure.session_id in result.duplicate:
            messages.success(request, f"OTLP session {failure.session_id} stored.")
        elif failure.session_id in result.refused:
            messages.warning(
                request, f"OTLP session {failure.session_id} refused: {result.refused[failure.session_id]}"
            )
        elif failure.session_id in result.failed:
            messages.error(
                request,
                f"OTLP session {failure.session_id} failed again ({result.failed[failure.session_id]}); "
                "it is retried with back-off.",
            )
        else:
            messages.success(request, f"OTLP session {failure.session_id} waits again for the next flush.")
    return redirect(reverse("reviews:ops_agent", args=[agent_obj.name]) + "#otlp")
