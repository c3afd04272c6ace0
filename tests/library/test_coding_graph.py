"""Producer → consumer links between coding procedures (library/coding/graph.py) and their picture
on the agent's operations page."""

import pytest
from django.urls import reverse

from library import services
from library.coding.graph import MIN_NODES_FOR_HUBS, Node, build_graph, layout, node_for
from library.models import Agent, Intent, Source


def test_a_procedure_producing_what_another_needs_points_at_it():
    reproduce = node_for("fix.reproduce", [], ["A reproduction script ({{script}})."])
    fix = node_for(
        "fix.edit",
        ["A script that reproduces the issue ({{script}}) fails."],
        ["The edited source file ({{source_file}})."],
    )
    review = node_for("fix.review", ["The edited source file ({{source_file}})."], [])
    graph = build_graph([review, fix, reproduce])
    assert [(e.producer, e.consumer, e.artefacts) for e in graph.edges] == [
        ("fix.edit", "fix.review", ("source_file",)),
        ("fix.reproduce", "fix.edit", ("script",)),
    ]
    assert graph.hubs == []
    drawing = layout(graph)
    assert len(drawing.nodes) == 3 and len(drawing.lines) == 2


def test_hubs_linked_to_more_than_fifteen_percent_of_the_others_are_cut():
    # one generic producer of {{source_file}} feeding every other procedure, plus one real pair
    nodes = [Node("edit.any", frozenset(), frozenset({"source_file"}))]
    nodes += [Node(f"use.{i}", frozenset({"source_file"}), frozenset()) for i in range(MIN_NODES_FOR_HUBS)]
    nodes += [
        Node("make.script", frozenset(), frozenset({"script"})),
        Node("run.script", frozenset({"script"}), frozenset()),
    ]
    graph = build_graph(nodes)
    assert graph.hubs == ["edit.any"]
    assert [(e.producer, e.consumer) for e in graph.edges] == [("make.script", "run.script")]
    assert sum(p.hub for p in layout(graph).nodes) == 1


@pytest.mark.django_db
def test_the_agent_page_draws_the_graph_for_coding_agents_only(client, admin_user, agent):
    coder = Agent.objects.create(name="coder", kind=Agent.Kind.CODING)
    intent = Intent.objects.create(agent=coder, name="resolve_issue")
    common = dict(
        agent=coder,
        intent=intent,
        applies_when="A bug report names a failing behaviour.",
        steps=["Search.", "Edit.", "Test."],
        required_tools=[],
        forbidden_actions=[],
        source=Source.MANUAL,
        actor_label="test",
        verify_command="pytest",
    )
    services.procedure_propose(key="fix.reproduce", postconditions=["A reproduction script ({{script}})."], **common)
    services.procedure_propose(key="fix.edit", preconditions=["A script ({{script}}) shows the bug."], **common)
    client.force_login(admin_user)
    page = client.get(reverse("reviews:ops_agent", args=[coder.name])).content.decode()
    assert 'id="coding-graph"' in page and "<svg" in page
    assert "fix.reproduce produces script that fix.edit needs" in page
    other = client.get(reverse("reviews:ops_agent", args=[agent.name])).content.decode()
    assert 'id="coding-graph"' not in other
