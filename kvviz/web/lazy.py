"""Build a part of the page only when the student gets near it.

A page of four nodes is ~440 Bokeh models and most of a second of server CPU to build; a student
looks at one node at a time. `LazySlot` stands in for a section until the browser reports it
within a screen of the viewport (an IntersectionObserver in `ViewSensor`), then builds it once
and swaps it in; it keeps reporting whether the section is in view (`in_view`), so a node can
animate only while someone can see it. The slot carries the section's `kv-node-<key>` class, so
the navigation and the keyboard find it before and after it is built.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator

import panel as pn
import param
from panel.custom import JSComponent

from kvviz.process import metrics
from kvviz.process.build_queue import QUEUE, served
from kvviz.web.js_source import js_source

_ESM = js_source(__file__, "lazy.js")


class ViewSensor(JSComponent):
    """Reports from the browser whether its place on the page is near or in the viewport."""

    near = param.Boolean(default=False, doc="within a screen of the viewport (set by the browser)")
    in_view = param.Boolean(default=False, doc="part of the section is on screen (set by the browser)")

    _esm = _ESM


class LazySlot(pn.viewable.Viewer):
    """A section built by `build()` when it first comes near the viewport (or on `reveal()`)."""

    key = param.String(doc="the section's node key (its kv-node-<key> class)")
    build = param.Callable(doc="() -> the section's viewable")
    placeholder = param.String(default="", doc="plain text shown until it is built")
    built = param.Boolean(default=False, doc="True once the section is built and in the page")
    in_view = param.Boolean(default=False, doc="part of the section is on screen now")

    def __init__(self, **params):
        super().__init__(**params)
        self._asked = False
        self.sensor = ViewSensor(margin=0, height=1, sizing_mode="stretch_width")
        self.sensor.param.watch(lambda e: self.reveal() if e.new else None, "near")
        self.sensor.param.watch(lambda e: setattr(self, "in_view", e.new), "in_view")
        waiting = pn.pane.HTML(f'<div class="kv-slot-waiting" role="status">'
                               f'{html.escape(self.placeholder)}</div>',
                               sizing_mode="stretch_width")
        self._layout = pn.Column(self.sensor, waiting, sizing_mode="stretch_width",
                                 css_classes=["kv-slot", "kv-slot-empty", f"kv-node-{self.key}"])

    def reveal(self) -> None:
        """Build the section (once) and swap it in: at once outside a served session; in a
        served one in two parts on the process's build queue (kvviz/process/build_queue.py), so the
        clicks of other students are not held up. `built` turns True when it is in the page."""
        if self.built or self._asked:
            return
        self._asked = True
        metrics.NODES.labels(node=self.key).inc()
        doc = pn.state.curdoc
        if served(doc):
            QUEUE.submit(doc, self._parts())
        else:
            for _part in self._parts():
                pass

    def _parts(self) -> Iterator[None]:
        view = self.build()
        yield  # (the event loop runs what arrived meanwhile)
        with pn.io.hold():
            self._layout.objects = [self.sensor, view]
            self._layout.css_classes = ["kv-slot", f"kv-node-{self.key}"]
        self.built = True

    def __panel__(self):
        return self._layout


def on_view(slot: LazySlot, callback: Callable[[bool], None]) -> None:
    """Call `callback(in_view)` whenever the slot's section enters or leaves the screen."""
    slot.param.watch(lambda e: callback(e.new), "in_view")
