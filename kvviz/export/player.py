"""The page's player: replays a node's recording (kvviz/export/record.py) in the browser.

`PLAYER_JS` (player.js beside this file) runs once per page. Each recorded node registers its
recording and a controller; the node's own Bokeh widgets call `window.kvvizPlayer.act(node,
action, value)` through CustomJS callbacks (`wire`). Controls that need a live engine either
have the server's engine run them (`wire_live`: a page served beside the live lesson; the answer
is played like the recording) or are shown disabled (`disable`: a copy with no server).
"""

from __future__ import annotations

from pathlib import Path

from bokeh.models import CustomJS

from kvviz.nodes.recipe import Control

PLAYER_JS = (Path(__file__).with_name("player.js")).read_text(encoding="utf-8")


def _find(models, control: Control):
    """The Bokeh model of a control among `models` (a node's), by kind and label (its title for
    sliders and inputs)."""
    for model in models:
        kind = type(model).__name__
        if control.kind == "button" and "Button" in kind and getattr(model, "label", None) == control.label:
            return model
        if control.kind == "slider" and "Slider" in kind and getattr(model, "title", None) == control.label:
            return model
        if control.kind == "checkbox" and kind == "Checkbox" and getattr(model, "label", None) == control.label:
            return model
        if control.kind == "select" and kind.endswith("Select") and any(
                control.label in str(o) for o in getattr(model, "options", [])):
            return model
    raise LookupError(f"no {control.kind} labelled {control.label!r} in the page")


def wire(models, node: str, controls):
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


def wire_live(models, node: str, labels) -> None:
    """The controls that need a live engine (by label or title) send the node's state to the
    server, whose engine runs it (kvviz/export/live.py): a typed prompt is carried as the link's
    last request (the recipe's `typed`); a button or a select is done by the server to the
    node's own widget of that label."""
    for model in _live_controls(models, labels, predictions=False):
        kind = type(model).__name__
        label = getattr(model, "label", None) if "Button" in kind else getattr(model, "title", None)
        call = f"window.kvvizPlayer.act({node!r}, 'do', {{label: {label!r}"
        if "TextInput" in kind:  # (Enter runs it; what is typed is kept for the box's own button)
            model.js_on_event("value_submit", CustomJS(code=f"window.kvvizPlayer.act({node!r}, 'typed', cb_obj.value)"))
            model.js_on_change("value_input", CustomJS(code=f"window.kvvizPlayer.act({node!r}, 'draft', cb_obj.value_input)"))
        elif "Button" in kind:
            model.js_on_event("button_click", CustomJS(code=call + "})"))
        elif hasattr(model, "value"):  # (its id: the player tells the student's choice from its own echo)
            model.js_on_change("value", CustomJS(code=call + ", value: cb_obj.value, id: cb_obj.id})"))


def _is_prediction(model) -> bool:
    label = getattr(model, "label", None)
    return ((isinstance(label, str) and label.startswith(PREDICTION_LABELS))
            or getattr(model, "placeholder", None) == PREDICTION_PLACEHOLDER)


def _live_controls(models, labels, predictions: bool = True):
    for model in models:
        if not hasattr(model, "disabled"):
            continue
        title, label = getattr(model, "title", None), getattr(model, "label", None)
        if title in labels or label in labels or (predictions and _is_prediction(model)):
            yield model


def wire_predictions(models, node: str) -> dict[str, str]:
    """A node's prediction controls resolved in the page from the recorded outcomes (player.js:
    `predict`): a choice button commits its choice, the number box its number (Enter, or the
    Lock button). Returns the ids of the panel's status line, of the panel, and of each choice's
    button (`choices`: the player shows the one locked in pressed)."""
    ids: dict = {"choices": {}}
    for model in models:
        kind, label = type(model).__name__, getattr(model, "label", None)
        call = f"window.kvvizPlayer.act({node!r}, 'predict'"
        if "Button" in kind and isinstance(label, str) and label.startswith(PREDICTION_LABELS[0]):
            choice = label[len(PREDICTION_LABELS[0]):]
            model.js_on_event("button_click", CustomJS(code=call + f", {choice!r})"))
            ids["choices"][choice] = model.id
        elif "Button" in kind and label == PREDICTION_LABELS[1]:
            model.js_on_event("button_click", CustomJS(code=call + ", null)"))
        elif getattr(model, "placeholder", None) == PREDICTION_PLACEHOLDER:
            model.js_on_change("value_input", CustomJS(code=f"window.kvvizPlayer.act({node!r}, 'predict_typing', cb_obj.value_input)"))
            model.js_on_change("value", CustomJS(code=call + ", cb_obj.value)"))
        elif "kv-predict-note" in str(getattr(model, "text", "")):
            ids["status"] = model.id
        elif "kv-predict" in (getattr(model, "css_classes", None) or []):
            ids["panel"] = model.id
    return ids


# Every node's predict-then-run controls need a live engine to answer (kvviz/controls/prediction.py).
PREDICTION_LABELS = ("Predict: ", "Lock in my prediction")
PREDICTION_PLACEHOLDER = "a whole number"


def disable(models, labels) -> None:
    """Show the controls among `models` that need the live engine disabled: inputs by title,
    buttons by label, and every prediction control."""
    for model in _live_controls(models, labels):
        model.disabled = True
