"""Node 01 in the static export (kvviz/export): every reserved length, with and without Free R2."""

from __future__ import annotations

from kvviz.nodes.fragmentation.state import FragmentationState
from kvviz.nodes.recipe import TRANSPORT, VALUE, Control, Effect, Recipe, start_branch


def _branch(reserve: int, freed: bool):
    def setup(state) -> None:
        start_branch(state)
        state.reserve = reserve
        if freed:
            state.free_r2()
    return setup


def recipe() -> Recipe:
    lo, hi = FragmentationState.param.reserve.bounds
    default = FragmentationState.param.reserve.default
    return Recipe(
        branches={f"r{r}f{int(f)}": _branch(r, f) for r in range(lo, hi + 1) for f in (False, True)},
        default=f"r{default}f0",
        controls=(Control("slider", "reserve", "reserve"), Control("button", "do-free_r2", "free_r2"),
                  Control("button", "do-reset", "reset"), *TRANSPORT),
        vars={"reserve": default, "freed": 0}, branch="r{reserve}f{freed}",
        actions={"reserve": Effect(set={"reserve": VALUE}), "free_r2": Effect(set={"freed": 1}),
                 "reset": Effect(reset=True)},
        key_actions={f"r{r}f1": (f"r{r}f0", lambda s: s.free_r2()) for r in range(lo, hi + 1)},
        held={"freed": lambda s: int(s.freed_r2)},
    )
