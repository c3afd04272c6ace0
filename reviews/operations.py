"""Operating the library (admins): the active set as each agent sees it, each procedure's versions,
retire and roll back, approver rights, the audit log with its CSV export, metrics per version, and
the notification pages.

Access: the operations pages of an agent are visible to superusers, reviewers and anyone holding an
object permission on the agent or one of its procedures; to everyone else they do not exist (404).
Who may see but not change gets 403 from the action views. Every change goes through a service
(library.services for status changes, reviews.rights for approver rights), which checks the object
permission again under its row lock.
"""

from __future__ import annotations

import csv
import functools
import json
from datetime import date
from typing import Iterator
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import Count, Prefetch, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect
from guardian.core import ObjectPermissionChecker

from library import services
from library.models import (
    Agent,
    AgentGroupObjectPermission,
    AgentUserObjectPermission,
    AuditEvent,
    LoadRefusal,
    Procedure,
    ProcedureGroupObjectPermission,
    ProcedureUserObjectPermission,
    ProcedureVersion,
    Status,
)
from library.permissions import user_can_manage_agent, user_can_manage_procedure, user_is_reviewer
from library.selectors import active_versions_for_agent
from library.serving import missing_tools

from . import charts, metrics, rights
from .models import MetricsState, Notification, NotificationKind
from .notifications import notification_mark_read, notification_preferences_set, preferences_for

AUDIT_PAGE_SIZE = 50
METRIC_WINDOWS = metrics.WINDOWS
SMALL_CHART = 560  # the version page shows its four charts two by two


def ops_login_required(view):
    """login_required that answers an htmx request with a client-side redirect, so a logged-out
    partial swap does not paste the login page into a table."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        if not request.user.is_authenticated:
            if getattr(request, "htmx", False):
                return HttpResponseClientRedirect(f"{reverse('login')}?{urlencode({'next': request.get_full_path()})}")
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapper


# ---------------------------------------------------------------------------------------------- access


def agents_for_operations(user) -> QuerySet[Agent]:
    """Agents whose operations pages the user may see."""
    agents = Agent.objects.visible_to(user)
    if not user.is_authenticated:
        return agents.none()
    if user.is_superuser or user_is_reviewer(user):
        return agents
    groups = user.groups.all()
    held = Agent.objects.filter(
        Q(pk__in=AgentUserObjectPermission.objects.filter(user=user).values("content_object_id"))
        | Q(pk__in=AgentGroupObjectPermission.objects.filter(group__in=groups).values("content_object_id"))
        | Q(procedures__in=ProcedureUserObjectPermission.objects.filter(user=user).values("content_object_id"))
        | Q(procedures__in=ProcedureGroupObjectPermission.objects.filter(group__in=groups).values("content_object_id"))
    )
    # a subquery, not a join: callers annotate counts over procedures, which a join would skew
    return agents.filter(pk__in=held.values("pk"))


def get_agent_for_user(request: HttpRequest, name: str) -> Agent:
    """404 when the agent does not exist or its operations pages are hidden from the user."""
    return get_object_or_404(agents_for_operations(request.user), name=name)


def get_version_for_user(request: HttpRequest, pk: int) -> tuple[ProcedureVersion, bool]:
    """The version (404 when hidden) and whether the user may retire and roll back its procedure."""
    version = get_object_or_404(
        ProcedureVersion.objects.select_related("procedure__agent", "procedure__intent", "approved_by").filter(
            procedure__agent__in=agents_for_operations(request.user)
        ),
        pk=pk,
    )
    return version, user_can_manage_procedure(request.user, version.procedure)


# ---------------------------------------------------------------------------------------------- the active set


def _missing_tools(version: ProcedureVersion, agent: Agent) -> list[str]:
    """The agent API's own load-time check (library.serving), so this page and the JSON agree."""
    return missing_tools(required=list(version.required_tools), available=list(agent.tools))


def served_and_refused(agent: Agent) -> tuple[list[ProcedureVersion], list[tuple[ProcedureVersion, list[str]]]]:
    """The active set as the agent receives it: ACTIVE versions whose required tools the agent has
    (served), and ACTIVE versions refused at load with the tools they miss. Read-only: unlike an
    agent's fetch (serving.active_set_for_agent) looking at this page records no refusal and
    raises no alert."""
    served: list[ProcedureVersion] = []
    refused: list[tuple[ProcedureVersion, list[str]]] = []
    if not agent.procedural_memory_enabled:
        return [], []
    for version in active_versions_for_agent(agent):
        missing = _missing_tools(version, agent)
        if missing:
            refused.append((version, missing))
        else:
            served.append(version)
    return served, refused


@ops_login_required
@require_GET
def ops_index(request: HttpRequest) -> HttpResponse:
    agents = agents_for_operations(request.user).annotate(
        active=Count("procedures__versions", filter=Q(procedures__versions__status=Status.ACTIVE)),
        candidates=Count("procedures__versions", filter=Q(procedures__versions__status=Status.CANDIDATE)),
    )
    agents = list(agents)
    if not (request.user.is_superuser or user_is_reviewer(request.user)) and not agents:
        raise Http404("No agent to operate")
    refused: dict[int, int] = {}
    for version in ProcedureVersion.objects.filter(procedure__agent__in=agents, status=Status.ACTIVE).values(
        "procedure__agent_id", "required_tools"
    ):
        refused.setdefault(version["procedure__agent_id"], 0)
        tools = next(a.tools for a in agents if a.pk == version["procedure__agent_id"])
        if set(version["required_tools"]) - set(tools):
            refused[version["procedure__agent_id"]] += 1
    for agent in agents:
        agent.refused_count = refused.get(agent.pk, 0)
    return render(request, "reviews/ops/index.html", {"agents": agents})


@ops_login_required
@require_GET
def ops_agent(request: HttpRequest, agent: str) -> HttpResponse:
    agent_obj = get_agent_for_user(request, agent)
    served, refused = served_and_refused(agent_obj)
    procedures = list(
        Procedure.objects.filter(agent=agent_obj)
        .select_related("intent")
        .prefetch_related(Prefetch("versions", queryset=ProcedureVersion.objects.order_by("number")))
    )
    checker = ObjectPermissionChecker(request.user)
    checker.prefetch_perms(procedures)
    agent_wide = checker.has_perm("manage_agent_procedures", agent_obj)
    rows = [
        {
            "procedure": p,
            "versions": list(p.versions.all()),
            "can_manage": agent_wide or checker.has_perm("manage_procedure", p),
        }
        for p in procedures
    ]
    refusals = {
        r.version_id: r
        for r in LoadRefusal.objects.filter(version__procedure__agent=agent_obj).order_by("created_at")
    }
    return render(
        request,
        "reviews/ops/agent.html",
        {
            "agent": agent_obj,
            "served": served,
            "refused": [(v, missing, refusals.get(v.pk)) for v, missing in refused],
            "rows": rows,
            "tab": "active",
        },
    )


@ops_login_required
@require_GET
def ops_procedure(request: HttpRequest, agent: str, key: str) -> HttpResponse:
    agent_obj = get_agent_for_user(request, agent)
    procedure = get_object_or_404(Procedure.objects.select_related("intent"), agent=agent_obj, key=key)
    versions = list(
        procedure.versions.select_related("approved_by", "approval_eval_run").order_by("-number")
    )
    for version in versions:
        version.missing_tools = _missing_tools(version, agent_obj)
    events = (
        AuditEvent.objects.filter(procedure=procedure)
        .select_related("actor", "version")
        .order_by("-at", "-id")[:30]
    )
    return render(
        request,
        "reviews/ops/procedure.html",
        {
            "agent": agent_obj,
            "procedure": procedure,
            "versions": versions,
            "active": next((v for v in versions if v.status == Status.ACTIVE), None),
            "can_manage": user_can_manage_procedure(request.user, procedure),
            "events": events,
            "tab": "active",
        },
    )


# ---------------------------------------------------------------------------------------------- retire / roll back


def _status_change(request: HttpRequest, pk: int, *, action: str) -> HttpResponse:
    version, can_manage = get_version_for_user(request, pk)
    if not can_manage:
        raise PermissionDenied(f"You may not {action.replace('_', ' ')} versions of {version.procedure.key}.")
    agent = version.procedure.agent
    current = (
        ProcedureVersion.objects.filter(procedure=version.procedure, status=Status.ACTIVE)
        .select_related("approved_by")
        .first()
    )
    context = {
        "agent": agent,
        "version": version,
        "current": current,
        "missing_tools": _missing_tools(version, agent),
        "reason": "",
        "error": "",
        "tab": "active",
    }
    template = "reviews/ops/confirm_retire.html" if action == "retire" else "reviews/ops/confirm_rollback.html"
    status = 200
    expected = Status.ACTIVE if action == "retire" else Status.RETIRED
    if request.method == "GET" and version.status != expected:
        # a stale link: say so instead of offering a button that can only fail
        context["error"] = (
            f"v{version.number} is {version.get_status_display().lower()}; only "
            f"{'the active version can be retired' if action == 'retire' else 'a retired version can be rolled back to'}."
        )
        context["stale"] = True
    if request.method == "POST":
        reason = request.POST.get("reason", "")
        context["reason"] = reason
        service = services.version_retire if action == "retire" else services.version_rollback
        try:
            service(version=version, user=request.user, reason=reason)
        except ValidationError as exc:
            context["error"] = " ".join(exc.messages)
            status = 400
        except services.LifecycleError as exc:
            context["error"] = str(exc)
            status = 409
        else:
            if action == "retire":
                messages.success(request, f"Retired {version.procedure.key} v{version.number}. Agents no longer receive it.")
            else:
                note = (
                    f" It is refused at load: the agent lacks {', '.join(context['missing_tools'])}."
                    if context["missing_tools"]
                    else " Agents receive it from their next fetch."
                )
                messages.success(request, f"Rolled back {version.procedure.key} to v{version.number}.{note}")
            return redirect("reviews:ops_procedure", agent.name, version.procedure.key)
    return render(request, template, context, status=status)


@ops_login_required
@require_http_methods(["GET", "POST"])
def ops_retire(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks for the reason and confirmation; POST retires through version_retire."""
    return _status_change(request, pk, action="retire")


@ops_login_required
@require_http_methods(["GET", "POST"])
def ops_rollback(request: HttpRequest, pk: int) -> HttpResponse:
    """GET shows what changes (current ACTIVE → this version, and the tool check); POST rolls back."""
    return _status_change(request, pk, action="roll_back")


# ---------------------------------------------------------------------------------------------- approver rights


@ops_login_required
@require_GET
def ops_approvers(request: HttpRequest, agent: str) -> HttpResponse:
    agent_obj = get_agent_for_user(request, agent)
    held = rights.approver_rights(agent_obj)
    named = rights.named_approvers(agent_obj, held)
    procedures = list(Procedure.objects.filter(agent=agent_obj).order_by("key"))
    return render(
        request,
        "reviews/ops/approvers.html",
        {
            "agent": agent_obj,
            "rights": held,
            "agent_approvers": named.get(None, []),
            "procedure_approvers": [(p, named.get(p.key, [])) for p in procedures],
            "approvals": rights.active_approvals(agent_obj),
            "procedures": procedures,
            "can_manage": user_can_manage_agent(request.user, agent_obj),
            "tab": "approvers",
        },
    )


def _rights_form(request: HttpRequest, agent: Agent):
    """Reads scope, grantee kind and name from the POST; raises ValidationError naming the field."""
    scope = request.POST.get("scope", "").strip()
    procedure = None
    if scope and scope != "agent":
        procedure = Procedure.objects.filter(agent=agent, key=scope).first()
        if procedure is None:
            raise ValidationError({"scope": f"{agent.name} has no procedure {scope!r}"})
    elif not scope:
        raise ValidationError({"scope": "choose the whole agent or one procedure"})
    kind = request.POST.get("grantee_kind", "user")
    name = request.POST.get("grantee", "").strip()
    if not name:
        raise ValidationError({"grantee": "name a user or a group"})
    if kind == "group":
        grantee = Group.objects.filter(name=name).first()
    elif kind == "user":
        grantee = get_user_model().objects.filter(username=name).first()
    else:
        raise ValidationError({"grantee_kind": "choose user or group"})
    if grantee is None:
        raise ValidationError({"grantee": f"no {kind} named {name!r}"})
    return procedure, grantee, request.POST.get("reason", "").strip()


def _rights_change(request: HttpRequest, agent: str, *, grant: bool) -> HttpResponse:
    agent_obj = get_agent_for_user(request, agent)
    if not user_can_manage_agent(request.user, agent_obj):
        raise PermissionDenied(f"You may not change approver rights of {agent_obj.name}.")
    try:
        procedure, grantee, reason = _rights_form(request, agent_obj)
        service = rights.approver_right_grant if grant else rights.approver_right_revoke
        service(agent=agent_obj, procedure=procedure, grantee=grantee, by=request.user, reason=reason)
    except ValidationError as exc:
        messages.error(request, "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items()))
        return redirect("reviews:ops_approvers", agent_obj.name)
    target = procedure.key if procedure else f"every procedure of {agent_obj.name}"
    who = f"group {grantee.name}" if isinstance(grantee, Group) else grantee.get_username()
    messages.success(request, f"{'Granted' if grant else 'Revoked'}: {who} {'may' if grant else 'may no longer'} approve {target}.")
    return redirect("reviews:ops_approvers", agent_obj.name)


@ops_login_required
@require_POST
def ops_grant(request: HttpRequest, agent: str) -> HttpResponse:
    return _rights_change(request, agent, grant=True)


@ops_login_required
@require_POST
def ops_revoke(request: HttpRequest, agent: str) -> HttpResponse:
    return _rights_change(request, agent, grant=False)


# ---------------------------------------------------------------------------------------------- audit log


def _audit_queryset(request: HttpRequest) -> tuple[QuerySet[AuditEvent], dict[str, str]]:
    filters = {k: request.GET.get(k, "").strip() for k in ("agent", "procedure", "user", "action")}
    events = AuditEvent.objects.select_related("actor", "agent", "procedure", "version")
    if not request.user.is_superuser:
        events = events.filter(agent__in=agents_for_operations(request.user))
    if filters["agent"]:
        events = events.filter(agent__name=filters["agent"])
    if filters["procedure"]:
        events = events.filter(procedure__key=filters["procedure"])
    if filters["user"]:
        events = events.filter(Q(actor__username=filters["user"]) | Q(actor_label=filters["user"]))
    if filters["action"]:
        events = events.filter(action=filters["action"])
    return events.order_by("-at", "-id"), filters


def _short(value) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "(none)"
    return "" if value is None else str(value)


def audit_changes(event: AuditEvent) -> list[tuple[str, str, str]]:
    """(field, before, after) for each key of the event's before/after snapshots, sorted by key (a
    jsonb column does not keep key order); a side that lacks the key shows as an empty string."""
    before, after = event.before or {}, event.after or {}
    keys = sorted({*before, *after})
    return [(k, _short(before.get(k)) if k in before else "", _short(after.get(k)) if k in after else "") for k in keys]


@ops_login_required
@require_GET
def ops_audit(request: HttpRequest) -> HttpResponse:
    visible = agents_for_operations(request.user)
    if not request.user.is_superuser and not visible.exists():
        raise Http404("No audit log to show")
    events, filters = _audit_queryset(request)
    page = Paginator(events, AUDIT_PAGE_SIZE).get_page(request.GET.get("page"))
    for event in page:
        event.changes = audit_changes(event)
    query = urlencode({k: v for k, v in filters.items() if v})
    context = {
        "page": page,
        "filters": filters,
        "query": query,
        "agents": visible.values_list("name", flat=True),
        "actions": AuditEvent.Action.choices,
        "tab": "audit",
    }
    template = "reviews/ops/audit.html"
    if getattr(request, "htmx", False) and request.htmx.target == "audit-results":
        template += "#results"
    response = render(request, template, context)
    response["Vary"] = "HX-Request"
    return response


FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value) -> str:
    """A CSV cell that a spreadsheet will not evaluate: text starting with =, +, -, @, a tab or a
    carriage return gets a leading apostrophe (OWASP's advice for CSV injection)."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True) if isinstance(value, (dict, list)) else str(value)
    if text.startswith(FORMULA_PREFIXES):
        return "'" + text
    return text


class _Echo:
    def write(self, value: str) -> str:
        return value


AUDIT_CSV_COLUMNS = ["at", "action", "who", "agent", "procedure", "version", "reason", "before", "after"]


def _audit_rows(events: QuerySet[AuditEvent]) -> Iterator[list[str]]:
    yield AUDIT_CSV_COLUMNS
    for event in events.iterator(chunk_size=2000):
        yield [
            csv_cell(event.at.isoformat()),
            csv_cell(event.action),
            csv_cell(event.who),
            csv_cell(event.agent.name if event.agent_id else ""),
            csv_cell(event.procedure.key if event.procedure_id else ""),
            csv_cell(event.version.number if event.version_id else ""),
            csv_cell(event.reason),
            csv_cell(event.before or ""),
            csv_cell(event.after or ""),
        ]


@ops_login_required
@require_GET
def ops_audit_csv(request: HttpRequest) -> StreamingHttpResponse:
    if not request.user.is_superuser and not agents_for_operations(request.user).exists():
        raise Http404("No audit log to export")
    events, _filters = _audit_queryset(request)
    writer = csv.writer(_Echo())
    response = StreamingHttpResponse((writer.writerow(row) for row in _audit_rows(events)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="procmem-audit-{timezone.now():%Y%m%d-%H%M%S}.csv"'
    return response


# ---------------------------------------------------------------------------------------------- metrics


def _window_days(request: HttpRequest) -> int:
    try:
        days = int(request.GET.get("days", 30))
    except ValueError:
        days = 30
    return days if days in METRIC_WINDOWS else 30


def _all_days(start: date, end: date) -> list[date]:
    return [date.fromordinal(o) for o in range(start.toordinal(), end.toordinal() + 1)]


def _markers(changes: list[metrics.ModelChange]) -> list[tuple[date, str, str]]:
    return [(c.day, c.after or "(none)", f"{c.day:%Y-%m-%d}: model {c.before or '(none)'} → {c.after or '(none)'}") for c in changes]


@ops_login_required
@require_GET
def ops_metrics(request: HttpRequest, agent: str) -> HttpResponse:
    agent_obj = get_agent_for_user(request, agent)
    days = _window_days(request)
    start, end = metrics.window(days)
    versions = metrics.versions_with_metrics(agent_obj, start, end)
    figures = metrics.version_figures(versions, start, end)
    daily = metrics.agent_daily(agent_obj, start, end)
    by_day = {row["day"]: row for row in daily}
    day_list = _all_days(start, end)
    changes = metrics.model_changes({row["day"]: row["model"] for row in daily})
    chart = charts.time_chart(
        title=f"{agent_obj.name}: resolution rate and sessions without a procedure, per day",
        days=day_list,
        percent=True,
        series=[
            charts.SeriesSpec("resolution rate", [by_day[d]["resolution"].value if d in by_day else None for d in day_list], "s1"),
            charts.SeriesSpec(
                "no procedure received (intents that had one)",
                [by_day[d]["bare"].value if d in by_day else None for d in day_list],
                "s3",
            ),
        ],
        markers=_markers(changes),
    )
    state = MetricsState.objects.filter(agent=agent_obj).first()
    return render(
        request,
        "reviews/ops/metrics.html",
        {
            "agent": agent_obj,
            "figures": figures,
            "chart": chart,
            "changes": changes,
            "days": days,
            "windows": METRIC_WINDOWS,
            "start": start,
            "end": end,
            "state": state,
            "sessions": sum(row["sessions"] for row in daily),
            "warning": {
                "days": settings.PROCMEM_METRIC_WARNING_DAYS,
                "alpha": settings.PROCMEM_METRIC_WARNING_ALPHA,
                "min_sessions": settings.PROCMEM_METRIC_WARNING_MIN_SESSIONS,
            },
            "tab": "metrics",
        },
    )


@ops_login_required
@require_GET
def ops_version_metrics(request: HttpRequest, pk: int) -> HttpResponse:
    version, _can_manage = get_version_for_user(request, pk)
    agent = version.procedure.agent
    days = _window_days(request)
    start, end = metrics.window(days)
    (fig,) = metrics.version_figures([version], start, end, daily=True)
    by_day = {d.day: d for d in fig.days}
    day_list = _all_days(start, end)
    changes = metrics.model_changes({d.day: d.model for d in fig.days if d.model or d.selected})
    markers = _markers(changes)

    def series(getter):
        return [getter(by_day[d]) if d in by_day else None for d in day_list]

    eval_value = fig.eval_rate.value
    resolution = charts.time_chart(
        title="Resolution rate: sessions that received it vs the same intent without it",
        days=day_list,
        percent=True,
        series=[
            charts.SeriesSpec("with this version", series(lambda d: d.with_rate.value), "s1"),
            charts.SeriesSpec("same intent, without it", series(lambda d: d.without_rate.value), "s2"),
        ],
        markers=markers,
        reference=(eval_value, f"eval {fig.eval_rate.percent}") if eval_value is not None else None,
        width=SMALL_CHART,
    )
    selected = charts.time_chart(
        title="Times selected (sessions that received it), per day",
        days=day_list,
        series=[charts.SeriesSpec("sessions", series(lambda d: d.selected or None), "s1", kind="bar")],
        markers=markers,
        width=SMALL_CHART,
    )
    bare = charts.time_chart(
        title="Sessions of its intent that received no procedure while it was ACTIVE",
        days=day_list,
        percent=True,
        series=[charts.SeriesSpec("no procedure", series(lambda d: d.bare_rate.value), "s3")],
        markers=markers,
        width=SMALL_CHART,
    )
    chars = charts.time_chart(
        title="Instruction length p95 (characters), per day",
        days=day_list,
        series=[charts.SeriesSpec("p95", series(lambda d: d.p95_chars), "s4")],
        markers=markers,
        width=SMALL_CHART,
    )
    return render(
        request,
        "reviews/ops/version_metrics.html",
        {
            "agent": agent,
            "version": version,
            "fig": fig,
            "drop": metrics.resolution_drop_test(observed=fig.with_rate, expected=fig.eval_rate),
            "charts": [resolution, selected, bare, chars],
            "changes": changes,
            "days": days,
            "windows": METRIC_WINDOWS,
            "start": start,
            "end": end,
            "tab": "metrics",
        },
    )


# ---------------------------------------------------------------------------------------------- notifications


@ops_login_required
@require_GET
def notifications(request: HttpRequest) -> HttpResponse:
    rows = Notification.objects.filter(user=request.user).order_by("-created_at", "-id")
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    return render(request, "reviews/ops/notifications.html", {"page": page})


@ops_login_required
@require_POST
def notification_read(request: HttpRequest, pk: int) -> HttpResponse:
    notification = get_object_or_404(Notification, pk=pk, user=request.user)
    notification_mark_read(user=request.user, notification_ids=[notification.pk])
    if request.POST.get("follow") and notification.url.startswith("/"):
        return redirect(notification.url)
    return redirect("reviews:notifications")


@ops_login_required
@require_POST
def notifications_read_all(request: HttpRequest) -> HttpResponse:
    count = notification_mark_read(user=request.user)
    messages.success(request, f"Marked {count} notification{'s' if count != 1 else ''} read.")
    return redirect("reviews:notifications")


@ops_login_required
@require_http_methods(["GET", "POST"])
def notification_preferences(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        notification_preferences_set(
            user=request.user,
            choices={
                kind: (request.POST.get(f"{kind}-in_app") == "on", request.POST.get(f"{kind}-email") == "on")
                for kind in NotificationKind.values
            },
        )
        messages.success(request, "Saved your notification choices.")
        return redirect("reviews:notification_preferences")
    prefs = preferences_for(request.user)
    rows = [(kind, label, prefs[kind]) for kind, label in NotificationKind.choices]
    return render(request, "reviews/ops/preferences.html", {"rows": rows, "has_email": bool(request.user.email)})
