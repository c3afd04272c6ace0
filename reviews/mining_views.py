"""An agent's mining pages: its capture settings (the agent's admins change them; every signed-in
member of the library sees them) and its mining runs with their reports (every intent, what
happened to it and why).

Access: anonymous → sign-in; an agent that does not exist → 404; a POST by someone who does not
hold manage_agent on the agent → 403.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import NoReverseMatch, reverse

from library.mining_configuration import LABELS, agent_capture_settings_update, capture_settings_snapshot
from library.models import Agent, MiningRun
from library.permissions import user_can_manage_agent

from .eval_views import signed_in


class CaptureSettingsForm(forms.Form):
    auto_capture_enabled = forms.BooleanField(
        required=False, label=LABELS["auto_capture_enabled"],
        help_text="Off by default: scheduled mining runs only for agents whose admins switch it on.",
    )
    min_tool_calls = forms.IntegerField(min_value=1, max_value=100, label=LABELS["min_tool_calls"],
                                        help_text="Sessions with fewer tool calls (think not counted) are not mined.")
    support_threshold = forms.IntegerField(min_value=1, max_value=100_000, label=LABELS["support_threshold"],
                                           help_text="Repeated trials of one task count once.")
    significance_level = forms.FloatField(min_value=0.0001, max_value=0.5, label=LABELS["significance_level"],
                                          help_text="A candidate is proposed only when its tool order is credibly better than the failed sessions', "
                                                    "corrected for the number of skeletons tested.")
    backtest_share = forms.FloatField(min_value=0, max_value=0.5, label=LABELS["backtest_share"],
                                      help_text="The newest share of each intent's sessions is not mined; every candidate is tested on it.")


def _agent(request: HttpRequest, name: str) -> Agent:
    return get_object_or_404(Agent.objects.visible_to(request.user), name=name)


@signed_in
def agent_capture_settings(request: HttpRequest, agent: str) -> HttpResponse:
    agent_obj = _agent(request, agent)
    can_manage = user_can_manage_agent(request.user, agent_obj)
    if request.method == "POST" and not can_manage:
        raise PermissionDenied("Only the agent's admins change its capture settings.")
    form = CaptureSettingsForm(request.POST or None, initial=capture_settings_snapshot(agent_obj))
    if request.method == "POST" and form.is_valid():
        try:
            agent_capture_settings_update(agent=agent_obj, user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            messages.success(request, f"Capture settings of {agent_obj.name} saved.")
            return redirect("reviews:agent_capture_settings", agent=agent_obj.name)
    snapshot = capture_settings_snapshot(agent_obj)
    shown = [(LABELS[k], ("on" if v else "off") if isinstance(v, bool) else v) for k, v in snapshot.items()]
    return render(request, "reviews/mining/capture_settings.html", {"agent": agent_obj, "form": form, "can_manage": can_manage, "shown": shown})


@signed_in
def mining_runs(request: HttpRequest, agent: str) -> HttpResponse:
    agent_obj = _agent(request, agent)
    runs = MiningRun.objects.filter(agent=agent_obj).select_related("started_by").order_by("-started_at", "-id")[:50]
    return render(request, "reviews/mining/runs.html", {"agent": agent_obj, "runs": runs})


def _version_url(entry: dict[str, Any]) -> str | None:
    version = entry.get("version")
    if not isinstance(version, dict) or not version.get("pk"):
        return None
    try:
        return reverse("reviews:version", args=[version["pk"]])
    except NoReverseMatch:
        return None


def _statistics_line(test: Any) -> str:
    if not isinstance(test, dict):
        return ""
    lift = test.get("lift")
    lift_text = "∞" if lift == "inf" else (f"{lift:.2f}" if isinstance(lift, (int, float)) else "n/a")
    low, high = test.get("liftLow"), test.get("liftHigh")
    interval = f"{low if low is not None else 0:.2f}–" + (f"{high:.2f}" if isinstance(high, (int, float)) else "∞")
    return (
        f"{test.get('resolved')} of {test.get('resolvedOf')} resolved vs {test.get('failed')} of {test.get('failedOf')} failed tasks; "
        f"lift {lift_text} (95 % {interval}), adjusted p = {test.get('pAdjusted', 1):.2g}"
    )


def _backtest_line(back: Any) -> str:
    if not isinstance(back, dict):
        return ""
    followers, others = back.get("followers") or {}, back.get("others") or {}
    return (
        f"backtest on {back.get('heldBackSessions')} held-back sessions: {followers.get('count')} of {followers.get('of')} followers "
        f"vs {others.get('count')} of {others.get('of')} others succeeded — {back.get('verdict')}"
    )


@signed_in
def mining_run(request: HttpRequest, pk: int) -> HttpResponse:
    run_obj = get_object_or_404(MiningRun.objects.select_related("agent"), pk=pk, agent__in=Agent.objects.visible_to(request.user))
    agent_obj = run_obj.agent
    report = []
    for entry in run_obj.report or []:
        report.append({
            **entry,
            "version_url": _version_url(entry),
            "statistics": _statistics_line(entry.get("skeletonTest")),
            "backtest_line": _backtest_line(entry.get("backtest")),
        })
    return render(request, "reviews/mining/run.html", {"agent": agent_obj, "run": run_obj, "report": report})
