"""An HTML pane for text that changes: an update sends the new text and nothing else.

Panel's HTML pane recomputes every property of its Bokeh model on each change of its object
(the design's stylesheets included: new stylesheet models each time), about a millisecond or
more per pane on a laptop; a lesson action changes eight to ten such panes. The panes here
change only their text, so that is all `LiveHTML` sends. Everything else (sizing, styles,
visibility) still goes through Panel's ordinary property sync. The override is Panel's private
`_update` (kvviz/process/private_api.py: only on the tested Panel; else Panel's own pane).
"""

from __future__ import annotations

import panel as pn

from kvviz.process.private_api import text_only

# The class of a pane a played page updates just after the frame that shows a new state, not in
# it: text the student does not see at once (a folded "As text"), whose layout would delay the
# numbers and pictures (kvviz/export/player.js, `later`).
AFTER_PAINT = "kv-after-paint"


@text_only
class LiveHTML(pn.pane.HTML):
    """`pn.pane.HTML` whose object updates set only the model's text."""
