"""Figures and long lists redraw just after the numbers, all together, in one message.

An action publishes its snapshots in one param update; the metric cards, the step counter and
the notice update at once and reach the browser as one small message. The block strips, the
radix tree, the page tables and the request lists are heavier to build in Python and to lay out
in the browser (a figure whose height changes re-lays out the page), so they redraw on the
session's next tick: the student sees the new numbers without waiting for the pictures. Every
redraw a session has pending runs in that one tick, inside one `hold`: one more message, not
one per figure, and a burst of changes before it (Reset, then a URL restore) redraws once,
from the latest state.

Play does not need the numbers first: its tick calls `flush()` inside its own hold, so a step
of a playing node reaches the browser as a single message.

Outside a served session (tests, the benchmark's mirror, a notebook) a redraw runs at once, or,
inside `held()`, once at its end: a recording's branch or a live answer puts the node at the
state it starts from (Reset, the link's settings, its action: each a redraw of every figure)
drawing each figure once, from that state.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import panel as pn

# document -> the redraws it has pending, in the order they were asked for (dict as ordered set)
_PENDING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
_HELD = threading.local()  # .pending: this thread's redraws held by `held()` (dict as ordered set)


class Redraw:
    """`Redraw(draw)` is a watcher: calling it (with any events) runs `draw()` now, or in a
    served session once, with the session's other pending redraws, on the next tick."""

    def __init__(self, draw: Callable[[], None]):
        self._draw = draw

    def __call__(self, *_events) -> None:
        doc = pn.state.curdoc
        if doc is None or doc.session_context is None:
            held_now = getattr(_HELD, "pending", None)
            if held_now is None:
                self._draw()
            else:
                held_now[self] = None
            return
        with _LOCK:
            pending = _PENDING.setdefault(doc, {})
            first = not pending
            pending[self] = None
        if first:
            pn.state.execute(lambda: flush(doc), schedule=True)


class Update(Redraw):
    """`Update(write)` is a watcher for a view's quick parts (a card's or a pane's text): calling it
    runs `write()` at once, in a served session too (the numbers reach the browser before the
    pictures); inside `held()`, once when it ends, from the state then (a live answer's or a
    recording's set-up changes the node several times: Reset, the link's settings, its action)."""

    def __call__(self, *_events) -> None:
        held_now = getattr(_HELD, "pending", None)
        if held_now is None:
            self._draw()
        else:
            held_now[self] = None


def flush(doc=None) -> None:
    """Run every redraw `doc` (default: the current document) has pending, in one message."""
    doc = doc or pn.state.curdoc
    if doc is None:
        return
    with _LOCK:
        pending = list(_PENDING.pop(doc, {}))
    if pending:
        with pn.io.hold(doc):
            for redraw in pending:
                redraw._draw()


@contextmanager
def held() -> Iterator[None]:
    """Outside a served session: the redraws (and `Update`s) asked for inside run once each when it
    ends, in the order first asked, from the state then (nested: the outermost ends them)."""
    if getattr(_HELD, "pending", None) is not None:
        yield
        return
    _HELD.pending = {}
    try:
        yield
    finally:
        pending, _HELD.pending = _HELD.pending, None
        for redraw in pending:
            redraw._draw()
