"""Does the skill trigger? Agents that load Agent Skills choose one by its `description` alone
(Claude Code, Codex and the others read the name and description of every skill, and the body only
of the one they pick). So for a version this measures, on the agent's own tasks of the version's
intent (its active regression cases and its labelled sessions), whether the description alone ranks
the skill first, and within the top three, against the descriptions of the other skills the agent
is served: the description as procmem serves it (procmem_client.skill_rendering `describe`), ranked
by the project's ranker (procmem_client.ranking) over descriptions only — no steps, no tool list
beyond what the description says, no intent filter (an agent has none). It also counts the other
intents' tasks on which this description comes first (it would trigger where it should not), and
warns when the description does not say when to use the skill (judged on the appliesWhen it is built
from: an imported skill's own description, a mined procedure's situation).

`description_records` turns any records into description-only ones; `manage.py eval_selection
--description-only` measures a labelled set that way (library/serving/selection_eval.py does the rest).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from procmem_client.ranking import Ranker, SelectionConfig
from procmem_client.skill_rendering import describe

from ..models import AgentSession, RegressionCase
from ..skill_import.trigger import says_when_to_use
from . import active_set as serving

MAX_TASKS = 400  # of the version's intent, and as many of the other intents: bounds a page's work
TOP = 3


def description_for(record: Mapping[str, Any]) -> str:
    """The skill description procmem serves for a record."""
    return describe(record)


def description_records(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Records a ranker sees as their skill descriptions only: the description in appliesWhen,
    no steps, no tools (the ranker reads identifiers from requiredTools; the description names
    the tools it names)."""
    return [
        {
            "id": record["id"],
            "version": record.get("version", 1),
            "intent": record.get("intent"),
            "appliesWhen": description_for(record),
            "steps": [],
            "requiredTools": [],
            "forbiddenActions": [],
            "priority": record.get("priority", 0),
        }
        for record in records
    ]


def description_config(config: SelectionConfig | None = None) -> SelectionConfig:
    """The ranker's configuration for descriptions: the step signal off (there are no steps), and
    the third model's signal off (third_model_weight 0): the measure ranks up to 2 × MAX_TASKS tasks
    on each view of a version page, and the third model (multilingual-e5-small in the default
    backend) would embed each of them again, ~42 ms a task against ~16 ms for the language models
    (800 tasks: ~34 s more), so tasks are embedded by the language models only."""
    return replace(config or SelectionConfig(), use_steps=False, third_model_weight=0.0)


@dataclass
class TriggerMeasure:
    """How a version's description fares among the served skills' descriptions."""

    label: str  # "key vN"
    description: str
    says_when: bool
    competitors: int  # other served skills ranked against it
    tasks: int  # tasks of its intent
    first: int
    top3: int
    other_tasks: int = 0  # tasks of other intents
    wrongly_first: int = 0  # of those, where this description ranked first
    sources: dict[str, int] = field(default_factory=dict)  # tasks by where they came from
    outranked_by: list[tuple[str, int]] = field(default_factory=list)  # who ranked first instead, how often

    @property
    def first_share(self) -> float | None:
        return self.first / self.tasks if self.tasks else None

    @property
    def top3_share(self) -> float | None:
        return self.top3 / self.tasks if self.tasks else None

    @property
    def wrongly_first_share(self) -> float | None:
        return self.wrongly_first / self.other_tasks if self.other_tasks else None


def measure(
    *,
    record: Mapping[str, Any],
    others: Iterable[Mapping[str, Any]],
    tasks: list[tuple[str, str]],
    other_tasks: list[str] = (),
    ranker: Ranker | None = None,
) -> TriggerMeasure:
    """`record` ranked by description against `others` (records of other procedures; one of the
    same id is left out: the version replaces it) for each of `tasks` ((text, source) of its
    intent) and `other_tasks` (texts of other intents). Pure: no database."""
    mine = description_records([record])[0]
    rivals = description_records([r for r in others if r["id"] != record["id"]])
    index = (ranker or Ranker(config=description_config())).index([mine, *rivals])
    result = TriggerMeasure(
        label=f"{record['id']} v{record.get('version', '?')}",
        description=mine["appliesWhen"],
        # procmem's description always ends "Use it when: <appliesWhen>": judge what follows it
        says_when=says_when_to_use(str(record.get("appliesWhen") or "")),
        competitors=len(rivals),
        tasks=len(tasks),
        first=0,
        top3=0,
        other_tasks=len(other_tasks),
        sources=dict(Counter(source for _, source in tasks)),
    )
    beaten: Counter[str] = Counter()
    for text, _source in tasks:
        ranked = [entry["id"] for entry in index.rank(task=text, cap=0)]
        position = ranked.index(mine["id"]) + 1
        result.first += position == 1
        result.top3 += position <= TOP
        if position > 1:
            beaten[ranked[0]] += 1
    for text in other_tasks:
        ranked = index.rank(task=text, cap=0)
        result.wrongly_first += bool(ranked) and ranked[0]["id"] == mine["id"]
    result.outranked_by = beaten.most_common(5)
    return result


def version_trigger(version) -> TriggerMeasure:
    """The measure of `version` (any status) for its agent: its intent's active regression cases
    and labelled sessions, against the skills the agent is served now. Caller selects the
    version's procedure, agent and intent."""
    procedure = version.procedure
    agent = procedure.agent
    record = {**version.to_dict(), "intent": procedure.intent.name}
    served = serving.active_set_for_agent(agent=agent, using="default")
    tasks: list[tuple[str, str]] = [
        (task, "regression case")
        for task in RegressionCase.objects.filter(agent=agent, intent=procedure.intent, is_active=True)
        .order_by("-pk")
        .values_list("task", flat=True)[:MAX_TASKS]
        if task.strip()
    ]
    tasks += [
        (task, "labelled session")
        for task in AgentSession.objects.filter(agent=agent, intent=procedure.intent)
        .exclude(task="")
        .order_by("-pk")
        .values_list("task", flat=True)[: MAX_TASKS - len(tasks)]
    ]
    other_tasks = [
        *RegressionCase.objects.filter(agent=agent, is_active=True)
        .exclude(intent=procedure.intent)
        .order_by("-pk")
        .values_list("task", flat=True)[:MAX_TASKS],
        *AgentSession.objects.filter(agent=agent, intent__isnull=False)
        .exclude(intent=procedure.intent)
        .exclude(task="")
        .order_by("-pk")
        .values_list("task", flat=True)[:MAX_TASKS],
    ][:MAX_TASKS]
    # the server's embedding backend and vector cache (library/serving/active_set.py), with the step signal off
    ranker = Ranker(cache=serving._ranker().cache, config=description_config())
    return measure(record=record, others=served.procedures, tasks=tasks, other_tasks=other_tasks, ranker=ranker)
