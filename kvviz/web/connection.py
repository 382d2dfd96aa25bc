"""What a student sees when the connection to the server drops (Wi-Fi, a restarted process).

BokehJS tries to reconnect to the same session (`pn.config.reconnect`, set in app.py): a short
drop comes back to exactly the same state. While it is away, `ConnectionNotice` shows a banner
saying so. If the session cannot come back (the server process was restarted, or the drop
outlasted the session's lifetime), the page is reloaded as soon as the server answers again:
every node keeps its state in the address bar, so the reload restores it. The banner has a
Reload button too. Messages are static text set with textContent (never HTML).
"""

from __future__ import annotations

from panel.custom import JSComponent

from kvviz.web.js_source import js_source

_ESM = js_source(__file__, "connection.js")


class ConnectionNotice(JSComponent):
    """Says so when the server connection drops, and reloads the page once the server is back."""

    _esm = _ESM
