"""Producer → consumer links between coding procedures, and a layout to draw them (pure Python).

A coding procedure consumes the artefacts its preconditions name and produces those its
postconditions name; artefacts are the role placeholders ({{script}}, {{source_file}},
{{test_file}}, {{test_label}} …). A procedure that produces an artefact another consumes is linked
to it (producer → consumer). Hubs — procedures linked to more than `hub_share` (15 %) of the others —
are cut (drawn, but without their links) so that one generic procedure ("edit a source file") does
not connect everything; the rule applies from MIN_NODES_FOR_HUBS procedures on, since in a graph of
three every link is a third of the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# the graph itself is the client's (selection pulls in producers with it): one implementation
from procmem_client.coding import HUB_SHARE, MIN_NODES_FOR_HUBS, Edge, Graph, Node, artefacts, build_graph, node_for  # noqa: F401


@dataclass(frozen=True)
class Placed:
    key: str
    x: float
    y: float
    hub: bool
    label_x: float
    label_anchor: str


@dataclass(frozen=True)
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    title: str


@dataclass
class Drawing:
    width: int
    height: int
    nodes: list[Placed]
    lines: list[Line]


def layout(graph: Graph, *, width: int = 640, radius: float = 10.0) -> Drawing:
    """Nodes on a circle (sorted by key, so the picture is stable), straight arrows between them,
    each arrow stopping at the consumer's rim."""
    count = len(graph.nodes)
    height = 120 if count <= 1 else 360
    cx, cy = width / 2, height / 2
    ring = 0 if count <= 1 else min(width, height) / 2 - 50
    places: dict[str, tuple[float, float]] = {}
    placed: list[Placed] = []
    for index, node in enumerate(graph.nodes):
        angle = -math.pi / 2 + 2 * math.pi * index / max(count, 1)
        x, y = round(cx + ring * math.cos(angle), 1), round(cy + ring * math.sin(angle), 1)
        places[node.key] = (x, y)
        right = math.cos(angle) >= -1e-9
        placed.append(
            Placed(
                node.key,
                x,
                y,
                node.key in graph.hubs,
                round(x + (radius + 4) * (1 if right else -1), 1),
                "start" if right else "end",
            )
        )
    lines = []
    for edge in graph.edges:
        (x1, y1), (x2, y2) = places[edge.producer], places[edge.consumer]
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        shorten = (radius + 4) / length
        lines.append(
            Line(
                round(x1 + (x2 - x1) * shorten, 1),
                round(y1 + (y2 - y1) * shorten, 1),
                round(x2 - (x2 - x1) * shorten, 1),
                round(y2 - (y2 - y1) * shorten, 1),
                f"{edge.producer} produces {', '.join(edge.artefacts)} that {edge.consumer} needs",
            )
        )
    return Drawing(width=width, height=height, nodes=placed, lines=lines)
