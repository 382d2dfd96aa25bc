"""The lesson's nodes, in page order: the one registry that the page, the URL code, the
explain node, the tests and the benchmarks iterate (docs/architecture.md, "Adding a node").

Each node is a package kvviz/nodes/<key>/ (scenario, state, view, URL fields, prose and
metric cards) whose `NODE` is listed here.
"""

from kvviz.nodes import explain, fragmentation, paging, radix, vllm
from kvviz.nodes.spec import Node

NODES: tuple[Node, ...] = (fragmentation.NODE, paging.NODE, radix.NODE, vllm.NODE, explain.NODE)
LIVE: tuple[Node, ...] = tuple(n for n in NODES if n.live)
BY_KEY: dict[str, Node] = {n.key: n for n in NODES}
KEYS: tuple[str, ...] = tuple(BY_KEY)
