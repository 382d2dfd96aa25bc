"""Node 03 in the static export (kvviz/export): prefix sharing off and on."""

from __future__ import annotations

from kvviz.nodes.radix import text
from kvviz.nodes.radix.state import RadixState
from kvviz.nodes.recipe import TRANSPORT, VALUE, Control, Effect, Recipe, fresh


def _branch(sharing: bool):
    def setup(state) -> None:
        fresh(state)
        state.sharing = sharing
    return setup


def recipe() -> Recipe:
    return Recipe(
        branches={"s0": _branch(False), "s1": _branch(True)},
        default="s0",
        controls=(Control("checkbox", RadixState.param.sharing.label, "sharing"), Control("button", "Reset", "reset"), *TRANSPORT),
        vars={"sharing": 0}, branch="s{sharing}",
        actions={"sharing": Effect(set={"sharing": VALUE}), "reset": Effect(reset=True)},
        live_only=(text.QUESTION_LABEL, "Add request", "Release oldest", "Fill the pool"),
        meta={"typed": {"param": "op", "prefix": "ask:", "drop": ["op_gap"], "button": "Add request"}},
        keys={"s1": ("s0", lambda s: setattr(s, "sharing", True))},
    )
