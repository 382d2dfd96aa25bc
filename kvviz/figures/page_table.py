"""The page-table analogy: a request's logical pages, each linked to the physical block it maps to.

Top row: the request's logical pages 0, 1, 2 … (what attention sees, contiguous), each drawn
as its block is (hatched while reserved and empty, filled once it holds tokens). Below: the
pool's physical blocks in rows of PER_ROW (NARROW_PER_ROW on a phone), where the block strip
draws them, in the strip's own visual language (kvviz/figures/cells.py): other requests'
blocks in their colours, free ones free. A line joins page i to `block_table[i]`. Drawn for the
paged pool and, for contrast, the contiguous pool. Every source keeps one length (a row per
block of the pool, unused rows drawing nothing: see kvviz/web/sources.py), so choosing a
request with more pages never changes a source's length.
"""

from __future__ import annotations

import html

import panel as pn
import param
from bokeh.models import ColumnDataSource, HoverTool, Segment, Text
from bokeh.plotting import figure

from engine import Snapshot, ceil_div
from kvviz.figures.block_strip import MIN_CELL_PX, NARROW_PER_ROW, NARROW_PX, PER_ROW
from kvviz.figures.cells import CELL_W, LAYOUTS, bar_data, cells_of, draw_cells, hatch_data, on_grid, place
from kvviz.figures.reflow import Frame, reflow
from kvviz.web.live_html import AFTER_PAINT, LiveHTML
from kvviz.web.per_snapshot import per_snapshot
from kvviz.web.redraw import Redraw
from kvviz.web.refs import Ref, value, watch
from kvviz.web.sources import assign_columns, binary, padded

PAGE_Y, BLOCK_Y, ROW_H = 0.5, 2.6, 1.0  # the pages' row, the first blocks' row, block row spacing
ROW_PX = 40
LOOK = ("fill", "alpha", "line", "lw", "dash", "hatch", "ink", "read")
POSITIONS = tuple(k + s for s in LAYOUTS for k in ("x", "y", "cw", "hw"))


def block_xy(b: int, per_row: int = PER_ROW) -> tuple[float, float]:
    return b % per_row + 0.5, BLOCK_Y + (b // per_row) * ROW_H


def block_rows(n: int, per_row: int = PER_ROW) -> int:
    return ceil_div(n, per_row)


def _with_bars_and_stripes(cells: dict, fractions: list[float]) -> tuple[dict, dict, dict]:
    return cells, bar_data(cells, fractions), hatch_data(cells)


@per_snapshot
def table_data(snap: Snapshot,
               name: str | None) -> tuple[tuple[dict, dict, dict], tuple[dict, dict, dict], dict]:
    """(cells, bars, stripes) of the pages and of the physical blocks, and the links, of request
    `name` (pure)."""
    req = next((r for r in snap.requests if r.name == name), None)
    table = req.block_table if req else ()
    n = snap.metrics.blocks_total
    looks = cells_of(snap)
    for row in looks:
        row["read"] = 0.0
    blocks = {k: [r[k] for r in looks] for k in looks[0]}
    blocks["info"] = [f"physical block {b}: {r['state']} ({r['owners']})"
                      + (f" = page {table.index(b)} of {name}" if b in table else "")
                      for b, r in enumerate(looks)]
    pages = {k: [looks[b][k] for b in table] for k in LOOK}
    pages["label"] = [f"p{i}" for i in range(len(table))]
    pages["info"] = [f"logical page {i} of {name} → physical block {b}" for i, b in enumerate(table)]
    links: dict[str, list] = {}
    for suffix, per_row in zip(LAYOUTS, (PER_ROW, NARROW_PER_ROW), strict=True):
        step = min(1.0, per_row / max(len(table), 1))  # page spacing, in block widths
        xs = [(i + 0.5) * step for i in range(len(table))]
        place(pages, suffix, xs, [PAGE_Y] * len(table), [CELL_W * step] * len(table))
        links.update({"x0" + suffix: xs, "y0" + suffix: [PAGE_Y + 0.4] * len(table),
                      "x1" + suffix: [block_xy(b, per_row)[0] for b in table],
                      "y1" + suffix: [block_xy(b, per_row)[1] - 0.45 for b in table]})
    blank = {"label": "", "info": "", "fill": "#ffffff", "ink": "#111111", "alpha": 0.0, "line": "#ffffff",
             "lw": 1.0, "dash": "solid", "hatch": " ", "read": 0.0}
    pages = padded(pages, n, POSITIONS, blank)
    fractions = [snap.blocks[b].num_tokens / snap.block_size for b in table]
    # (the blocks where block_xy puts them, and what of their bars and stripes never changes: made
    # once per pool size)
    return (_with_bars_and_stripes(pages, fractions + [0.0] * (n - len(table))),
            on_grid(blocks, snap, (PER_ROW, NARROW_PER_ROW), BLOCK_Y, ROW_H),
            padded(links, n, tuple(links)))


@per_snapshot
def summary_html(snap: Snapshot, name: str | None, pool: str) -> str:
    req = next((r for r in snap.requests if r.name == name), None)
    if req is None:
        text = "No request chosen."
    elif not req.block_table:
        text = f"{req.name} holds no block here ({req.status})."
    else:
        pairs = ", ".join(f"page {i} → block {b}" for i, b in enumerate(req.block_table))
        text = f"{req.name} in the {pool} pool: {pairs}."
    return (f'<details class="kv-more"><summary>As text</summary><div class="kv-pagetable-text" '
            f'data-pool="{html.escape(pool)}">{html.escape(text)}</div></details>')


def _frame(per_row: int, n: int) -> Frame:
    rows = block_rows(n, per_row)
    return Frame(0, per_row, BLOCK_Y + (rows - 1) * ROW_H + 0.6, -0.45, 110 + ROW_PX * rows)


class PageTable(pn.viewable.Viewer):
    snapshot = Ref("the snapshot parameter of the pool drawn")
    request = Ref("the parameter naming the request whose table is drawn")
    pool = param.String(default="paged", doc="which pool, for the data-pool attribute")
    title = param.String(default="")

    def __init__(self, **params):
        super().__init__(**params)
        pages, blocks, links = table_data(self._snap, value(self.request))
        self.page_sources = [ColumnDataSource(binary(d)) for d in pages]
        self.block_sources = [ColumnDataSource(binary(d)) for d in blocks]
        self.links = ColumnDataSource(binary(links))
        self.pages, self.blocks = self.page_sources[0], self.block_sources[0]
        n = self._snap.metrics.blocks_total
        wide = _frame(PER_ROW, n)
        fig = figure(x_axis_type=None, y_axis_type=None,  # (no axes, no grid)
                     height=wide.height, x_range=(wide.x0, wide.x1), y_range=(wide.y0, wide.y1),
                     toolbar_location=None, min_border=4, sizing_mode="stretch_width",
                     tools=[HoverTool(tooltips=[("", "@info")])])
        fig.outline_line_color = None
        link = fig.add_glyph(self.links, Segment(x0="x0", y0="y0", x1="x1", y1="y1", line_color="#333333",
                                                 line_width=1.5))
        switched, hovered, fonts = [(link, ("x0", "y0", "x1", "y1"))], [], []
        for sources in (self.block_sources, self.page_sources):
            drawn = draw_cells(fig, *sources, label_size="11px")
            switched += [(drawn[k], drawn["props"][k]) for k in ("halo", "cell", "stripes", "bar", "label")]
            hovered.append(drawn["cell"])
            fonts.append((drawn["label"].glyph, "text_font_size", "11px", "18px"))
        fig.hover.renderers = hovered
        rows = ColumnDataSource({"x": [0.1, 0.1], "y": [PAGE_Y - 0.5, BLOCK_Y - 0.55],
                                 "text": ["logical pages", "physical blocks"]})
        heads = fig.add_glyph(rows,
                              Text(x="x", y="y", text="text", text_font_size="12px", text_color="#555555",
                                         text_baseline="bottom"))
        fonts.append((heads.glyph, "text_font_size", "12px", "18px"))
        reflow(fig, switched, max(NARROW_PX, PER_ROW * MIN_CELL_PX), wide, _frame(NARROW_PER_ROW, n), fonts)
        self.figure = fig
        # (folded "As text": a played page sets it just after the frame that shows a new state)
        self._text = LiveHTML(summary_html(self._snap, value(self.request), self.pool),
                              sizing_mode="stretch_width", margin=(0, 10), css_classes=[AFTER_PAINT])
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
            for sources, datas in ((self.page_sources, pages), (self.block_sources, blocks)):
                for source, data in zip(sources, datas, strict=True):
                    assign_columns(source, data)
            assign_columns(self.links, links)
            self._text.object = summary_html(self._snap, value(self.request), self.pool)

    def __panel__(self):
        return self._layout
