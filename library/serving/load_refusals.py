"""Versions refused at load: an ACTIVE version whose requiredTools the agent's tool list lacks is
not served (library/serving/active_set.py checks each version as it builds the set). Here: the
tool-list state a refusal is recorded under (`tools_state_hash`), which tools are missing, recording
a refusal once per version and state (with its audit row and alert), and the refusals that still
hold, for the banner and the tools page.
"""

from __future__ import annotations

import hashlib

from django.db import IntegrityError, transaction

from ..models import AuditEvent, LoadRefusal, ProcedureVersion, Status
from ..services import audit
from ..signals import version_refused_at_load


def tools_state_hash(tools: list[str]) -> str:
    """Identifies a tool-list state (order does not matter). LoadRefusal rows are unique per
    version and this hash, so an alert is raised once per version and tool-list state."""
    return hashlib.sha256("\x1f".join(sorted(tools)).encode("utf-8")).hexdigest()


def missing_tools(*, required: list[str], available: list[str]) -> list[str]:
    have = set(available)
    return [tool for tool in required if tool not in have]


def load_refusal_record(*, version_id: int, tools_hash: str, missing_tools: list[str]) -> LoadRefusal | None:
    """Records that a version was refused at load under a tool-list state, with an audit row, and
    after commit sends `version_refused_at_load` (the reviews app notifies and e-mails the admins). The unique
    constraint makes this happen once, even when several processes see the refusal at the same
    time: the loser of the race gets an IntegrityError and raises nothing. Returns the new row, or
    None when it already existed."""

    try:
        with transaction.atomic(using="default"):
            version = ProcedureVersion.objects.select_related("procedure__agent").get(pk=version_id)
            refusal = LoadRefusal.objects.create(version=version, tools_hash=tools_hash, missing_tools=missing_tools)
            audit(
                action=AuditEvent.Action.REFUSED_AT_LOAD,
                actor_label="agent API (load-time check)",
                version=version,
                reason=f"requiredTools not in the agent's tool list: {', '.join(missing_tools)}",
                before={"version": version.number, "status": version.status},
                after={"served": False, "missingTools": missing_tools, "toolsHash": tools_hash},
            )
            transaction.on_commit(lambda: _alert_refusal(refusal.pk), using="default", robust=True)
    except IntegrityError:
        return None
    return refusal


def _alert_refusal(refusal_id: int) -> None:
    """Announces a new refusal. The reviews app turns the signal into notifications: in the app and
    by e-mail to the agent's admins (e-mail is on by default for this kind; each admin may opt out)."""

    refusal = LoadRefusal.objects.get(pk=refusal_id)
    version_refused_at_load.send(
        sender=LoadRefusal, version_id=refusal.version_id, missing_tools=list(refusal.missing_tools)
    )


def unresolved_refusals(*, agents=None) -> list[LoadRefusal]:
    """Refusals that still hold: the version is ACTIVE and the agent's tool list is the one it was
    refused under. One per version (the newest), for the banner and the tools page."""
    queryset = (
        LoadRefusal.objects.filter(version__status=Status.ACTIVE)
        .select_related("version__procedure__agent", "version__procedure")
        .order_by("-created_at", "-id")
    )
    if agents is not None:
        queryset = queryset.filter(version__procedure__agent__in=agents)
    seen: set[int] = set()
    result: list[LoadRefusal] = []
    for refusal in queryset:
        agent = refusal.version.procedure.agent
        if refusal.version_id in seen or refusal.tools_hash != tools_state_hash(list(agent.tools)):
            continue
        seen.add(refusal.version_id)
        result.append(refusal)
    return result
