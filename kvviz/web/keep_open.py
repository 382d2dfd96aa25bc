"""A <details> the student opened stays open when its pane is drawn again, its summary focused.

Panel writes an HTML pane's whole text anew whenever it changes: a metric card at every engine
step (its "?", what the card counts), a page table's "As text" at every state shown. Each time,
its <details> came back closed, in the live lesson while playing and on the played page at every
state: a student who opened one lost it at the next step. `KeepOpen` is an invisible JSComponent,
one per page: from a student's first click on a summary in a pane, it follows that pane's
<details> (open or closed, by the student) and opens again, as the pane is written anew, those
that were open; a summary that had the keyboard's focus gets it back (a student who opened a
card's "?" with Enter, then steps with →, closes it again with Enter). Nothing is sent to the
server; nothing is read but the page's own elements.
"""

from __future__ import annotations

from panel.custom import JSComponent

from kvviz.web.js_source import js_source

_ESM = js_source(__file__, "keep_open.js")


class KeepOpen(JSComponent):
    """Keeps the <details> a student opened open, and its focus, across redraws (keep_open.js)."""

    _esm = _ESM

    def __init__(self, **params: object) -> None:
        super().__init__(**{"height": 0, "width": 0, "margin": 0, **params})
