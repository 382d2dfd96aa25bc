"""An HTML pane for text that changes: an update sends the new text and nothing else.

Panel's HTML pane recomputes every property of its Bokeh model on each change of its object
(the design's stylesheets included: new stylesheet models each time), about a millisecond or
more per pane on a laptop; a lesson action changes eight to ten such panes. The panes here
change only their text, so that is all `LiveHTML` sends. Everything else (sizing, styles,
visibility) still goes through Panel's ordinary property sync. The override is Panel's private
`_update` (kvviz/process/private_api.py: only on the tested Panel; else Panel's own pane).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import panel as pn
import param

from kvviz.process.private_api import text_only
from kvviz.web.redraw import Update
from kvviz.web.refs import watch

# The class of a pane a played page updates just after the frame that shows a new state, not in
# it: text the student does not see at once (a folded "As text") or a list that grows a row (the
# requests), whose layout would delay the numbers and pictures (kvviz/export/player.js, `later`).
AFTER_PAINT = "kv-after-paint"


@text_only
class LiveHTML(pn.pane.HTML):
    """`pn.pane.HTML` whose object updates set only the model's text."""


def bound_html(html_of: Callable[[], str], *refs: param.Parameter, **pane: Any) -> LiveHTML:
    """A `LiveHTML` showing `html_of()`, written again whenever one of `refs` (parameters of one
    owner) changes. (As `pn.bind(...)` given as the pane's object would, without Panel resolving a
    reference on each change: that sets the pane's object through a whole `param.update`, which
    reads every one of the pane's ~60 parameters first, several times per engine step.)"""
    shown = LiveHTML(html_of(), **pane)
    watch(refs[0], Update(lambda: setattr(shown, "object", html_of())), *refs[1:])
    return shown
