"""An HTML pane for text that changes: an update sends the new text and nothing else.

Panel's HTML pane recomputes every property of its Bokeh model on each change of its object
(the design's stylesheets included: new stylesheet models each time), about a millisecond or
more per pane on a laptop; a lesson action changes eight to ten such panes. The panes here
change only their text, so that is all `LiveHTML` sends. Everything else (sizing, styles,
visibility) still goes through Panel's ordinary property sync.
"""

from __future__ import annotations

import panel as pn


class LiveHTML(pn.pane.HTML):
    """`pn.pane.HTML` whose object updates set only the model's text."""

    def _update(self, ref, model) -> None:
        model.update(**self._process_param_change({"object": self.object}))  # (it escapes, as Panel does)
