"""The recorded nodes' recipes (kvviz/nodes/recipe.py), by node key, from the registry."""

from __future__ import annotations

from kvviz.nodes import NODES
from kvviz.nodes.recipe import Recipe


def recipes() -> dict[str, Recipe]:
    """node key -> its recipe, for every node of the registry that has one, in page order."""
    return {n.key: n.recording() for n in NODES if n.recording is not None}
