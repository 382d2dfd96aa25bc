"""Predict, then run: the question asked before a node's key action, a box or a choice to commit
to an answer, and, once the action has run, the engine's outcome beside the prediction.

The state holds everything (kvviz/state/node.py, `predict`, `predicted`, `predictions`);
this only draws it. Question texts are the lesson's; what the student typed is escaped. Under
the engine's verdict it shows `after_verdict()`, built the first time a verdict shows (the node
view hands it the session's compact hand-in box, kvviz/handin/view.py; nothing without one).
"""

from __future__ import annotations

import html

import panel as pn
import param

from kvviz.state import predict
from kvviz.state.node import NodeState
from kvviz.web.a11y import AccessibleNames
from kvviz.web.live_html import LiveHTML
from kvviz.web.redraw import Update

CHOICE = "kv-predict-choice"  # a choice's button
# ... the one locked in (kvviz.css draws it pressed; aria-pressed says so: kvviz/web/a11y.py)
CHOSEN = "kv-chosen"


def status_html(state: NodeState) -> str:
    e = html.escape
    question = state.question()
    if state.prediction_note:
        body, cls = state.prediction_note, "kv-predict-note kv-wrong"
    elif state.predicted is not None:
        action = question.action if question else "the action"
        body = f"Locked in: {state.predicted.predicted}. Now use {action} and see what the engine does."
        cls = "kv-predict-note"
    elif shows_verdict(state):
        entry = state.predictions[-1]
        body = predict.verdict(entry)
        cls = "kv-predict-note " + ("kv-right" if entry.right else "kv-wrong")
    else:
        return '<div class="kv-predict-note kv-empty"></div>'
    return f'<div class="{cls}" role="status" data-node="{e(state.key)}">{e(body)}</div>'


def shows_verdict(state: NodeState) -> bool:
    """Whether the panel shows a resolved prediction of this node beside the engine's outcome."""
    return (state.verdict_shown and not state.prediction_note and state.predicted is None
            and bool(state.predictions) and state.predictions[-1].node == state.key)


def question_html(state: NodeState) -> str:
    question = state.question()
    if question is None:
        return '<div class="kv-predict-question kv-empty"></div>'
    return f'<div class="kv-predict-question">{html.escape(question.text)}</div>'


class Prediction(pn.viewable.Viewer):
    """The prediction panel of a node's state."""

    state = param.ClassSelector(class_=NodeState)
    after_verdict = param.Callable(default=None,
                                   doc="() -> what to show under a verdict (built once), or None")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        first = s.question() or predict.Question("", "")
        choices = s.CHOICES if s.CHOICES is not None else first.choices
        if choices:  # one button per choice: a click commits
            self.entry = None
            # (each names its choice in a class of its own: the played page finds it by that,
            # kvviz/export/player.py)
            buttons = [pn.widgets.Button(label=f"Predict: {c}", color="primary", variant="outline",
                                         css_classes=[CHOICE, f"{CHOICE}-{c}"]) for c in choices]
            for c, b in zip(choices, buttons, strict=True):
                b.on_click(lambda _e, c=c: self._lock(c))
            self.choices = dict(zip(choices, buttons, strict=True))
            widgets = buttons
        else:
            self.entry = pn.widgets.TextInput(placeholder="a whole number", max_length=predict.MAX_DIGITS,
                                              width=190, css_classes=["kv-predict-number"])
            self.choices = {}
            self.entry.param.watch(lambda _e: self._lock(), "enter_pressed")
            lock = pn.widgets.Button(label="Lock in my prediction", color="primary", variant="outline",
                                     align="end", css_classes=["kv-predict-lock"])
            lock.on_click(lambda _e: self._lock())
            widgets = [self.entry, lock]
        self.question = LiveHTML(question_html(s), sizing_mode="stretch_width", margin=(4, 10, 0, 10))
        self.status = LiveHTML(status_html(s), sizing_mode="stretch_width", margin=(0, 10),
                               css_classes=["kv-predict-status"])
        self.controls = pn.FlexBox(*widgets, align_items="end", sizing_mode="stretch_width")
        self.after, self.below = None, None  # after_verdict(), and its place, once a verdict has shown
        # (aria-pressed on them)
        pressed = [AccessibleNames(pressed={CHOICE: CHOSEN})] if self.choices else []
        self._layout = pn.Column(self.question, self.controls, self.status, *pressed,
                                 sizing_mode="stretch_width", css_classes=["kv-predict"], margin=(4, 0))
        s.param.watch(Update(self._render),
                      ["version", "predicted", "predictions", "prediction_note", "verdict_shown"])
        self._render()

    def _lock(self, choice: str | None = None) -> None:
        self.state.predict(choice if choice is not None
                           else (self.entry.value_input or self.entry.value or ""))

    def _render(self) -> None:
        s = self.state
        open_question, status = s.question() is not None, status_html(s)
        shown = open_question or "kv-empty" not in status
        with pn.io.hold():
            self.question.object = question_html(s)
            self.status.object = status
            if self.controls.visible != open_question:
                self.controls.visible = open_question
            if self._layout.visible != shown:
                self._layout.visible = shown
            chosen = s.predicted.predicted if s.predicted is not None else None
            for choice, button in self.choices.items():
                classes = [CHOICE, f"{CHOICE}-{choice}", *([CHOSEN] if choice == chosen else [])]
                if button.css_classes != classes:
                    button.css_classes = classes
            self._below(shows_verdict(s))

    def _below(self, verdict: bool) -> None:
        if verdict and self.below is None and self.after_verdict is not None:
            self.after = self.after_verdict()
            self.below = pn.Column(self.after, sizing_mode="stretch_width", margin=0)
            self._layout.append(self.below)
        elif self.below is not None and self.below.visible != verdict:
            self.below.visible = verdict

    def __panel__(self):
        return self._layout
