"""What the static export records for a node, and what its controls do in the recording: the
recipe types each node's `recording.py` fills in (the export, kvviz/export/, reads them).

Each recorded node's package has `recording.py` with a `recipe()`, named by its registry entry
(`Node.recipe`): its branches (set-ups whose every engine step is recorded, from the settled
end back to the start), the branch the page opens on, its controls (each found in the page's
Bokeh document by its id: the class `kv-<id>` its view gives it, never its label; acting on the
player as `action`), what its own actions do, as
data (`vars`, `branch`, `actions`: one generic player, kvviz/export/player_recipe.js, runs them; no
node has JavaScript of its own), and the controls that need a live engine (`live_only`: shown
disabled). The transport's actions are the player's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Control:
    kind: str  # "button" (click), "slider" (value), "checkbox" (active), "select" (value)
    id: str  # its id: the view gives the widget the class `kv-<id>` (a button `kv-do-<its method>`)
    action: str  # what the player does: a transport action or one of the recipe's `actions`


VALUE = "$value"  # in an `Effect.set`: the control's own value (a slider's number, a checkbox's state)


@dataclass(frozen=True)
class Effect:
    """What one of a node's own actions does to the page's player, as data: the player's
    variables change (`reset`: all back to their defaults; `set`: var -> a constant or VALUE;
    `count`: one var counted up by one, at most `most`, the new branch shown from its first step
    after the old one's end, as an added request starts live), then the branch the recipe's
    `branch` template names is shown (at its end; `replay`: from its first state), playing if
    `play`."""

    reset: bool = False
    set: dict = field(default_factory=dict)
    count: str | None = None
    most: int = 0
    replay: bool = False
    play: bool = False


@dataclass(frozen=True)
class Recipe:
    branches: dict  # key -> setup(state): the branch's settled end
    default: str
    controls: tuple[Control, ...] = ()
    # the player's variables (name -> default), the branch they name ("r{reserve}f{freed}"), and
    # what each of the node's own actions does (action -> Effect)
    vars: dict = field(default_factory=dict)
    branch: str = ""
    actions: dict = field(default_factory=dict)
    live_only: tuple[str, ...] = ()  # ids of the controls that need an engine (disabled on a static page)
    meta: dict = field(default_factory=dict)  # facts the player needs (e.g. which box is typed into)
    # the node's key action (the one a prediction is about): target branch -> (the branch it is
    # taken from, the action on the state); the page resolves a prediction from these outcomes
    key_actions: dict = field(default_factory=dict)
    # what a branch's state holds of the player's variables, read from the state its set-up made
    # (variable -> state -> value): a key action that did nothing there (Free R2 at a length with no
    # R2) leaves the variable as it was, as the live lesson does
    held: dict = field(default_factory=dict)


TRANSPORT = (
    Control("button", "do-rewind", "rewind"), Control("button", "do-step_back", "back"),
    Control("button", "do-step", "step"), Control("button", "do-toggle_play", "play"),
    Control("select", "speed", "speed"),
)


def start_branch(state, settings: dict | None = None) -> None:
    """A branch starts from the node's defaults, with no message (the page opens on the state).
    `settings`: what the node's `reset` takes from a link about to be restored (its url module's
    `start`): the engine is built once, as the link has it."""
    state.reset(**(settings or {}))
    state.notice = ""
