"""The sessions pages' reads: the sessions that came in for an agent (any channel: the client API,
OTLP, imports, coding-agent hooks), filtered, and what one session supports (the candidates whose
evidence names it and their mining runs). Reviewers see what reviewers always see of a session: the
redacted excerpt, the tool names and the outcome history, never the raw task or tool arguments."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time

from django import forms
from django.db.models import Q, QuerySet
from django.utils import timezone

from library.ingest.outcomes import session_own_label
from library.models import Agent, AgentSession, ProcedureVersion, SessionLabel

SESSION_PAGE_SIZE = 50

OUTCOMES = {
    "resolved": Q(resolved=True),
    "failed": Q(resolved=False),
    "escalated": Q(escalated=True),
    "unknown": Q(resolved__isnull=True),
}
OUTCOME_CHOICES = [
    ("", "any"),
    ("resolved", "resolved"),
    ("failed", "not resolved"),
    ("escalated", "escalated"),
    ("unknown", "no outcome yet"),
]


class SessionFilterForm(forms.Form):
    """The list's filters; each bad value is a field error on the page, the others still apply."""

    channel = forms.ChoiceField(required=False, choices=[("", "any"), *AgentSession.Channel.choices])
    intent = forms.ChoiceField(required=False)
    outcome = forms.ChoiceField(required=False, choices=OUTCOME_CHOICES)
    ended_from = forms.DateField(required=False, label="Ended from", widget=forms.DateInput(attrs={"type": "date"}))
    ended_to = forms.DateField(required=False, label="Ended to", widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args, agent: Agent, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        names = agent.intents.order_by("name").values_list("name", flat=True)
        self.fields["intent"].choices = [("", "any"), ("-", "(none)"), *((name, name) for name in names)]

    def clean(self):
        cleaned = super().clean()
        start, end = cleaned.get("ended_from"), cleaned.get("ended_to")
        if start and end and start > end:
            self.add_error("ended_to", "must be on or after “Ended from”")
        return cleaned

    def filters(self) -> dict:
        """The valid filters (a field with an error is left out, so the rest still narrow the list)."""
        self.is_valid()
        return {
            key: value for key, value in getattr(self, "cleaned_data", {}).items() if value and key not in self.errors
        }


def session_list(*, agent: Agent, filters: dict) -> QuerySet[AgentSession]:
    sessions = AgentSession.objects.filter(agent=agent).select_related("intent")
    if filters.get("channel"):
        sessions = sessions.filter(channel=filters["channel"])
    if filters.get("intent") == "-":
        sessions = sessions.filter(intent__isnull=True)
    elif filters.get("intent"):
        sessions = sessions.filter(intent__name=filters["intent"])
    if filters.get("outcome"):
        sessions = sessions.filter(OUTCOMES[filters["outcome"]])
    zone = timezone.get_current_timezone()
    if filters.get("ended_from"):
        sessions = sessions.filter(ended_at__gte=datetime.combine(filters["ended_from"], time.min, zone))
    if filters.get("ended_to"):
        sessions = sessions.filter(ended_at__lte=datetime.combine(filters["ended_to"], time.max, zone))
    return sessions.defer("task", "tool_calls").order_by("-ended_at", "-id")


@dataclass(frozen=True)
class Supported:
    version: ProcedureVersion
    mining_run_id: int | None


def versions_supported_by(session: AgentSession) -> list[Supported]:
    """The agent's versions whose evidence names the session (a mined candidate lists the sessions it
    was learned from), with the mining run each came from. Read in Python over the agent's versions
    with evidence: JSON containment differs between SQLite and PostgreSQL, and an agent has hundreds
    of versions, not millions."""
    found = []
    versions = (
        ProcedureVersion.objects.filter(procedure__agent_id=session.agent_id)
        .select_related("procedure")
        .order_by("procedure__key", "number")
    )
    for version in versions:
        evidence = version.evidence if isinstance(version.evidence, dict) else {}
        if session.session_id in (evidence.get("sessionIds") or []):
            run = evidence.get("miningRunId")
            found.append(Supported(version, run if isinstance(run, int) else None))
    return found


def outcome_history(session: AgentSession) -> list[SessionLabel]:
    """The session's label history, oldest first. A session whose outcome came only with the session
    has no stored row yet (library/ingest/outcomes.py stores its own report with the first later one):
    its own report is then its one row, so the page never says "no outcome" beside an outcome."""
    labels = list(session.labels.order_by("at", "pk"))
    if labels or (session.resolved is None and session.escalated is None and session.rating is None):
        return labels
    return [session_own_label(session)]
