"""What the static export records for a node, and what its controls do in the recording: the
recipe types each node's `recording.py` fills in (the export, kvviz/export/, reads them).

Each recorded node's package has `recording.py` with a `recipe()`, named by its registry entry
(`Node.recording`): its branches (set-ups whose every engine step is recorded, from the settled
end back to the start), the branch the page opens on, its controls (each found in the page's
Bokeh document by its label, acting on the player as `action`), the JavaScript controller that
says what its own actions do (`controller`: an object of functions `(node, value) => ...` over
the player's node: `go(branch, index)`, `play(on)`, its `meta` and `rec`), and the controls that
need a live engine (`live_only`: shown disabled). The transport's actions are the player's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Control:
    kind: str  # "button" (click), "slider" (value), "checkbox" (active), "select" (value)
    label: str  # its label (a button's text, a slider's title, a checkbox's label)
    action: str  # what the player does: a transport action or one of the recipe's controller


@dataclass(frozen=True)
class Recipe:
    branches: dict  # key -> setup(state): the branch's settled end
    default: str
    controls: tuple[Control, ...] = ()
    controller: str = "{}"  # a JavaScript object literal: action -> (node, value) => ...
    live_only: tuple[str, ...] = ()  # labels (buttons, inputs) disabled in the recording
    meta: dict = field(default_factory=dict)  # facts the controller needs (e.g. adds per branch)
    # the node's key action (the one a prediction is about): target branch -> (the branch it is
    # taken from, the action on the state); the page resolves a prediction from these outcomes
    keys: dict = field(default_factory=dict)


TRANSPORT = (
    Control("button", "⟲ Rewind", "rewind"), Control("button", "◀ Step back", "back"),
    Control("button", "Step ▶", "step"), Control("button", "▶ Play", "play"),
    Control("select", "Speed", "speed"),
)


def fresh(state) -> None:
    """A branch starts from the node's defaults, with no message (the page opens on the state)."""
    state.reset()
    state.notice = ""
