"""What a runner receives for one case and arm: the case (without its checks), the instruction and
the injected procedures.

procmem does the selection the agent's runtime would do: a hard filter by the case's intent, the
candidate first in the candidate arm (so that it is injected whenever it applies), then the other
versions by id, at most the agent's injection cap. The baseline arm gets the versions that were
ACTIVE when the run started (pinned by id); the candidate arm gets the same set with the candidate
added, replacing the baseline version of the same procedure id if there is one.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from procmem_client.rendering import render_block, render_procedure

from ..models import Agent, ProcedureVersion, RegressionCase

BASELINE, CANDIDATE = "baseline", "candidate"


def procedure_record(version: ProcedureVersion) -> dict:
    """The agent-facing record plus its rendered text, rendered by the same function as the agent
    API's `rendered` field, so that a replay injects the bytes agents will receive. Caller selects
    procedure and approved_by."""
    record = dict(version.to_dict())
    record["rendered"] = render_procedure(record)
    return record


def case_payload(case: RegressionCase) -> dict:
    """The case as the agent sees it: never the expected calls or reply patterns."""
    return {
        "id": case.pk,
        "name": case.name,
        "intent": case.intent.name,
        "task": case.task,
        "context": case.context or {},
        "tool_results": case.tool_results or {},
    }


@dataclass
class ArmSets:
    """The versions each arm may inject, ready to be filtered per case."""

    agent: Agent
    baseline: list[ProcedureVersion]
    candidate: ProcedureVersion

    def versions_for(self, arm: str) -> list[ProcedureVersion]:
        if arm == BASELINE:
            return list(self.baseline)
        others = [v for v in self.baseline if v.procedure_id != self.candidate.procedure_id]
        return [self.candidate, *others]

    def injected(self, arm: str, case: RegressionCase) -> list[ProcedureVersion]:
        versions = [v for v in self.versions_for(arm) if v.procedure.intent_id == case.intent_id]
        first = [v for v in versions if v.pk == self.candidate.pk]
        rest = sorted((v for v in versions if v.pk != self.candidate.pk), key=lambda v: v.procedure.key)
        return (first + rest)[: self.agent.injection_cap]

    def request(self, arm: str, case: RegressionCase) -> tuple[dict, str, list[dict]]:
        block = render_block([procedure_record(v) for v in self.injected(arm, case)], max_chars=settings.PROCMEM_INJECTION_MAX_CHARS)
        parts = [self.agent.base_instruction.strip()] if self.agent.base_instruction.strip() else []
        if block["text"]:
            parts.append(block["text"])
        return case_payload(case), "\n\n".join(parts), block["included"]


def arm_sets(*, agent: Agent, baseline_ids: list[int], candidate: ProcedureVersion) -> ArmSets:
    baseline = list(
        ProcedureVersion.objects.filter(pk__in=baseline_ids).select_related("procedure__intent", "approved_by")
    )
    return ArmSets(agent=agent, baseline=baseline, candidate=candidate)
