"""Accessible names for the controls Bokeh leaves unnamed.

Bokeh draws a Checkbox as an <input> beside a <div> (no <label>) and a Slider as a noUiSlider
handle (role="slider") with no name, both inside the widget's shadow root, and has no option
for ARIA attributes. `AccessibleNames` is an invisible JSComponent that sets `aria-label` on
the control inside every widget carrying a given CSS class, and again whenever Bokeh re-renders
that widget, so screen readers and `page.get_by_role("checkbox", name="Prefix sharing")` find
it. Names are plain text set with setAttribute (never HTML).

`pressed` does the same for a toggle's state, which Bokeh cannot say either: the button inside
every widget carrying a given CSS class gets `aria-pressed`, "true" while the widget also
carries a second class (a prediction's chosen answer: kvviz/controls/prediction.py), else
"false", kept so as the class comes and goes.
"""

from __future__ import annotations

import param
from panel.custom import JSComponent

from kvviz.web.js_source import js_source

_ESM = js_source(__file__, "a11y.js")


class AccessibleNames(JSComponent):
    """`names`: {CSS class of a widget: the accessible name of the control inside it}."""

    names = param.Dict(default={}, doc="CSS class -> accessible name (plain text)")
    pressed = param.Dict(default={},
                         doc="CSS class of a toggle button -> the CSS class it carries while pressed")

    _esm = _ESM

    def __init__(self, **params):
        super().__init__(**{"height": 0, "width": 0, "margin": 0, **params})
