"""Node 03 in the static export (kvviz/export): prefix sharing off and on."""

from __future__ import annotations

from kvviz.nodes.radix import text
from kvviz.nodes.radix.state import RadixState
from kvviz.nodes.recipe import TRANSPORT, Control, Recipe, fresh

CONTROLLER = """{
  sharing(n, on) { n.go(on ? "s1" : "s0"); },
  reset(n) { n.go("s0"); },
}"""


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
        controller=CONTROLLER,
        live_only=(text.QUESTION_LABEL, "Add request", "Release oldest", "Fill the pool"),
        meta={"typed": {"param": "op", "prefix": "ask:", "drop": ["op_gap"]}},
        keys={"s1": ("s0", lambda s: setattr(s, "sharing", True))},
    )
