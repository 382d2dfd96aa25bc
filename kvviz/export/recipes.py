"""What the static export records for each live node, and what its controls do in the recording.

A recipe names the node's branches (set-ups whose every engine step is recorded, from the
settled end back to the start), the branch the page opens on, and its controls: each control is
found in the page's Bokeh document by its label, and acts on the player (kvviz/export/player.py)
as `action` (a name the player's per-node controller understands). Controls that need the live
engine (typing a prompt, questions of one's own) are listed in `live_only`: shown disabled.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvviz.nodes.fragmentation.state import FragmentationState
from kvviz.nodes.paging.scenario import PagingScenario

PAGING_ADDS = 8  # node 02's recording: the default stream's next 8 requests, one Add request each


@dataclass(frozen=True)
class Control:
    kind: str  # "button" (click), "slider" (value), "checkbox" (active), "select" (value)
    label: str  # its label (a button's text, a slider's title, a checkbox's label)
    action: str  # what the player does: see CONTROLLERS in player.py


@dataclass(frozen=True)
class Recipe:
    branches: dict  # key -> setup(state): the branch's settled end
    default: str
    controls: tuple[Control, ...] = ()
    live_only: tuple[str, ...] = ()  # labels (buttons, inputs) disabled in the recording
    meta: dict = field(default_factory=dict)  # facts the controller needs (e.g. adds per branch)


def _fresh(state) -> None:
    state.reset()
    state.notice = ""  # (the recording opens on the state, not on Reset's message)


def _fragmentation(reserve: int, freed: bool):
    def setup(state) -> None:
        _fresh(state)
        state.reserve = reserve
        if freed:
            state.free_r2()
    return setup


def _paging(adds: int):
    def setup(state) -> None:
        _fresh(state)
        for _ in range(adds):
            state.add_request(settle=True)
    return setup


def _radix(sharing: bool):
    def setup(state) -> None:
        _fresh(state)
        state.sharing = sharing
    return setup


TRANSPORT = (
    Control("button", "⟲ Rewind", "rewind"), Control("button", "◀ Step back", "back"),
    Control("button", "Step ▶", "step"), Control("button", "▶ Play", "play"),
    Control("select", "Speed", "speed"),
)


def recipes() -> dict[str, Recipe]:
    lo, hi = FragmentationState.param.reserve.bounds
    default_reserve = FragmentationState.param.reserve.default
    return {
        "fragmentation": Recipe(
            branches={f"r{r}f{int(f)}": _fragmentation(r, f) for r in range(lo, hi + 1) for f in (False, True)},
            default=f"r{default_reserve}f0",
            controls=(Control("slider", "Reserved length (blocks)", "reserve"),
                      Control("button", "Free R2", "free_r2"), Control("button", "Reset", "reset"), *TRANSPORT),
            meta={"default_reserve": default_reserve},
        ),
        "paging": Recipe(
            branches={f"a{k}": _paging(k) for k in range(PAGING_ADDS + 1)},
            default="a0",
            controls=(Control("button", "Add request", "add"), Control("button", "Reset", "reset"), *TRANSPORT),
            live_only=("Prompt (plain text, up to 200 characters)", "Block table of"),
            meta={"adds": PAGING_ADDS, "initial": PagingScenario.NUM_INITIAL},
        ),
        "radix": Recipe(
            branches={"s0": _radix(False), "s1": _radix(True)},
            default="s0",
            controls=(Control("checkbox", "Prefix sharing", "sharing"), Control("button", "Reset", "reset"),
                      *TRANSPORT),
            live_only=("Your question, after the shared system prompt (up to 200 characters)", "Add request",
                       "Release oldest", "Fill the pool"),
        ),
    }
