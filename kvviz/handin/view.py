"""The student's hand-in boxes: a display name, Hand in, and a confirmation beside them.

    HandInView(session=lesson.handin)                                 # Explain it back's box
    HandInView(session=lesson.handin, compact=True, where="paging")   # under a node's prediction

Every box is a view of the session's one `HandInSession` (kvviz/handin/session.py): the name, the
student id, the rate limit and the last status are kept there, so a name typed in one box shows
in the others and any box hands in the same whole-session hand-in (kvviz/handin/collect.py). The
student is known by an id the browser keeps (`StudentId`: 32 random hex digits in localStorage,
checked there), not by the name, so handing in again, even after a reload or from another box,
updates the same hand-in. Nothing another student handed in is ever read: only this browser's
own hand-in, by its id.
"""

from __future__ import annotations

import html
from pathlib import Path

import panel as pn
import param
from panel.custom import JSComponent

from kvviz.handin.model import MAX_NAME, HandIn, RateLimit
from kvviz.handin.session import HandInSession, confirmation
from kvviz.handin.storage import Store
from kvviz.web import stylesheet
from kvviz.web.js_source import js_source
from kvviz.web.live_html import LiveHTML

__all__ = ["HandInView", "StudentId", "confirmation", "status_html"]
CSS_PATH = Path(__file__).resolve().parents[2] / "assets" / "handin.css"
# Relative to /app or /teacher; served by Panel's /components/ route (kvviz/web/stylesheet.py; and
# by nginx in `make class`).
CSS_URL = stylesheet.url("assets/handin.css")

_ESM = js_source(__file__, "student_id.js")


class StudentId(JSComponent):
    """The browser's student id (created on first visit, kept in localStorage)."""

    student_id = param.String(default="", doc="set by the browser; checked before use")

    _esm = _ESM


INTRO = (
    '<div class="kv-h-intro"><div class="kv-h-title">Hand it in to your teacher</div>'
    "<p>Your teacher sees your name, your answer, your self-checks and predictions, and this exact "
    "state of the lesson (a link that reopens it). No other student can see it. Hand in again at any "
    "time: it adds to what you handed in before, and your teacher sees your latest answer to each "
    "question.</p></div>"
)


def status_html(text: str = "", kind: str = "") -> str:
    cls = f"kv-h-status kv-h-{kind}" if kind else "kv-h-status kv-h-empty"
    return f'<div class="{cls}" role="status">{html.escape(text)}</div>'


class HandInView(pn.viewable.Viewer):
    """A hand-in box of the session: Explain it back's (an introduction above it) or, `compact`,
    the row under a node's resolved prediction. `where` names it: an error shows only in the box
    that was used, a confirmation in every box."""

    session = param.ClassSelector(class_=HandInSession, default=None, doc="default: a session of its own")
    compact = param.Boolean(default=False, doc="the row under a prediction: no introduction")
    where = param.String(default="explain", doc="which box this is (a node key)")

    def __init__(self, **params):
        super().__init__(**params)
        if self.session is None:
            self.session = HandInSession()
        h = self.session
        self.student = StudentId(height=0, width=0, margin=0)
        label = "Your name, for your teacher" if self.compact else "Your name, as your teacher will see it"
        self.name_box = pn.widgets.TextInput(label=label, max_length=MAX_NAME, value=h.display_name,
                                             value_input=h.display_name,
                                             placeholder=f"e.g. Ada L. (up to {MAX_NAME} characters)",
                                             width=250 if self.compact else 320, css_classes=["kv-h-name"])
        self.button = pn.widgets.Button(label="Hand in to the teacher", color="primary", align="end",
                                        css_classes=["kv-h-submit"])
        self.status = LiveHTML(self._status_html(), sizing_mode="stretch_width", stylesheets=[CSS_URL])
        self.button.on_click(lambda _e: self.hand_in())
        self.name_box.param.watch(lambda _e: self.hand_in(), "enter_pressed")
        self.name_box.param.watch(lambda e: h.give_name(e.new), "value")
        self.student.param.watch(lambda e: h.identify(e.new), "student_id")
        h.param.watch(self._named, "display_name")
        h.param.watch(lambda *_e: setattr(self.status, "object", self._status_html()),
                      ["status", "status_kind", "status_at"])
        row = pn.FlexBox(self.name_box, self.button, flex_wrap="wrap", align_items="flex-end",
                         sizing_mode="stretch_width")
        if self.compact:  # (aligned with the prediction's own lines)
            parts, look = [row], {"css_classes": ["kv-handin", "kv-handin-row"], "margin": (0, 5)}
        else:
            parts, look = [pn.pane.HTML(INTRO, sizing_mode="stretch_width", stylesheets=[CSS_URL]), row], {
                "css_classes": ["kv-handin"]}
        self._layout = pn.Column(*parts, self.status, self.student, sizing_mode="stretch_width", **look)

    @classmethod
    def around(cls, explain, describe=None, **params) -> HandInView:
        """A box with a session of its own, for an explain view built outside a lesson: its
        states are that state and the node states it is built over (`explain.nodes`, each by its
        `key`); `describe`, as HandInSession's."""
        states = {**{n.key: n for n in explain.nodes}, "explain": explain}
        return cls(session=HandInSession(states=states, describe=describe), **params)

    # (the session's parts, as this box's: its tests and older callers use them)
    @property
    def limit(self) -> RateLimit:
        return self.session.limit

    @property
    def store(self) -> Store | None:
        return self.session.store

    @store.setter
    def store(self, store: Store | None) -> None:
        self.session.store = store

    def _named(self, event) -> None:
        """A name given in another box (or found by the student id): shown here too."""
        if event.new and event.new != (self.name_box.value_input or self.name_box.value):
            self.name_box.param.update(value=event.new, value_input=event.new)

    def _status_html(self) -> str:
        h = self.session
        shown = h.status_kind == "ok" or h.status_at == self.where
        return status_html(h.status, h.status_kind) if shown and h.status else status_html()

    def hand_in(self) -> HandIn | None:
        """Hand in what the session shows now; the status line says what happened."""
        return self.session.hand_in(self.name_box.value_input or self.name_box.value, at=self.where)

    def __panel__(self):
        return self._layout
