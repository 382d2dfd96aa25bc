"""The lesson's nodes, in page order: the one registry that the page, the URL code, the
recorded lesson, the tests and the benchmarks iterate (docs/architecture.md, "Adding a node").

Each node is a package kvviz/nodes/<key>/ (scenario, state, view, URL fields, prose and
metric cards) whose `NODE` is listed here. Nothing below the page imports this module: what a
node's view needs of the others (the outline) is handed to it.
"""

from dataclasses import replace

from kvviz.nodes import explain, fragmentation, paging, radix, vllm
from kvviz.nodes.spec import Node

_ORDER: tuple[Node, ...] = (fragmentation.NODE, paging.NODE, radix.NODE, vllm.NODE, explain.NODE)
# What a view needs of the others (its back and continue links, their numbers): handed to it by
# `Node.new_view`, so no view imports this registry.
OUTLINE: tuple[tuple[str, str, str], ...] = tuple((n.key, n.number, n.title) for n in _ORDER)
NODES: tuple[Node, ...] = tuple(replace(n, outline=OUTLINE) for n in _ORDER)
LIVE: tuple[Node, ...] = tuple(n for n in NODES if n.live)
BY_KEY: dict[str, Node] = {n.key: n for n in NODES}
KEYS: tuple[str, ...] = tuple(BY_KEY)
