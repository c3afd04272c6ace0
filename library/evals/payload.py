"""What a runner receives for one case and arm: the case (without its checks), the instruction and
the injected procedures — selected as the agent's own select request would select them.

Each arm is a set as it would be served (library/serving.served_from_versions: the agent's
namespace, refusals for missing tools, the agent's cap):

- baseline: the set the run's target environment served when the run started (pinned by id in the
  run: production's ACTIVE versions, or for staging per procedure the version released there, else
  the ACTIVE one; library/environments.py `eval_target_environment`);
- the other arm ("candidate" in the rows) depends on the run's kind: an approval or a promotion run
  adds the version, replacing the baseline version of the same procedure if there is one (the
  version it revises, or the one released to the environment); a retirement run removes the
  version; a rollback run replaces it by its predecessor.

Every case is selected by selection.select_for_agent over the arm's set — the function behind
`GET /api/v1/agents/{agent}/select`: the same Index, ranker configuration, floors, priorities,
producer pull-ins, injection cap and character cap — with the case's task, and its intent when the
agent selects with one (`Agent.selects_with_intent`). So a candidate whose appliesWhen does not
reach its intent's tasks is not injected, and a candidate that outranks another procedure under
the cap displaces it, exactly as it would in production. Each result row records what was injected
(ids, versions, intents) and the sha256 of the rendered block.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..models import Agent, EvalRun, ProcedureVersion, RegressionCase
from ..serving import active_set as serving
from ..serving import selection

BASELINE, CANDIDATE = "baseline", "candidate"
MAX_CACHED_RUNS = 8  # arm sets kept per process: a worker runs a run's chunks one after another


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
class Selected:
    """One arm's selection for one case."""

    procedures: list[dict]  # the injected records as the select endpoint returns them
    instruction: str
    injected: list[dict]  # [{"id", "version", "intent"}], in injection order
    rendered_hash: str


@dataclass
class ArmSets:
    """The two served sets of a run, and the selection of each case in each."""

    agent: Agent
    sets: dict[str, serving.ServedSet]
    with_intent: bool
    _vectors: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def prepare(self, tasks: list[str]) -> None:
        """Embeds the tasks not embedded yet, once for both arms (each as the select endpoint
        embeds a query, so the vectors are the same to the bit; the process keeps them per text,
        selection.embed_task, so the next run over the same cases embeds nothing)."""
        for task in dict.fromkeys(tasks):
            with self._lock:
                if task in self._vectors:
                    continue
            vector = selection.embed_task(task)
            with self._lock:
                self._vectors[task] = vector

    def select(self, arm: str, case: RegressionCase) -> Selected:
        self.prepare([case.task])
        response = selection.select_for_agent(
            agent=self.agent,
            task=case.task,
            intent=case.intent.name if self.with_intent else None,
            served=self.sets[arm],
            query_vector=self._vectors[case.task],
        )
        base = self.agent.base_instruction.strip()
        parts = [base] if base else []
        if response["rendered"]:
            parts.append(response["rendered"])
        return Selected(
            procedures=response["injected"],
            instruction="\n\n".join(parts),
            injected=[
                {"id": p["id"], "version": p["version"], "intent": p.get("intent")} for p in response["injected"]
            ],
            rendered_hash=hashlib.sha256(response["rendered"].encode("utf-8")).hexdigest(),
        )

    def request(self, arm: str, case: RegressionCase) -> tuple[dict, str, list[dict], Selected]:
        selected = self.select(arm, case)
        return case_payload(case), selected.instruction, selected.procedures, selected


def _versions(ids: list[int]) -> dict[int, ProcedureVersion]:
    return {
        v.pk: v
        for v in ProcedureVersion.objects.filter(pk__in=ids)
        .select_related("procedure__intent", "approved_by")
        .defer(*serving.approver_secret_columns())
    }


def changed_versions(*, run: EvalRun, baseline: list[ProcedureVersion]) -> list[ProcedureVersion]:
    """The other arm's versions: the baseline with the run's change applied."""
    version = run.version
    others = [v for v in baseline if v.procedure_id != version.procedure_id]
    if run.kind == EvalRun.Kind.RETIRE:
        return others
    if run.kind == EvalRun.Kind.ROLLBACK:
        return [*others, run.replacement] if run.replacement is not None else others
    return [*others, version]


_cache: OrderedDict[tuple, ArmSets] = OrderedDict()
_cache_lock = threading.Lock()


def arm_sets(*, run: EvalRun) -> ArmSets:
    """The run's two sets. Kept per run and agent settings in this process (versions are
    immutable and the baseline is pinned), so a worker builds the indexes once per run, not per chunk."""
    agent = run.version.procedure.agent
    key = (
        run.pk,
        agent.injection_cap,
        tuple(agent.tools),
        agent.namespace_id,
        agent.selects_with_intent,
        agent.base_instruction,
        serving.model_key(),
    )
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
            return cached
    pinned = [b["id"] for b in run.baseline_versions]
    loaded = _versions([*pinned, run.version_id, *([run.replacement_id] if run.replacement_id else [])])
    baseline = [loaded[pk] for pk in pinned if pk in loaded]
    run.version = loaded.get(run.version_id, run.version)
    if run.replacement_id:
        run.replacement = loaded.get(run.replacement_id)
    sets = {
        BASELINE: serving.served_from_versions(agent=agent, versions=baseline, fingerprint=f"eval:{run.pk}:{BASELINE}"),
        CANDIDATE: serving.served_from_versions(
            agent=agent, versions=changed_versions(run=run, baseline=baseline), fingerprint=f"eval:{run.pk}:{CANDIDATE}"
        ),
    }
    built = ArmSets(agent=agent, sets=sets, with_intent=agent.selects_with_intent)
    with _cache_lock:
        _cache[key] = built
        while len(_cache) > MAX_CACHED_RUNS:
            _cache.popitem(last=False)
    return built


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def selection_summary(rows: list[dict[str, Any]], *, run: EvalRun) -> dict[str, Any]:
    """What the eval panel states about selection, from the finished rows
    (`{"case_id", "case", "intent", "arm", "injected"}` each):

    {"kind", "environment", "targetIntent", "changed": "key vN", "targetCases", "injectedIn": int (target cases whose
     changed arm injected the version, or for a retirement: whose baseline did), "injectedShare",
     "displaced": [{"case", "caseName", "intent", "procedure": "key vN"}]  # baseline injected it, the other arm not
     "differs": int (cases whose two arms injected different things),
     "cases": [{"case", "caseName", "intent", "baseline": ["key vN"], "candidate": [...], "same": bool}]}
    """
    version = run.version
    key, target = version.procedure.key, version.procedure.intent.name
    label = f"{key} v{version.number}"
    by_case: dict[int, dict[str, Any]] = {}
    for row in rows:
        entry = by_case.setdefault(
            row["case_id"], {"case": row["case_id"], "caseName": row["case"], "intent": row["intent"]}
        )
        entry[row["arm"]] = [f"{p['id']} v{p['version']}" for p in row["injected"] or []]
    cases, displaced = [], []
    injected_in = target_cases = differs = 0
    for case_id in sorted(by_case):
        entry = by_case[case_id]
        base, other = entry.get(BASELINE, []), entry.get(CANDIDATE, [])
        entry["baseline"], entry["candidate"] = base, other
        entry["same"] = base == other
        differs += not entry["same"]
        if entry["intent"] == target:
            target_cases += 1
            injected_in += label in (
                base if run.kind == EvalRun.Kind.RETIRE or run.kind == EvalRun.Kind.ROLLBACK else other
            )
        for name in base:
            if name not in other and not name.startswith(f"{key} v"):
                displaced.append(
                    {"case": case_id, "caseName": entry["caseName"], "intent": entry["intent"], "procedure": name}
                )
        cases.append(entry)
    return {
        "kind": run.kind,
        "environment": run.environment,
        "targetIntent": target,
        "changed": label,
        "targetCases": target_cases,
        "injectedIn": injected_in,
        "injectedShare": round(injected_in / target_cases, 4) if target_cases else None,
        "displaced": displaced,
        "differs": differs,
        "withIntent": run.version.procedure.agent.selects_with_intent,
        "cases": cases,
    }
