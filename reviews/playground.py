"""The selection playground on an agent's pages: what the agent would receive for a typed task."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from library import serving
from library.models import Agent
from library.permissions import user_is_reviewer

MAX_TASK_CHARS = 8000  # as the select endpoint
ROWS = 50


def weights_text(config) -> str:
    weights = config.weights()
    return " + ".join(f"{weight:g} × {name}" for name, weight in weights.items() if weight)


@login_required
def agent_playground(request: HttpRequest, agent: str) -> HttpResponse:
    """GET only, reads only: reviewers type a task (and an intent) and see the ranking, the
    eligibility gate with its reasons and the exact block, from the same code as the API."""
    target = get_object_or_404(Agent.objects.visible_to(request.user), name=agent)
    if not user_is_reviewer(request.user):
        raise PermissionDenied("The selection playground is for reviewers.")
    task = request.GET.get("task", "").strip()
    intent = request.GET.get("intent", "").strip() or None
    intents = list(target.intents.order_by("name").values_list("name", flat=True))
    result = error = None
    if task:
        if len(task) > MAX_TASK_CHARS:
            error = f"The task is longer than {MAX_TASK_CHARS} characters."
        elif intent and intent not in intents:
            error = f"{target.name} has no intent {intent!r}."
        else:
            result = serving.explain_for_agent(agent=target, task=task, intent=intent)
    total = len(result["ranking"]) if result else 0
    if result:
        result["ranking"] = result["ranking"][:ROWS]
    config = serving._ranker().config
    return render(
        request,
        "reviews/agents/playground.html",
        {
            "agent": target,
            "task": task,
            "intent": intent or "",
            "intents": intents,
            "result": result,
            "error": error,
            "total": total,
            "truncated": total > ROWS,
            "cap": target.injection_cap,
            "max_chars": serving.injection_max_chars(),
            "max_task": MAX_TASK_CHARS,
            "config": config,
            "weights_text": weights_text(config),
        },
    )
