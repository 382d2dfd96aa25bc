"""The student's hand-in box: a display name, Hand in, and a confirmation.

    HandInView(states=lesson.states)      # the lesson's states, by node key

It hands in everything the session shows (kvviz/handin/collect.py): the explain node's answer,
self-checks and predictions, the state link and every live node's metric cards. The student is
known by an id the browser keeps (`StudentId`: 32 random hex digits in localStorage, checked
here), not by the name, so handing in again, even after a reload, updates the same hand-in.
Hand-ins are rate-limited per session (model.RateLimit); nothing another student handed in is
ever read here: only this browser's own hand-in, by its id.
"""

from __future__ import annotations

import hashlib
import html
import logging
import sqlite3
from pathlib import Path

import panel as pn
import param
from panel.custom import JSComponent

from kvviz.handin.collect import collect
from kvviz.handin.model import MAX_NAME, STUDENT_ID, HandIn, RateLimit
from kvviz.handin.report import when
from kvviz.handin.storage import Store, shared
from kvviz.web.live_html import LiveHTML

log = logging.getLogger("kvviz.handin")
CSS_PATH = Path(__file__).resolve().parents[2] / "assets" / "handin.css"
# Relative to /app or /teacher; served by `--static-dirs assets=./assets` (and nginx in `make class`).
CSS_URL = f"assets/handin.css?v={hashlib.sha256(CSS_PATH.read_bytes()).hexdigest()[:12]}"

_ESM = """
const KEY = "kvviz-student-id";
function newId() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
export function render({ model }) {
  let id = null;
  try { id = window.localStorage.getItem(KEY); } catch (e) { /* storage blocked: this page only */ }
  if (!id || !/^[0-9a-f]{32}$/.test(id)) {
    id = newId();
    try { window.localStorage.setItem(KEY, id); } catch (e) { /* (as above) */ }
  }
  model.student_id = id;
  const el = document.createElement("span");
  el.className = "kv-student-id";
  return el;
}
"""


class StudentId(JSComponent):
    """The browser's student id (created on first visit, kept in localStorage)."""

    student_id = param.String(default="", doc="set by the browser; checked before use")

    _esm = _ESM


INTRO = (
    '<div class="kv-h-intro"><div class="kv-h-title">Hand it in to your teacher</div>'
    "<p>Your teacher sees your name, your answer, your self-checks and predictions, and this exact "
    "state of the lesson (a link that reopens it). No other student can see it. Hand in again at any "
    "time: it replaces your last hand-in.</p></div>"
)


def status_html(text: str = "", kind: str = "") -> str:
    cls = f"kv-h-status kv-h-{kind}" if kind else "kv-h-status kv-h-empty"
    return f'<div class="{cls}" role="status">{html.escape(text)}</div>'


def confirmation(h: HandIn) -> str:
    again = f" (hand-in {h.submissions}: it replaces the one before)" if h.submissions > 1 else ""
    return f"Handed in at {when(h.updated_at)[11:]} as “{h.name}”{again}. Your teacher can see it now."


class HandInView(pn.viewable.Viewer):
    states = param.Dict(doc="the lesson's states, by node key (Lesson.states)")
    store = param.ClassSelector(class_=Store, default=None, doc="default: the class database (KVVIZ_DB)")

    def __init__(self, **params):
        super().__init__(**params)
        self.limit = RateLimit()
        self.student = StudentId(height=0, width=0, margin=0)
        self.name_box = pn.widgets.TextInput(label="Your name, as your teacher will see it", max_length=MAX_NAME,
                                             placeholder=f"e.g. Ada L. (up to {MAX_NAME} characters)", width=320,
                                             css_classes=["kv-h-name"])
        self.button = pn.widgets.Button(label="Hand in to the teacher", color="primary", align="end",
                                        css_classes=["kv-h-submit"])
        self.status = LiveHTML(status_html(), sizing_mode="stretch_width", stylesheets=[CSS_URL])
        self.button.on_click(lambda _e: self.hand_in())
        self.name_box.param.watch(lambda _e: self.hand_in(), "enter_pressed")
        self.student.param.watch(lambda _e: self._found(), "student_id")
        self._layout = pn.Column(
            pn.pane.HTML(INTRO, sizing_mode="stretch_width", stylesheets=[CSS_URL]),
            pn.FlexBox(self.name_box, self.button, flex_wrap="wrap", align_items="flex-end", sizing_mode="stretch_width"),
            self.status, self.student,
            sizing_mode="stretch_width", css_classes=["kv-handin"],
        )

    @classmethod
    def around(cls, explain) -> HandInView:
        """The box for the explain node's view, which has its own state only: the lesson's states
        are that state and the ones it is built over (its registry `needs`, kept as attributes)."""
        from kvviz.nodes import BY_KEY

        return cls(states={**{k: getattr(explain, k) for k in BY_KEY["explain"].needs}, "explain": explain})

    def _store(self) -> Store:
        return self.store or shared()

    def _say(self, text: str, kind: str) -> None:
        self.status.object = status_html(text, kind)

    def _found(self) -> None:
        """The browser's id arrived: show this browser's own last hand-in, if any."""
        sid = self.student.student_id
        if not STUDENT_ID.fullmatch(sid or ""):
            return
        try:
            mine = self._store().get(sid)
        except sqlite3.Error:
            log.exception("reading a hand-in")
            return
        if mine is not None:
            if not (self.name_box.value_input or self.name_box.value):
                self.name_box.value = mine.name
            self._say(f"You handed in at {when(mine.updated_at)[11:]} as “{mine.name}”. Hand in again to "
                      "update it.", "ok")

    def hand_in(self) -> HandIn | None:
        """Hand in what the session shows now; the status line says what happened."""
        try:
            h = collect(self.states, self.student.student_id, self.name_box.value_input or self.name_box.value)
        except ValueError as e:
            self._say(str(e), "error")
            return None
        if (why := self.limit.refusal()) is not None:
            self._say(why, "error")
            return None
        try:
            stored = self._store().save(h)
        except ValueError as e:  # (the class is full)
            self._say(str(e), "error")
            return None
        except sqlite3.Error:
            log.exception("saving a hand-in")
            self._say("Your hand-in could not be saved just now: try again in a moment.", "error")
            return None
        self._say(confirmation(stored), "ok")
        return stored

    def __panel__(self):
        return self._layout
