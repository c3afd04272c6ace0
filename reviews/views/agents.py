"""The agent tool-list page, the agent settings page and its eval-runner page, the refused-at-load overview, the agent's API
tokens, the selection playground, and an agent's mining runs with their reports (every intent, what
happened to it and why). The capture settings are part of the agent settings page (its admins change
them); every signed-in member sees them on the mining runs page.

The tool list decides which ACTIVE procedures agents receive: a version whose requiredTools are not
all in the list is refused at load (library/serving/active_set.py). Admins of the agent (`manage_agent`)
change it here or through PUT /api/v1/agents/{agent}/tools; both call services.agent_set_tools.

The selection playground shows reviewers what an agent would receive for a typed task: the ranking
with every retriever's score and rank, the eligibility gate and why, and the exact block — from
selection.explain_for_agent, the same index, ranker, renderer and caps as the select endpoint.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from library import embeddings, formatting
from library.agents.rate_limits import rate_limits_table
from library.agents.settings import agent_settings_snapshot, agent_settings_update
from library.api.tokens import token_create, token_is_live, token_revoke
from library.demo import DEMO_AGENT, DEMO_PLAYGROUND_TASKS
from library.mining.mining_runs import mining_report_propose
from library.models import Agent, ApiToken, MiningRun, ProcedureVersion, Status
from library.permissions import agents_managed_by, user_can_manage_agent, user_is_reviewer
from library.selectors import session_sources_for_agent
from library.services import agent_set_tools
from library.serving import active_set as serving
from library.serving import load_refusals, selection

from ..access import get_agent_for_user, require_reviewer, signed_in, visible_agents
from ..forms import (
    AgentEvalSettingsForm,
    AgentSettingsForm,
    FamilyRuleFormSet,
    RedactionPatternFormSet,
    TokenForm,
    add_service_errors,
)
from ..key_words import figure_items, key_words, value_words


def _parse_tools(text: str) -> list[str]:
    # one per line, or comma-separated; blank lines ignored
    return [item.strip() for line in text.splitlines() for item in line.split(",") if item.strip()]


@require_http_methods(["GET", "POST"])
@signed_in
def agent_tools(request: HttpRequest, agent: str) -> HttpResponse:
    target = get_agent_for_user(request, agent, for_="manage")
    tools_text = "\n".join(target.tools)
    reason = ""
    if request.method == "POST":
        tools_text = request.POST.get("tools", "")
        reason = request.POST.get("reason", "").strip()
        try:
            updated = agent_set_tools(agent=target, tools=_parse_tools(tools_text), user=request.user, reason=reason)
        except ValidationError as exc:
            messages.error(request, "; ".join(exc.messages))
        else:
            # the load-time check runs now, so the refusals (and their one alert) show at once
            served = serving.active_set_for_agent(agent=updated, using="default")
            refused = len(served.data["refused"])
            messages.success(
                request,
                f"Tool list of {updated.name} saved."
                + (
                    f" {refused} ACTIVE procedure{'s are' if refused != 1 else ' is'} refused at load."
                    if refused
                    else ""
                ),
            )
            return redirect("reviews:agent_tools", agent=updated.name)
    served = serving.active_set_for_agent(agent=target, using="default")
    needed: dict[str, list[str]] = {}
    for version in ProcedureVersion.objects.filter(procedure__agent=target, status=Status.ACTIVE).select_related(
        "procedure"
    ):
        for tool in version.required_tools:
            needed.setdefault(tool, []).append(f"{version.procedure.key} v{version.number}")
    return render(
        request,
        "reviews/agent_tools.html",
        {
            "agent": target,
            "tools_text": tools_text,
            "reason": reason,
            "refused": served.data["refused"],
            "served_count": len(served.data["procedures"]),
            "needed": sorted(needed.items()),
            "changes": target.tool_changes.select_related("changed_by")[:20],
        },
    )


@require_GET
@signed_in
def refused_at_load(request: HttpRequest) -> HttpResponse:
    """Every unresolved refusal on the agents the user manages (what the banner counts)."""
    agents = agents_managed_by(request.user)
    return render(
        request, "reviews/refused_at_load.html", {"refusals": load_refusals.unresolved_refusals(agents=agents)}
    )


# ----------------------------------------------------------------------------------- selection playground


PLAYGROUND_MAX_TASK_CHARS = 8000  # as the select endpoint
PLAYGROUND_ROWS = 50


def _weights_text(config, backend, *, coding: bool = False) -> str:
    """The order's sum as the ranker computes it (Index.totals): the weighted normalised scores, the
    third model's weakest clause when the backend has one (RoutedBackend with three models; no term
    with two or one, whatever third_model_weight says), the amount term, and coding procedures' area."""
    terms = [f"{weight:g} × {name}" for name, weight in config.weights().items() if weight]
    third = getattr(backend, "third", None)
    if third is not None and config.third_model_weight:
        terms.append(f"{config.third_model_weight:g} × {third.name} (the third model, its weakest clause)")
    if config.amount_weight:
        terms.append(f"{config.amount_weight:g} × amount (1 when the task's amount is in a range the procedure names)")
    if coding and config.area_weight:
        terms.append(f"for coding procedures {config.area_weight:g} × area / (area + 1)")
    return " + ".join(terms)


@require_GET
@signed_in
def agent_playground(request: HttpRequest, agent: str) -> HttpResponse:
    """Reads only: a reviewer types a task (and an intent) and sees what the agent would receive."""
    target = get_agent_for_user(request, agent, for_="review")
    task = request.GET.get("task", "").strip()
    intent = request.GET.get("intent", "").strip() or None
    intents = list(target.intents.order_by("name").values_list("name", flat=True))
    result = error = None
    if task:
        if len(task) > PLAYGROUND_MAX_TASK_CHARS:
            error = f"The task is longer than {PLAYGROUND_MAX_TASK_CHARS} characters."
        elif intent and intent not in intents:
            error = f"{target.name} has no intent {intent!r}."
        else:
            try:
                result = selection.explain_for_agent(agent=target, task=task, intent=intent)
            except serving.EmbeddingsNotReady as exc:
                error = str(exc)
    total = len(result["ranking"]) if result else 0
    if result:
        result["ranking"] = result["ranking"][:PLAYGROUND_ROWS]
    config = serving.ranker_config()
    backend = embeddings.backend()
    third = getattr(backend, "third", None)
    return render(
        request,
        "reviews/agents/playground.html",
        {
            "agent": target,
            "task": task,
            "intent": intent or "",
            "intents": intents,
            "examples": _playground_examples(target),
            "result": result,
            "error": error,
            "total": total,
            "truncated": total > PLAYGROUND_ROWS,
            "cap": target.injection_cap,
            "max_chars": selection.injection_max_chars(),
            "max_task": PLAYGROUND_MAX_TASK_CHARS,
            "config": config,
            # the third model's column: the term the Order line names (none without it or its weight)
            "third_model": third.name if third is not None and config.third_model_weight else None,
            "weights_text": _weights_text(
                config,
                backend,
                coding=bool(result) and any("area" in c["scores"] for c in result["ranking"]),
            ),
        },
    )


# --------------------------------------------------------------------------------------- API tokens


def _token_rows(agent: Agent) -> list[dict]:
    now = timezone.now()
    rows = []
    for token in agent.tokens.select_related("created_by").order_by("-created_at"):
        state = "revoked" if token.revoked_at else ("live" if token_is_live(token, now=now) else "expired")
        rows.append({"token": token, "state": state})
    return rows


@require_http_methods(["GET", "POST"])
@signed_in
def agent_tokens(request: HttpRequest, agent: str) -> HttpResponse:
    """Agent admins (`manage_agent`) create (shown once), list and revoke the agent's API tokens."""
    target = get_agent_for_user(request, agent, for_="manage")
    form = TokenForm()
    created = created_raw = None
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "create":
            form = TokenForm(request.POST)
            if form.is_valid():
                days = form.cleaned_data["expires_in_days"]
                try:
                    created, created_raw = token_create(
                        agent=target,
                        scope=form.cleaned_data["scope"],
                        name=form.cleaned_data["name"],
                        user=request.user,
                        expires_at=timezone.now() + timedelta(days=days) if days else None,
                    )
                except ValidationError as exc:
                    form.add_error(None, exc)
                else:
                    form = TokenForm()
        elif action == "revoke":
            token = get_object_or_404(ApiToken, pk=_int_or_404(request.POST.get("token")), agent=target)
            token_revoke(token=token, user=request.user)
            messages.success(request, f"Revoked {token.prefix}…: agents using it are refused from now on.")
            return redirect("reviews:agent_tokens", agent=target.name)
        else:
            return HttpResponseBadRequest("action must be create or revoke")
    response = render(
        request,
        "reviews/agent_tokens.html",
        {"agent": target, "form": form, "tokens": _token_rows(target), "created": created, "created_raw": created_raw},
        status=400 if request.method == "POST" and created is None else 200,
    )
    if created_raw:
        response["Cache-Control"] = "no-store"  # the raw token must not stay in any cache
    return response


def _int_or_404(value) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise Http404("no such token") from None
    if not 0 < number < 2**63:
        raise Http404("no such token")
    return number


# --------------------------------------------------------------------------------------------- agent settings


def _settings_saved(
    request: HttpRequest,
    form,
    target: Agent,
    changes: dict,
    *,
    reason: str = "",
    tools: list[str] | None = None,
    what: str,
    page: str,
) -> HttpResponse | None:
    """Saves a settings form's changes (and the tool list, when given) in one transaction through
    the services; the redirect back to `page`, or None with the refusal on the form."""
    try:
        with transaction.atomic():
            if tools is not None:
                target = agent_set_tools(agent=target, tools=tools, user=request.user, reason=reason)
            updated = agent_settings_update(agent=target, user=request.user, changes=changes, reason=reason)
    except ValidationError as exc:
        add_service_errors(form, exc)
        return None
    messages.success(request, f"{what} of {updated.name} saved.")
    return redirect(page, agent=updated.name)


@require_http_methods(["GET", "POST"])
@signed_in
def agent_settings(request: HttpRequest, agent: str) -> HttpResponse:
    """Agent settings (admins of the agent): tools, switches, injection cap, review target, redaction
    patterns and the capture (mining) settings; the eval runner has its own page, linked from here.
    One submit may change the tools and the rest: each through its own service, in one transaction,
    each audited."""
    target = get_agent_for_user(request, agent, for_="manage")
    initial = {
        **agent_settings_snapshot(target),
        "tools": "\n".join(target.tools),
        "environments": " ".join(target.environments),
    }
    form = AgentSettingsForm(request.POST or None, initial=initial)
    patterns = RedactionPatternFormSet(
        request.POST or None, initial=list(target.redaction_patterns or []), prefix="pattern"
    )
    # the stored rules fill the rows of the page; a POST's rows are the whole new list (with the
    # stored rules as initial data, a posted row equal to one would count as unchanged and be dropped)
    family_rules = FamilyRuleFormSet(
        request.POST or None,
        initial=None if request.method == "POST" else list(target.coding_family_rules or []),
        prefix="family_rule",
    )
    # every part is validated (not short-circuited), so one submit shows every error at once
    valid = [form.is_valid(), patterns.is_valid(), family_rules.is_valid()]
    if request.method == "POST" and all(valid):
        data = dict(form.cleaned_data)
        reason = data.pop("reason", "").strip()
        tools = _parse_tools(data.pop("tools") or "")
        data["redaction_patterns"] = patterns.patterns()
        data["coding_family_rules"] = family_rules.rules()
        saved = _settings_saved(
            request, form, target, data, reason=reason, tools=tools, what="Settings", page="reviews:agent_settings"
        )
        if saved:
            return saved
        _pattern_errors_to_rows(form, patterns)
    return render(
        request,
        "reviews/agent_settings.html",
        {
            "agent": target,
            "form": form,
            "patterns": patterns,
            "family_rules": family_rules,
            "patterns_json": json.dumps(target.redaction_patterns or [], indent=2, ensure_ascii=False),
            "sections": _settings_sections(form),
            "tab": "settings",
            "runner": target.get_eval_runner_display(),
            "rate_limits": rate_limits_table(target),
            "session_sources": session_sources_for_agent(target),
        },
        status=400 if request.method == "POST" else 200,
    )


# The settings form's fields by what they are about; each group is one section of the page. A field
# not named here (a new setting) lands in the last section, so nothing becomes uneditable.
_SECTIONS = (
    ("serving", "Serving", ("procedural_memory_enabled", "injection_cap", "environments", "review_target_hours")),
    ("tools", "Tools", ("tools",)),
    (
        "mining",
        "Mining (capture)",
        ("auto_capture_enabled", "min_tool_calls", "support_threshold", "significance_level", "backtest_share"),
    ),
    ("labels", "Label rule", ("complaint_window_days", "closed_by_customer_resolves", "min_rating")),
    ("coding", "Coding agents", ("coding_min_traces",)),  # and the task family rules' rows
)


def _settings_sections(form) -> list[tuple[str, str, list]]:
    """(id, title, bound fields) per section, the API limits and any field not placed last."""
    placed = {name for _, _, names in _SECTIONS for name in names} | {"reason"}
    sections = [(key, title, [form[name] for name in names if name in form.fields]) for key, title, names in _SECTIONS]
    limits = [form[name] for name in form.fields if name.startswith("limit_")]
    others = [form[name] for name in form.fields if name not in placed and not name.startswith("limit_")]
    sections.append(("limits", "API limits", limits))
    if others:
        sections.append(("other", "Other settings", others))
    return sections


def _pattern_errors_to_rows(form, patterns) -> None:
    """A service error naming one pattern ("redaction_patterns[2]: …") goes to that row's regex field;
    others stay above the form. The formset's rows were already checked one by one, so this is rare."""
    for message in form.errors.pop("__all__", []) if "__all__" in form.errors else []:
        match = re.match(r"redaction_patterns\[(\d+)\]: (.*)", message)
        kept = [f for f in patterns.forms if f.cleaned_data.get("label") and not f.cleaned_data.get("DELETE")]
        if match and int(match.group(1)) < len(kept):
            kept[int(match.group(1))].add_error("regex", match.group(2))
        else:
            form.add_error(None, message)


@require_http_methods(["GET", "POST"])
@signed_in
def agent_eval_settings(request: HttpRequest, agent: str) -> HttpResponse:
    """The agent's eval-replay settings (holders of manage_agent). The API key is never shown back."""
    agent = get_agent_for_user(request, agent, for_="manage")
    form = AgentEvalSettingsForm(request.POST or None, initial=agent_settings_snapshot(agent))
    key_field = form.fields["model_api_key"]
    key_field.help_text = f"{'A key is stored.' if agent.model_api_key else 'No key is stored.'} {key_field.help_text}"
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        key = data.pop("model_api_key")
        clear = data.pop("clear_model_api_key")
        data["tool_schemas"] = data.get("tool_schemas") or {}
        key_change = {"model_api_key": ""} if clear else ({"model_api_key": key} if key else {})
        saved = _settings_saved(
            request, form, agent, {**data, **key_change}, what="Eval settings", page="reviews:agent_eval_settings"
        )
        if saved:
            return saved
    return render(
        request,
        "reviews/evals/settings.html",
        {"agent": agent, "form": form, "key_set": bool(agent.model_api_key)},
        status=400 if request.method == "POST" else 200,  # a POST gets here only when it was refused
    )


# ---------------------------------------------------------------------------------------------- mining


@require_GET
@signed_in
def agent_capture_settings(request: HttpRequest, agent: str) -> HttpResponse:
    """The old address of the capture settings, now part of the agent settings page: its admins are
    sent there, every other member to the mining runs, which show the settings."""
    agent_obj = get_agent_for_user(request, agent, for_="view")
    if user_can_manage_agent(request.user, agent_obj):
        return redirect(reverse("reviews:agent_settings", args=[agent_obj.name]) + "#agent-settings")
    return redirect("reviews:mining_runs", agent=agent_obj.name)


@require_GET
@signed_in
def mining_runs(request: HttpRequest, agent: str) -> HttpResponse:
    agent_obj = get_agent_for_user(request, agent, for_="view")
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
    # one side empty: no lift to compute; say which side is missing, not "vs 0 of 0 … lift n/a"
    if not test.get("failedOf"):
        return f"{test.get('resolved')} of {test.get('resolvedOf')} resolved tasks follow it; no failed task to compare with"
    if not test.get("resolvedOf"):
        return (
            f"{test.get('failed')} of {test.get('failedOf')} failed tasks follow it; no resolved task to compare with"
        )
    lift = test.get("lift")
    lift_text = "n/a" if lift is None else formatting.ratio(lift)
    interval = formatting.interval(test.get("liftLow"), test.get("liftHigh"))
    return (
        f"{test.get('resolved')} of {test.get('resolvedOf')} resolved vs {test.get('failed')} of {test.get('failedOf')} failed tasks; "
        f"lift {lift_text} ({interval}), {formatting.p_value(test.get('pAdjusted', 1), 'adjusted p')}"
    )


def _within_line(gate: Any) -> str:
    """The gate: followers vs other sessions within tasks."""
    if not isinstance(gate, dict) or not gate.get("followers"):
        return ""
    followers, others = gate["followers"], gate.get("others") or {}
    if not others.get("of"):
        return (
            f"within tasks: {followers.get('count')} of {followers.get('of')} sessions that follow it succeeded; "
            "no other session of the same tasks to compare with"
        )
    ratio = gate.get("riskRatio")
    ratio_text = "n/a" if ratio is None else formatting.ratio(ratio)
    return (
        f"within tasks: {followers.get('count')} of {followers.get('of')} sessions that follow it vs {others.get('count')} of "
        f"{others.get('of')} others succeeded; risk ratio {ratio_text} ({formatting.interval(gate.get('low'), lower_only=True)}), "
        f"{formatting.p_value(gate.get('pAdjusted', 1), 'adjusted p')}"
    )


def _backtest_line(back: Any) -> str:
    if not isinstance(back, dict):
        return ""
    followers, others = back.get("followers") or {}, back.get("others") or {}
    if not others.get("of"):
        return (
            f"backtest on {back.get('heldBackSessions')} held-back sessions: {followers.get('count')} of "
            f"{followers.get('of')} followers succeeded, no other held-back session to compare with — {back.get('verdict')}"
        )
    return (
        f"backtest on {back.get('heldBackSessions')} held-back sessions: {followers.get('count')} of {followers.get('of')} followers "
        f"vs {others.get('count')} of {others.get('of')} others succeeded — {back.get('verdict')}"
    )


@require_GET
@signed_in
def mining_run(request: HttpRequest, pk: int) -> HttpResponse:
    """One run's report: every intent of the agent, what happened to it and why."""
    run_obj = get_object_or_404(MiningRun.objects.select_related("agent"), pk=pk, agent__in=visible_agents(request))
    agent_obj = run_obj.agent
    report = []
    for entry in run_obj.report or []:
        report.append(
            {
                **entry,
                "version_url": _version_url(entry),
                "figure_items": figure_items(entry.get("figures") or {}),
                "within_line": _within_line(entry.get("withinTask")),
                "statistics": _statistics_line(entry.get("skeletonTest")),
                "backtest_line": _backtest_line(entry.get("backtest")),
            }
        )
    return render(
        request,
        "reviews/mining/run.html",
        {
            "agent": agent_obj,
            "run": run_obj,
            "report": report,
            "can_propose": user_is_reviewer(request.user),
            "count_items": figure_items(run_obj.counts or {}),
            "parameter_items": [f"{key_words(k)} {value_words(v)}" for k, v in (run_obj.parameters or {}).items()],
        },
    )


@require_http_methods(["POST"])
@signed_in
def mining_run_propose(request: HttpRequest, pk: int) -> HttpResponse:
    """A reviewer proposes a group the run reported but did not propose (its order was not credible),
    with a reason: it becomes a CANDIDATE with the run's evidence and the reason on it."""
    run_obj = get_object_or_404(MiningRun.objects.select_related("agent"), pk=pk, agent__in=visible_agents(request))
    require_reviewer(request)
    intent = request.POST.get("intent", "")
    try:
        version = mining_report_propose(
            run=run_obj, intent_name=intent, user=request.user, reason=request.POST.get("reason", "")
        )
    except ValidationError as exc:
        messages.error(request, f"Not proposed ({intent or 'no intent given'}): " + "; ".join(exc.messages))
        return redirect(reverse("reviews:mining_run", args=[run_obj.pk]) + "#run-report")
    messages.success(request, f"Proposed {version}; it waits in the queue for review, an eval run and an approver.")
    return redirect("reviews:version", pk=version.pk)


def _playground_examples(agent) -> list[dict[str, str]]:
    """The demo agent's playground offers tasks in other languages than its library's (its
    customers write German and Japanese; library/demo/seed.py)."""

    if agent.name != DEMO_AGENT:
        return []
    return [{"language": language, "task": task, "expected": key} for language, task, key in DEMO_PLAYGROUND_TASKS]
