"""The page's player: replays a node's recording (kvviz/export/record.py) in the browser.

`PLAYER_JS` (player.js beside this file, with the player's other files joined after it:
`PLAYER_FILES`) runs once per page. Each recorded node registers its recording and what its own
actions do, as data (its recipe's `vars`, `branch`, `actions`); the node's own Bokeh widgets call
`window.kvvizPlayer.act(node, action, value)` through CustomJS callbacks (`wire`). A control is
found by its id: the class `kv-<id>` its view gives it (never its label or placeholder). Controls
that need a live engine either have the server's engine run them (`wire_live`: a page served
beside the live lesson; the answer is played like the recording) or are shown disabled
(`disable`: a copy with no server). A node's predictions are resolved in the page from the
engine's recorded outcomes (`predictions`, `wire_predictions`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import Any

from bokeh.model import Model
from bokeh.models import CustomJS

from kvviz.controls.prediction import CHOICE, CHOSEN
from kvviz.export.page_models import classes, has
from kvviz.nodes.recipe import Control, Recipe
from kvviz.state import predict
from kvviz.web import __file__ as web_file
from kvviz.web.js_source import js_source

# The player's files, joined into one script in this order (player.js, the core, first: the next four
# add its `Node`'s methods, then the hand-in, then a `#<node>` link's scroll), after the finder of
# the page's sections (`sections`), which two of them and classroom.js use.
PLAYER_FILES = ("player.js", "player_recipe.js", "player_live.js", "player_predict.js", "player_view.js",
                "player_handin.js", "player_scroll.js")
PLAYER_JS = js_source(web_file, "find_sections.js") + "\n" + js_source(__file__, *PLAYER_FILES)
# The class the teacher runs, on a served page, in the same script after PLAYER_JS (its `sections`):
# set up with kvviz/handin/classroom.py's `browser_config`.
CLASSROOM_JS = js_source(__file__, "classroom.js")


def by_class(models: Iterable[Model], css_class: str) -> Model:
    """The one model among `models` with this class (LookupError when there is none, or more)."""
    found = [m for m in models if css_class in classes(m)]
    if len(found) != 1:
        raise LookupError(f"{len(found)} models with class {css_class!r} in the page")
    return found[0]


def _find(models: Iterable[Model], control: Control) -> Model:
    """The Bokeh model of a control among `models` (a node's), by its id."""
    return by_class(models, f"kv-{control.id}")


def wire(models: Iterable[Model], node: str, controls: Iterable[Control]) -> Model | None:
    """Attach each control among `models` (the node's) to the player; returns the Play button's
    model (its label changes)."""
    play = None
    for control in controls:
        model = _find(models, control)
        call = f"window.kvvizPlayer.act({node!r}, {control.action!r}"
        if control.kind == "button":
            model.js_on_event("button_click", CustomJS(code=call + ")"))
            if control.action == "play":
                play = model
        elif control.kind == "slider":
            model.js_on_change("value", CustomJS(code=call + ", cb_obj.value)"))
        elif control.kind == "checkbox":
            model.js_on_change("active", CustomJS(code=call + ", cb_obj.active)"))
        elif control.kind == "select":
            model.js_on_change("value", CustomJS(code=call + ", Number(cb_obj.value))"))  # (ms per step)
    return play


def wire_live(models: Iterable[Model], node: str, ids: Collection[str]) -> None:
    """The controls that need a live engine (by id) send the node's state to the server, whose
    engine runs it (kvviz/serve/live.py): a typed prompt is carried as the link's last request
    (the recipe's `typed`); a button or a select is done by the server to the node's own widget
    of that id."""
    for model in _live_controls(models, ids, predictions=False):
        kind = type(model).__name__
        cid = next(c[3:] for c in classes(model) if c[3:] in ids)
        call = f"window.kvvizPlayer.act({node!r}, 'do', {{id: {cid!r}"
        if "TextInput" in kind:  # (Enter runs it; what is typed is kept for the box's own button)
            model.js_on_event("value_submit",
                              CustomJS(code=f"window.kvvizPlayer.act({node!r}, 'typed', cb_obj.value)"))
            model.js_on_change("value_input",
                               CustomJS(code=f"window.kvvizPlayer.act({node!r}, 'draft', "
                                             "cb_obj.value_input)"))
        elif "Button" in kind:
            model.js_on_event("button_click", CustomJS(code=call + "})"))
        elif hasattr(model, "value"):  # (its model: the player tells the student's choice from its own echo)
            model.js_on_change("value", CustomJS(code=call + ", value: cb_obj.value, model: cb_obj.id})"))


def _is_prediction(model: Model) -> bool:
    return any(c in PREDICTION_CLASSES for c in classes(model))


def _live_controls(models: Iterable[Model], ids: Collection[str],
                   predictions: bool = True) -> Iterator[Model]:
    for model in models:
        if not has(model, "disabled"):
            continue
        if any(c[3:] in ids for c in classes(model) if c.startswith("kv-")) or (predictions
                                                                                and _is_prediction(model)):
            yield model


def wire_predictions(models: Iterable[Model], node: str) -> dict[str, Any]:
    """A node's prediction controls resolved in the page from the recorded outcomes
    (player_predict.js: `predict`): a choice button commits its choice, the number box its number
    (Enter, or the Lock button). Returns the ids of the panel's status line, of the panel, and of
    each choice's button (`choices`: the player shows the one locked in pressed)."""
    ids: dict[str, Any] = {"choices": {}}
    for model in models:
        cls = classes(model)
        call = f"window.kvvizPlayer.act({node!r}, 'predict'"
        choice = next((c[len(CHOICE) + 1:] for c in cls if c.startswith(CHOICE + "-")), None)
        if choice is not None:
            model.js_on_event("button_click", CustomJS(code=call + f", {choice!r})"))
            ids["choices"][choice] = model.id
        elif "kv-predict-lock" in cls:
            model.js_on_event("button_click", CustomJS(code=call + ", null)"))
        elif NUMBER in cls:
            model.js_on_change("value_input",
                               CustomJS(code=f"window.kvvizPlayer.act({node!r}, 'predict_typing', "
                                             "cb_obj.value_input)"))
            model.js_on_change("value", CustomJS(code=call + ", cb_obj.value)"))
        elif "kv-predict-status" in cls:
            ids["status"] = model.id
        elif "kv-predict" in cls:
            ids["panel"] = model.id
    return ids


def predictions(state: Any, recipe: Recipe) -> dict[str, Any]:
    """What the page needs to resolve a prediction without a server: the question asked at each
    branch's settled end (None: none), and for each key action the engine's outcome and its
    arithmetic, found by driving the real state through it with a prediction pending."""
    questions: dict[str, Any] = {}
    outcomes: dict[str, Any] = {}
    held: dict[str, Any] = {}
    for key, setup in recipe.branches.items():
        setup(state)
        if recipe.held:
            held[key] = {name: value(state) for name, value in recipe.held.items()}
        q = state.question()
        questions[key] = (None if q is None
                          else {"text": q.text, "action": q.action, "choices": list(q.choices)})
    for target, (source, act) in recipe.key_actions.items():
        recipe.branches[source](state)
        q = state.question()
        if q is None or not state.predict(q.choices[0] if q.choices else "0"):
            continue
        act(state)
        if state.predictions:
            entry = state.predictions[-1]
            outcomes[target] = {"outcome": entry.outcome, "why": entry.why}
    # (what the page says when a locked prediction's question changed, and the pressed choice's class)
    return {"questions": questions, "outcomes": outcomes, "cleared": predict.CLEARED, "chosen": CHOSEN,
            "held": held}


# Every node's predict-then-run controls need a live engine to answer (kvviz/controls/prediction.py):
# its choice buttons (CHOICE-<choice>), its number box and its Lock button, by class.
NUMBER = "kv-predict-number"
PREDICTION_CLASSES = (CHOICE, NUMBER, "kv-predict-lock")


def disable(models: Iterable[Model], ids: Collection[str]) -> None:
    """Show the controls among `models` that need the live engine disabled (by id), and every
    prediction control."""
    for model in _live_controls(models, ids):
        control: Any = model  # (a widget's model: every one _live_controls finds has `disabled`)
        control.disabled = True
