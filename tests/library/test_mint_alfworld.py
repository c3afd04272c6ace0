"""Real data with repeated tasks: MINT's ALFWorld sessions (public_data/mint-alfworld, README there),
89 household tasks each attempted by the same 52 models. Split by task: per intent the first two
thirds of the sorted task keys are mined, the rest judged (`mine --hold-out tasks`, backtest share
1/3), so no task sits on both sides. docs/mining.md shows the same run with its figures."""

import io
import json
from collections import defaultdict

import pytest
from django.core.management import call_command

from library.mining.evidence_statistics import ratio_number
from library.models import Agent, MiningRun
from tests.conftest import MINT_ALFWORLD_DIR, require_mint_alfworld

DATA = MINT_ALFWORLD_DIR / "sessions.jsonl"

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def run():
    require_mint_alfworld()
    out = io.StringIO()
    call_command("import_sessions", str(DATA), "--agent", "alfworld", "--create-agent", "--no-progress", stdout=out)
    assert "alfworld: 4628 stored" in out.getvalue()
    call_command(
        "agent_settings",
        "alfworld",
        "--support-threshold",
        "3",
        "--backtest-share",
        "0.3333333333333333",
        stdout=io.StringIO(),
    )
    printed = io.StringIO()
    call_command("mine", "--agent", "alfworld", "--hold-out", "tasks", stdout=printed)
    run = MiningRun.objects.get(agent__name="alfworld")
    run.printed = printed.getvalue()
    return run


def _split():
    """intent → (mined task keys, judged task keys): the first two thirds of the sorted keys, the rest."""
    keys = defaultdict(set)
    with DATA.open() as handle:
        for line in handle:
            item = json.loads(line)
            keys[item["intent"]].add(item["task_key"])
    split = {}
    for intent, found in keys.items():
        ordered = sorted(found)
        mined = len(ordered) * 2 // 3
        split[intent] = (set(ordered[:mined]), set(ordered[mined:]))
    return split


def test_candidates_for_most_intents_each_confirmed_within_tasks_on_the_judged_tasks(run):
    agent = Agent.objects.get(name="alfworld")
    split = _split()
    candidates = list(run.versions.select_related("procedure__intent"))
    assert len({v.procedure.intent.name for v in candidates}) >= 4, run.printed
    for version in candidates:
        ev = version.evidence
        back = ev["backtest"]
        judged = back["withinTask"]
        # the same estimator as the gate, on sessions of tasks the miner never saw
        assert ev["withinTask"]["credible"] and ev["withinTask"]["method"] == judged["method"]
        assert ratio_number(judged) > 1 and judged["low"] > 1, (version.procedure.key, judged)
        assert back["verdict"] == "supports" and ev["agreement"]["agree"]
        assert back["heldBackTasksAlsoMined"] == 0
        mined, held = split[version.procedure.intent.name]
        assert back["heldBackTasks"] == len(held) and ev["withinTask"]["tasks"] <= len(mined)
        # what the order adds beyond the tool list, shown for each
        beyond = ev["orderBeyondTools"]
        assert beyond["tools"]["followers"]["of"] and beyond["order"]["followers"]["of"] and "toolList" in beyond
        # and per model family, whether it holds within each
        families = {f["family"] for f in ev["byModelFamily"]}
        assert {"gpt", "claude", "llama"} <= families
        assert all(
            "holds" in f and f["direction"] in ("same", "opposite", "none", "not compared") for f in ev["byModelFamily"]
        )
    assert agent.sessions.count() == 4628


def test_pick_two_obj_is_shown_whole_never_as_a_fragment(run):
    [entry] = [e for e in run.report if e["intent"] == "pick_two_obj"]
    if entry["status"] == "a workflow: belongs in code":
        assert len(entry["skeleton"]) > 8 and "more than the 8 a procedure may have" in entry["reason"]
    else:
        steps = entry.get("steps") or run.versions.get(procedure__intent__name="pick_two_obj").steps
        assert len(steps) <= 8 and (len(entry["skeleton"]) <= 8 or any(s.startswith("Repeat ") for s in steps))
    # the group is the intent's largest: no shorter fragment was put in its place
    assert entry["skeleton"] == [
        "goto",
        "open",
        "take",
        "goto",
        "put",
        "open",
        "put",
        "goto",
        "open",
        "take",
        "goto",
        "put",
    ]
