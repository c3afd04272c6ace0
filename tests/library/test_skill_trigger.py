"""Does the skill trigger? (library/serving/skill_trigger.py): ranking by skill descriptions alone."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from library.models import RegressionCase
from library.serving.skill_trigger import description_records, measure, version_trigger
from library.skill_import.trigger import says_when_to_use

TAU2 = "tests/library/data/tau2_selection"


@pytest.mark.parametrize(
    "text, says",
    [
        ("Use when the customer asks for a refund above the agent's limit.", True),
        ("Refund over limit: a reviewed procedure of 4 steps. Use it when: The customer wants a refund.", True),
        ("Claude should use this skill whenever asked to write internal communications.", True),
        ("Toolkit for interacting with and testing local web applications using Playwright.", False),
        ("The customer asks for a refund above the agent's limit.", True),
        ("Toolkit for styling artifacts with a theme. There are 10 pre-set themes.", False),
    ],
)
def test_says_when_to_use(text, says):
    assert says_when_to_use(text) is says


def record(pid: str, when: str, intent: str) -> dict:
    return {"id": pid, "version": 1, "intent": intent, "appliesWhen": when, "steps": ["s"], "requiredTools": []}


def test_a_description_that_names_its_tasks_ranks_first_and_a_vague_one_does_not():
    others = [
        record("order.status", "The customer asks where the order is.", "order_status"),
        record("address.change", "The customer wants to change the delivery address.", "address"),
        record("refund.over_limit", "an old text that the version replaces", "refund"),
    ]
    tasks = [
        ("I want my money back for the broken blender, it cost 900 dollars", "regression case"),
        ("Please refund my order, the amount is above what you can approve", "labelled session"),
    ]
    other_tasks = ["Where is my parcel?", "Ship it to my new address please"]
    good = measure(
        record=record("refund.over_limit", "The customer asks for a refund of money for an order.", "case_a"),
        others=others,
        tasks=tasks,
        other_tasks=other_tasks,
    )
    assert (good.tasks, good.first, good.top3, good.competitors) == (2, 2, 2, 2)
    assert good.sources == {"regression case": 1, "labelled session": 1}
    assert good.wrongly_first == 0 and good.other_tasks == 2 and good.says_when
    vague = measure(
        record=record("refund.over_limit", "Handles several situations that come up.", "case_a"), others=others,
        tasks=tasks, other_tasks=other_tasks,
    )  # fmt: skip
    assert vague.first < good.first and vague.outranked_by and not vague.says_when


def test_description_records_keep_only_the_description():
    [only] = description_records([{**record("a.b", "When x.", "i"), "requiredTools": ["lookupOrder"]}])
    assert only["steps"] == [] and only["requiredTools"] == [] and "When x." in only["appliesWhen"]


@pytest.mark.django_db
def test_a_version_is_measured_on_its_intents_cases(candidate, other_procedure, agent, intent):
    RegressionCase.objects.create(agent=agent, intent=intent, task="Refund 900 dollars for order 12, above my limit")
    RegressionCase.objects.create(agent=agent, intent=agent.intents.get(name="order_status"), task="Where is my order?")
    result = version_trigger(candidate)
    assert result.label == "refund.over_limit v1" and result.tasks == 1 and result.other_tasks == 1
    assert result.sources == {"regression case": 1}


@pytest.mark.django_db
def test_eval_selection_description_only_on_tau2_airline():
    out = io.StringIO()
    call_command(
        "eval_selection", f"{TAU2}/airline.jsonl", library=f"{TAU2}/library/tau2_airline", description_only=True,
        json=True, stdout=out,
    )  # fmt: skip
    data = json.loads(out.getvalue())
    assert data["queries"] == 27 and data["config"]["use_steps"] is False
    assert 0.0 < data["methods"]["configured"]["metrics"]["P@1"] <= 1.0
