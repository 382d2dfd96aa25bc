"""Figures and long lists redraw just after the numbers, in a second message to the browser.

An action publishes its snapshots in one param update; the metric cards, the step counter and
the notice update at once and reach the browser as one small message. The block strips, the
radix tree, the page tables and the request lists are heavier to build in Python and to lay out
in the browser (a figure whose height changes re-lays out the page), so they redraw on the
session's next tick: the student sees the new numbers without waiting for the pictures, and a
burst of changes before that tick (Reset, then a URL restore) redraws once, from the latest state.

Outside a served session (tests, the benchmark's mirror, a notebook) a redraw runs at once.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn


class Redraw:
    """`Redraw(draw)` is a watcher: calling it (with any events) runs `draw()` now, or in a
    served session once on the next tick, inside `pn.io.hold()` (one message)."""

    def __init__(self, draw: Callable[[], None]):
        self._draw = draw
        self._pending = False

    def __call__(self, *_events) -> None:
        doc = pn.state.curdoc
        if doc is None or doc.session_context is None:
            self._draw()
        elif not self._pending:
            self._pending = True
            pn.state.execute(self._run, schedule=True)

    def _run(self) -> None:
        self._pending = False
        with pn.io.hold():
            self._draw()
