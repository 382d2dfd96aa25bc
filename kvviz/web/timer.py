"""A served session's periodic callback, started once its page has loaded.

Panel drops a Bokeh model change that a served session makes after its page was sent and before
the browser reports the page ready (`document_ready`): it counts on sending the document whole at
connection, but the browser has already pulled it. A timer that redraws a figure in that window
loses the change for good, and the figure shows its first state until the next change: node 04's
tree of kvviz's engine, filled by a poll when our engine has served the recorded questions, came up
empty on a server's first page, in 3 runs of 4. A `SessionTimer` starts by `pn.state.onload`
(Panel's way to run code once the page is there): nothing it changes can fall into that window.
It stops when the session ends.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn


class SessionTimer:
    """Call `callback` every `period_ms` in the current served session, from its page's load on.
    Outside a served session nothing runs unless `anywhere` (then at once, as Panel does there)."""

    def __init__(self, callback: Callable[[], object], period_ms: int, anywhere: bool = False):
        self._run, self._period, self._callback, self._stopped = callback, period_ms, None, False
        doc = pn.state.curdoc
        if doc is not None and doc.session_context is not None:
            pn.state.onload(self._start)
            pn.state.on_session_destroyed(lambda _ctx: self.stop())
        elif anywhere:
            self._start()

    def _start(self) -> None:
        if not self._stopped:
            self._callback = pn.state.add_periodic_callback(self._run, period=self._period)

    @property
    def running(self) -> bool:
        return self._callback is not None

    def stop(self) -> None:
        """No more calls (before or after the page has loaded)."""
        self._stopped = True
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
