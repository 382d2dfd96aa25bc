"""Node 02 in the static export (kvviz/export): the default stream's next requests, one Add each."""

from __future__ import annotations

from kvviz.nodes.recipe import TRANSPORT, Control, Effect, Recipe, start_branch

ADDS = 8  # the recording holds this many Add requests of the default stream

def _branch(adds: int):
    def setup(state) -> None:
        start_branch(state)
        for _ in range(adds):
            state.add_request(settle=True)
    return setup


def recipe() -> Recipe:
    return Recipe(
        branches={f"a{k}": _branch(k) for k in range(ADDS + 1)},
        default="a0",
        controls=(Control("button", "do-add_request", "add"), Control("button", "do-reset", "reset"),
                  *TRANSPORT),
        vars={"adds": 0}, branch="a{adds}",
        actions={"add": Effect(count="adds", most=ADDS, play=True), "reset": Effect(reset=True)},
        live_only=("in-prompt", "in-request"),
        meta={"typed": {"param": "add", "prefix": "", "drop": ["add_gap"], "button": "add"}},
        key_actions={f"a{k + 1}": (f"a{k}", lambda s: s.add_request(settle=True)) for k in range(ADDS)},
    )
