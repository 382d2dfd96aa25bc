"""A small line chart over wall-clock time, fed by streaming: each update sends only the points
that are new since the last one (`ColumnDataSource.stream`, the oldest dropping off past
`rollover`), so a chart that has run for ten minutes costs no more to update than a new one."""

from __future__ import annotations

import html

import panel as pn
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.plotting import figure

from kvviz.figures.reflow import reflow


class LiveLines(pn.viewable.Viewer):
    """`series`: (column, legend label, colour). `update(points)`: every point so far, each a
    dict with "t" (seconds since the epoch) and one value per column; only the new ones travel."""

    def __init__(self, title: str, series: tuple[tuple[str, str, str], ...], y_label: str,
                 y_range: tuple[float, float] | None = None, rollover: int = 600, css_class: str = "kv-live"):
        self.series, self.rollover, self._last_t = series, rollover, None
        self.source = ColumnDataSource({"t": [], **{name: [] for name, _, _ in series}})
        fig = figure(x_axis_type="datetime", height=190, sizing_mode="stretch_width", toolbar_location=None,
                     min_border=4, **({"y_range": y_range} if y_range else {}),
                     tools=[HoverTool(tooltips=[(label, f"@{name}{{0.[0]}}") for name, label, _ in series],
                                      mode="vline")])
        fig.yaxis.axis_label = y_label
        fig.xaxis.ticker.desired_num_ticks = 4  # (a phone's width holds four times of day, not six)
        for name, label, colour in series:
            fig.step(x="t", y=name, source=self.source, line_color=colour, line_width=2, legend_label=label,
                     mode="after")
        fig.legend.location = "top_left"
        fig.legend.label_text_font_size = "11px"
        fig.legend.background_fill_alpha = 0.6
        fonts = [(fig.legend[0], "label_text_font_size", "11px", "18px")]
        for axis in (*fig.xaxis, *fig.yaxis):
            fonts += [(axis, "major_label_text_font_size", "11px", "18px"),
                      (axis, "axis_label_text_font_size", "13px", "18px")]
        reflow(fig, [], 0, None, None, fonts)  # (a projector's sizes)
        fig.css_classes = [css_class]
        self.figure = fig
        # (the title in HTML: it wraps on a phone instead of being cut off)
        self._pane = pn.Column(pn.pane.HTML(f'<div class="kv-figure-title">{html.escape(title)}</div>',
                                            sizing_mode="stretch_width", margin=(6, 10, 0, 10)),
                               pn.pane.Bokeh(fig, sizing_mode="stretch_width"), sizing_mode="stretch_width")

    def update(self, points: list[dict]) -> None:
        """Stream the points later than the last one sent; start again if time went backwards."""
        if points and self._last_t is not None and points[-1]["t"] < self._last_t:
            self._last_t, self.source.data = None, {k: [] for k in self.source.data}
        new = [p for p in points if self._last_t is None or p["t"] > self._last_t]
        if not new:
            return
        self._last_t = new[-1]["t"]
        cols = {"t": [p["t"] * 1000.0 for p in new]}  # (Bokeh's datetime axis counts milliseconds)
        cols.update({name: [p[name] for p in new] for name, _, _ in self.series})
        self.source.stream(cols, rollover=self.rollover)

    def __panel__(self):
        return self._pane
