"""Panel widgets that hand a browser change to Python at once.

Panel holds a value change from the browser for 50 ms (`_debounce`) so that a burst of them
(a drag, fast typing) is processed once. A click on a checkbox or an arrow key on a slider is a
single change, and those 50 ms were a third of the lesson's latency budget (p95 150 ms from
action to metric on screen: docs/benchmarks.md, "Lesson responsiveness"). The slider sends
`value_throttled` only when a drag ends (pn.extension(throttled=True)), so nothing is lost
without the debounce.
`_debounce` is private (kvviz/process/private_api.py: set only on the tested Panel).
"""

from __future__ import annotations

import panel as pn

from kvviz.process.private_api import no_debounce


@no_debounce
class Checkbox(pn.widgets.Checkbox):
    pass


@no_debounce
class IntSlider(pn.widgets.IntSlider):
    pass
