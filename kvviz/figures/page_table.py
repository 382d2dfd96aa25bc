"""The page-table analogy: a request's logical pages, each linked to the physical block it maps to.

Top row: the request's logical pages 0, 1, 2 … (what attention sees, contiguous). Below: the
pool's physical blocks in rows of PER_ROW, where the block strip above draws them on a wide
screen, the request's own ones in its colour. A line joins page i to `block_table[i]`. Drawn
for the paged pool and, for contrast, the contiguous pool. The page and link sources keep one
length (a row per block of the pool, unused rows drawing nothing: see kvviz/sources.py), so
choosing a request with more pages never changes a source's length.
"""

from __future__ import annotations

import html

import panel as pn
import param
from bokeh.models import ColumnDataSource, HoverTool, Rect, Segment, Text
from bokeh.plotting import figure

from engine import Snapshot, ceil_div
from kvviz.figures.block_strip import DARK_FILLS, FREE_FILL, FREE_LINE, PER_ROW, owner_colour
from kvviz.web.live_html import LiveHTML
from kvviz.web.redraw import Redraw
from kvviz.web.refs import Ref, value, watch
from kvviz.web.sources import assign, binary, padded

PAGE_Y, BLOCK_Y, ROW_H = 0.5, 2.6, 1.0  # the pages' row, the first blocks' row, block row spacing


def block_xy(b: int) -> tuple[float, float]:
    return b % PER_ROW + 0.5, BLOCK_Y + (b // PER_ROW) * ROW_H


def block_rows(n: int) -> int:
    return ceil_div(n, PER_ROW)


def table_data(snap: Snapshot, name: str | None) -> tuple[dict, dict, dict]:
    """Columns for the pages, the physical blocks and the links of request `name` (pure)."""
    req = next((r for r in snap.requests if r.name == name), None)
    table = req.block_table if req else ()
    colour = owner_colour(req.request_id) if req else "#999999"
    n = snap.metrics.blocks_total
    step = min(2.0, PER_ROW / max(len(table), 1))  # page spacing, in block widths
    pages = {
        "x": [(i + 0.5) * step for i in range(len(table))],
        "w": [0.8 * step] * len(table),
        "y": [PAGE_Y] * len(table),
        "label": [f"p{i}" for i in range(len(table))],
        "info": [f"logical page {i} → physical block {b}" for i, b in enumerate(table)],
        "fill": [colour] * len(table),
        "ink": ["#ffffff" if colour in DARK_FILLS else "#111111"] * len(table),
    }
    mine = set(table)
    xy = [block_xy(b) for b in range(n)]
    blocks = {
        "x": [x for x, _ in xy],
        "y": [y for _, y in xy],
        "fill": [colour if b in mine else FREE_FILL for b in range(n)],
        "line": ["#333333" if b in mine else FREE_LINE for b in range(n)],
        "label": [str(b) if b in mine else "" for b in range(n)],
        "ink": ["#ffffff" if colour in DARK_FILLS and b in mine else "#111111" for b in range(n)],
        "info": [f"physical block {b}" + (f" = page {table.index(b)} of {name}" if b in mine else "")
                 for b in range(n)],
    }
    links = {
        "x0": pages["x"], "y0": [PAGE_Y + 0.4] * len(table),
        "x1": [block_xy(b)[0] for b in table], "y1": [block_xy(b)[1] - 0.45 for b in table],
    }
    blank = {"label": "", "info": "", "fill": FREE_FILL, "ink": "#111111"}
    return (padded(pages, n, ("x", "w", "y"), blank), blocks,
            padded(links, n, ("x0", "y0", "x1", "y1")))


def summary_html(snap: Snapshot, name: str | None, pool: str) -> str:
    req = next((r for r in snap.requests if r.name == name), None)
    if req is None:
        text = "No request chosen."
    elif not req.block_table:
        text = f"{req.name} holds no block here ({req.status})."
    else:
        pairs = ", ".join(f"page {i} → block {b}" for i, b in enumerate(req.block_table))
        text = f"{req.name} in the {pool} pool: {pairs}."
    return f'<div class="kv-pagetable-text" data-pool="{html.escape(pool)}">{html.escape(text)}</div>'


class PageTable(pn.viewable.Viewer):
    snapshot = Ref("the snapshot parameter of the pool drawn")
    request = Ref("the parameter naming the request whose table is drawn")
    pool = param.String(default="paged", doc="which pool, for the data-pool attribute")
    title = param.String(default="")

    def __init__(self, **params):
        super().__init__(**params)
        pages, blocks, links = table_data(self._snap, value(self.request))
        self.pages, self.blocks, self.links = (ColumnDataSource(binary(d)) for d in (pages, blocks, links))
        rows = block_rows(self._snap.metrics.blocks_total)
        fig = figure(x_axis_type=None, y_axis_type=None,  # (no axes, no grid)
                     height=114 + 36 * rows, x_range=(0, PER_ROW), y_range=(BLOCK_Y + (rows - 1) * ROW_H + 0.6, -0.45),
                     toolbar_location=None, min_border=4, sizing_mode="stretch_width",
                     tools=[HoverTool(tooltips=[("", "@info")])])
        fig.outline_line_color = None
        fig.add_glyph(self.links, Segment(x0="x0", y0="y0", x1="x1", y1="y1", line_color="#333333", line_width=1.5))
        fig.add_glyph(self.blocks, Rect(x="x", y="y", width=0.9, height=0.8, fill_color="fill", line_color="line"))
        fig.add_glyph(self.pages, Rect(x="x", y="y", width="w", height=0.8, fill_color="fill", line_color="#333333"))
        for src in (self.blocks, self.pages):
            fig.add_glyph(src, Text(x="x", y="y", text="label", text_align="center", text_baseline="middle",
                                    text_font_size="11px", text_color="ink"))
        rows = ColumnDataSource({"x": [0.1, 0.1], "y": [PAGE_Y - 0.5, BLOCK_Y - 0.55],
                                 "text": ["logical pages", "physical blocks"]})
        fig.add_glyph(rows, Text(x="x", y="y", text="text", text_font_size="11px", text_color="#555555",
                                 text_baseline="bottom"))
        self.figure = fig
        self._text = LiveHTML(summary_html(self._snap, value(self.request), self.pool),
                                  sizing_mode="stretch_width", margin=(0, 10))
        watch(self.snapshot, Redraw(self._update), self.request)
        heading = pn.pane.HTML(f'<div class="kv-figure-title">{html.escape(self.title)}</div>',
                               sizing_mode="stretch_width", margin=(8, 10, 0, 10))
        self._layout = pn.Column(heading, pn.pane.Bokeh(fig, sizing_mode="stretch_width"), self._text,
                                 sizing_mode="stretch_width")

    @property
    def _snap(self) -> Snapshot:
        return value(self.snapshot)

    def _update(self) -> None:
        pages, blocks, links = table_data(self._snap, value(self.request))
        with pn.io.hold():
            for source, data in ((self.pages, pages), (self.blocks, blocks), (self.links, links)):
                assign(source, binary(data))
            self._text.object = summary_html(self._snap, value(self.request), self.pool)

    def __panel__(self):
        return self._layout
