"""Node 03 in the static export (kvviz/export): prefix sharing off and on."""

from __future__ import annotations

from kvviz.nodes.recipe import TRANSPORT, VALUE, Control, Effect, Recipe, start_branch


def _branch(sharing: bool):
    def setup(state) -> None:
        start_branch(state)
        state.sharing = sharing
    return setup


def recipe() -> Recipe:
    return Recipe(
        branches={"s0": _branch(False), "s1": _branch(True)},
        default="s0",
        controls=(Control("checkbox", "sharing", "sharing"), Control("button", "do-reset", "reset"),
                  *TRANSPORT),
        vars={"sharing": 0}, branch="s{sharing}",
        actions={"sharing": Effect(set={"sharing": VALUE}), "reset": Effect(reset=True)},
        live_only=("in-question", "do-add_request", "do-release_oldest", "do-fill_pool"),
        meta={"typed": {"param": "op", "prefix": "ask:", "drop": ["op_gap"], "button": "do-add_request"}},
        key_actions={"s1": ("s0", lambda s: setattr(s, "sharing", True))},
    )
