"""One browser session's hand-in: the controller every hand-in box of the page shares.

    handin = HandInSession(states=lesson.states,
                           describe=lesson.describe)   # one per Lesson (kvviz/lesson.py)

The explain node's box and each node's prediction panel (kvviz/handin/view.py) are views of it:
the display name typed in any of them, the browser's student id, the rate limit and the last
status line are kept here once, so whichever box is built first works alone and every box hands
in the same whole-session hand-in (kvviz/handin/collect.py), merged into the same stored row
(with whatever the student handed in from the recorded page too: `model.merge`). No
Panel here (param and the storage only).
"""

from __future__ import annotations

import logging

import param

from kvviz.handin.collect import collect
from kvviz.handin.model import MAX_NAME, STUDENT_ID, HandIn, RateLimit, clean
from kvviz.handin.report import when
from kvviz.handin.storage import Store, StoreError, shared

log = logging.getLogger("kvviz.handin")


def confirmation(h: HandIn) -> str:
    again = f" (hand-in {h.submissions}: added to what you handed in before)" if h.submissions > 1 else ""
    return f"Handed in at {when(h.updated_at)[11:]} as “{h.name}”{again}. Your teacher can see it now."


class HandInSession(param.Parameterized):
    """The session's display name, student id, rate limit and last status, shared by its boxes."""

    states = param.Dict(default={}, doc="the lesson's states, by node key (Lesson.states)")
    describe = param.Callable(default=None,
                              doc="(states) -> (the lesson's link, its cards' texts): the page's "
                              "(Lesson.describe); None: a hand-in holds neither")
    store = param.ClassSelector(class_=Store, default=None, doc="default: the class database (KVVIZ_DB)")
    display_name = param.String(default="", doc="the display name last given in any box (cleaned, capped)")
    student_id = param.String(default="",
                              doc="the browser's id (a box's StudentId sets it); checked before use")
    status = param.String(default="", doc="the last hand-in's outcome, a sentence (plain text)")
    status_kind = param.Selector(default="", objects=["", "ok", "error"], doc="ok: stored; error: refused")
    status_at = param.String(default="", doc="the box that was used (errors show only there)")

    def __init__(self, **params):
        super().__init__(**params)
        self.limit = RateLimit()

    def _store(self) -> Store:
        return self.store or shared()

    def _say(self, text: str, kind: str, at: str) -> None:
        self.param.update(status=text, status_kind=kind, status_at=at)

    def give_name(self, typed) -> None:
        """A name typed in a box (committed: Enter, leaving the box, Hand in): every box shows it."""
        name = clean(typed, MAX_NAME)
        if name:
            self.display_name = name

    def identify(self, student_id: str) -> None:
        """The browser's id arrived (from any box): show this browser's own last hand-in, if any."""
        if not STUDENT_ID.fullmatch(student_id or "") or student_id == self.student_id:
            return
        self.student_id = student_id
        try:
            mine = self._store().get(student_id)
        except StoreError:
            log.exception("reading a hand-in")
            return
        if mine is not None:
            if not self.display_name:
                self.display_name = mine.name
            if not self.status:
                self._say(f"You handed in at {when(mine.updated_at)[11:]} as “{mine.name}”. Hand in again to "
                          "update it.", "ok", "")

    def hand_in(self, name=None, at: str = "") -> HandIn | None:
        """Hand in what the session shows now, under `name` (default: the name given); `at` names
        the box used. The status says what happened; the stored hand-in, or None."""
        name = self.display_name if name is None else name
        try:
            h = collect(self.states, self.student_id, name, self.describe)
        except ValueError as e:
            self._say(str(e), "error", at)
            return None
        self.display_name = h.name
        if (why := self.limit.refusal()) is not None:
            self._say(why, "error", at)
            return None
        try:
            stored = self._store().save(h)
        except ValueError as e:  # (the class is full)
            self._say(str(e), "error", at)
            return None
        except StoreError:
            log.exception("saving a hand-in")
            self._say("Your hand-in could not be saved just now: try again in a moment.", "error", at)
            return None
        self._say(confirmation(stored), "ok", at)
        return stored
