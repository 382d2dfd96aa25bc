"""Keyboard shortcuts: space play/pause, → step, ← step back, r reset.

A tiny JSComponent listens for keydown on the document and sends {action, node} to Python.
A key is left alone when a widget already owns it: anything typed into a text box, text area,
select, checkbox or contenteditable; any key on a slider or other ARIA control (→ moves a
focused slider, it does not also step); space (and Enter) on a focused button, which clicks
it and does not also play; and any event a widget has already handled (defaultPrevented). The
event's composed path is checked, so controls inside Panel's shadow roots count too. `node` is the lesson node
whose section covers most of the viewport; when none is found (e.g. the page has not laid out yet)
Python falls back to the node the user last touched. Nothing from the browser is executed:
only known action and node names are acted on.
"""

from __future__ import annotations

from collections.abc import Callable

import param
from panel.custom import JSComponent

from kvviz.web.js_source import js_source

# The shortcuts, declared once: the browser reads them from the component (keyboard.js), in the
# live lesson and on the played page alike.
KEYS = {" ": "play", "ArrowRight": "step", "ArrowLeft": "back", "r": "reset", "R": "reset"}
ACTIONS = ("play", "step", "back", "reset")


_ESM = js_source(__file__, "find_sections.js", "keyboard.js")


class Keyboard(JSComponent):
    """Sends shortcut keys to `handler(action, node_or_None)`; on a played page (`played`), to
    the page's player (kvviz/export/player.js: `key`), which acts as the node's own buttons do."""

    keys = param.Dict(default=KEYS, constant=True, doc="key -> action")
    played = param.Boolean(default=False, constant=True, doc="the page has no server: the player acts")

    _esm = _ESM

    def __init__(self, handler: Callable[[str, str | None], None] | None = None, **params):
        super().__init__(**params)
        self._handler = handler  # a plain attribute: not synced to the browser

    def _handle_msg(self, msg) -> None:
        if not isinstance(msg, dict):
            return
        action, node = msg.get("action"), msg.get("node")
        if action in ACTIONS and self._handler is not None:
            self._handler(action, node if isinstance(node, str) else None)
