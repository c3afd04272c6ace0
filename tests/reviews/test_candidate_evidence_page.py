"""What the miner's within-task evidence says, asserted on the rendered candidate page (issue 39
item 17): the "a tool list, not an order" badge, the gate/backtest disagreement with the backtest's
"contradicted" badge, and one line per model family. The records have the shape
library/mining/drafting.py writes; the disagreement's text is library/mining/evidence.py's."""

import re

import pytest
from django.urls import reverse

from library import services
from library.mining.evidence import agreement
from library.models import Source

pytestmark = pytest.mark.django_db


def _within(followers: tuple[int, int], others: tuple[int, int], ratio, low, high, p: float, **extra) -> dict:
    return {
        "followers": {"count": followers[0], "of": followers[1]},
        "others": {"count": others[0], "of": others[1]},
        "riskRatio": ratio,
        "low": low,
        "high": high,
        "pValue": p,
        **extra,
    }


def _propose(agent, intent, *, tool_list: bool = True, contradicted: bool = True):
    gate = _within((40, 52), (12, 52), 3.33, 1.9, 5.8, 2e-9, credible=True, tasks=52, strata=52, tests=1)
    back = {
        "verdict": "does not confirm" if contradicted else "supports",
        "contradicted": contradicted,
        "heldBackSessions": 30,
        "heldBackTasks": 30,
        "followers": {"count": 9, "of": 15, "rate": 0.6, "low": 0.36, "high": 0.8},
        "others": {"count": 10, "of": 15, "rate": 0.67, "low": 0.42, "high": 0.85},
        "pValue": 0.71,
        "withinTask": _within((9, 15), (10, 15), 0.9, 0.5, 1.6, 0.71, method="Mantel-Haenszel"),
    }
    evidence = {
        "support": 40,
        "resolved": 52,
        "withinTask": gate,
        "backtest": back,
        "agreement": agreement(gate, back),
        "orderBeyondTools": {
            "tools": _within((40, 45), (12, 59), 4.2, 2.5, 7.1, 1e-12),
            "order": _within((30, 34), (10, 11), 0.97, 0.8, 1.2, 0.6),
            "toolList": tool_list,
        },
        "byModelFamily": [
            {"family": "gpt", **_within((20, 22), (4, 20), 4.5, 1.9, 11.0, 1e-5), "holds": True},
            {"family": "llama", **_within((8, 14), (6, 16), 1.4, 0.7, 2.9, 0.2), "holds": False, "direction": "same"},
            {
                "family": "mistral",
                **_within((2, 9), (5, 10), 0.4, 0.1, 1.5, 0.9),
                "holds": False,
                "direction": "opposite",
            },
        ],
    }
    return services.procedure_propose(
        agent=agent,
        intent=intent,
        key="look.then.take",
        applies_when="The task asks to find an object and put it somewhere.",
        steps=["Call goto(…).", "Call take(…).", "Call put(…)."],
        required_tools=["lookupOrder"],
        forbidden_actions=[],
        evidence=evidence,
        source=Source.MINED,
        actor_label="miner",
    )


@pytest.fixture
def alfworld_like_candidate(agent, intent):
    return _propose(agent, intent)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _element(html: str, element_id: str) -> str:
    match = re.search(rf'<(\w+)[^>]*id="{element_id}"[^>]*>(.*?)</\1>', html, re.S)
    assert match, f"#{element_id} is not on the page"
    return match.group(2)


def test_the_candidate_page_shows_the_tool_list_badge_the_disagreement_and_each_model_family(
    reviewer_client, alfworld_like_candidate
):
    response = reviewer_client.get(reverse("reviews:version", kwargs={"pk": alfworld_like_candidate.pk}))
    assert response.status_code == 200
    html = response.content.decode()
    beyond = _element(html, "evidence-order-beyond-tools")
    assert '<span class="badge badge-warn">a tool list, not an order</span>' in beyond
    assert "Tools, in any order: 40 of 45 sessions that call all of them succeeded vs 12 of 59" in _text(beyond)
    disagreement = _text(_element(html, "evidence-disagreement"))
    assert disagreement.startswith("The gate and the backtest disagree: the mined sessions show the order credibly")
    assert "(does not confirm)" in disagreement
    backtest = _element(html, "evidence-backtest")
    assert '<span class="badge badge-warn">contradicted</span>' in backtest
    families = re.findall(r"<li( class=\"holds\")?><strong>([^<]+)</strong>: ([^<]+)</li>", html)
    assert [(bool(holds), family) for holds, family, _ in families] == [
        (True, "gpt"),
        (False, "llama"),
        (False, "mistral"),
    ]
    lines = {family: text for _, family, text in families}
    assert lines["gpt"].startswith("20 of 22 sessions that follow it succeeded vs 4 of 20 that do not")
    assert lines["gpt"].endswith("— holds")
    assert lines["llama"].endswith("— same direction, not credible")
    assert lines["mistral"].endswith("— opposite direction")


def test_an_order_that_adds_something_and_a_backtest_that_agrees_get_no_badge(reviewer_client, agent, intent):
    candidate = _propose(agent, intent, tool_list=False, contradicted=False)
    assert candidate.evidence["agreement"]["agree"]
    html = reviewer_client.get(reverse("reviews:version", kwargs={"pk": candidate.pk})).content.decode()
    assert "a tool list, not an order" not in html and 'id="evidence-disagreement"' not in html
    assert '<span class="badge badge-warn">contradicted</span>' not in html
    assert 'id="evidence-order-beyond-tools"' in html
