"""The recorded nodes' recipes (kvviz/nodes/recipe.py), by node key, from the registry."""

from __future__ import annotations

from kvviz.nodes import NODES
from kvviz.nodes.recipe import Recipe


def recipes() -> dict[str, Recipe]:
    """node key -> its recipe, for every node of the registry that has one, in page order."""
    return {n.key: n.recipe() for n in NODES if n.recipe is not None}
