"""A block strip: one Bokeh cell per physical block of a pool, updated in place from snapshots.

Each cell is drawn in the strip's visual language (kvviz/figures/cells.py). Two optional layers:
`gaps` boxes every run of free blocks with its length, so that separate holes look separate
(node 01's lesson); `reads` lights up the blocks the attention kernel read in the last engine
step (`Snapshot.block_reads`), and the hover says which requests read each one through which
page of their block table. Hover any cell for its block id, owners, page, tokens, ref count
and text. An update sends only the columns that changed (kvviz/web/sources.py).
"""

from __future__ import annotations

import html

import panel as pn
import param
from bokeh.models import ColumnDataSource, HoverTool, Rect, Text
from bokeh.plotting import figure

from engine import Snapshot, ceil_div
from kvviz.figures.cells import CELL_H, LAYOUTS, cells_of, draw_cells, on_grid
from kvviz.figures.reflow import Frame, reflow
from kvviz.web.live_html import LiveHTML
from kvviz.web.per_snapshot import per_snapshot
from kvviz.web.redraw import Redraw
from kvviz.web.refs import Ref, value, watch
from kvviz.web.sources import assign_columns, binary, padded

PER_ROW = 16  # cells per row on a wide screen (the strips of nodes 02 and 03)
NARROW_PER_ROW = 8  # ... and on a narrow one (a phone)
MIN_CELL_PX = 24  # narrower cells than this switch the strip to NARROW_PER_ROW
NARROW_PX = 520
ROW_PX = 46


def free_runs(snap: Snapshot) -> list[tuple[int, int]]:
    """(first block, length) of every run of consecutive free blocks, in physical order."""
    runs, start = [], None
    for b in (*snap.blocks, None):
        if b is not None and b.state == "free":
            start = b.block_id if start is None else start
        elif start is not None:
            runs.append((start, (b.block_id if b is not None else len(snap.blocks)) - start))
            start = None
    return runs


@per_snapshot
def gap_data(snap: Snapshot, per_row: int, narrow_per_row: int) -> dict:
    """One box per row segment of each free run, in both layouts (pure), labelled with the
    run's length; a run that goes on to the next row says so ("…")."""
    out: dict[str, dict] = {}
    for suffix, width in zip(LAYOUTS, (per_row, narrow_per_row), strict=True):
        cols: dict[str, list] = {"x": [], "y": [], "width": [], "text": []}
        for start, length in free_runs(snap):
            b, end = start, start + length
            while b < end:
                row_end = min(end, (b // width + 1) * width)
                n = row_end - b
                words = f"{length} free" if n >= 2 else str(length)
                cols["x"].append(b % width + n / 2)
                cols["y"].append(b // width + 0.5)
                cols["width"].append(n - 0.04)
                cols["text"].append(("… " if b > start else "") + words + (" …" if row_end < end else ""))
                b = row_end
        out[suffix] = padded(cols, len(snap.blocks), ("x", "y", "width"), blank={"text": ""})
    return {k + s: v for s, cols in out.items() for k, v in cols.items()}


def last_reads(snap: Snapshot) -> dict[int, list[tuple[str, int]]]:
    """Block -> (request, page) for each running request whose attention read it in the last
    engine step, when that step was a decode step; {} otherwise (a prefill step reads no
    cache through the decode kernel, and `block_reads` then still holds an older step's)."""
    if snap.step == 0 or not any(snap.block_reads):
        return {}
    now = [e for e in snap.events if e.step == snap.step]
    if any(e.kind == "request_admitted" for e in now):
        return {}
    decoded = {e.request_id for e in now if e.kind == "request_finished"}
    decoded |= {r.request_id for r in snap.requests if r.status == "running"}
    out: dict[int, list[tuple[str, int]]] = {b: [] for b, n in enumerate(snap.block_reads) if n}
    for r in snap.requests:
        if r.request_id in decoded:
            for page, b in enumerate(r.block_table):
                if b in out:
                    out[b].append((r.name, page))
    return out


def reads_caption(snap: Snapshot, shown: bool) -> str:
    if not shown or not (reads := last_reads(snap)):
        return '<div class="kv-reads kv-empty"></div>'
    readers = {name for who in reads.values() for name, _ in who}
    shared = sum(len(who) > 1 for who in reads.values())
    text = (f"Step {snap.step}: the attention kernel read {len(reads)} block{'s' if len(reads) != 1 else ''} "
            f"(red halo) for {len(readers)} request{'s' if len(readers) != 1 else ''}")
    if shared:
        most = max(len(who) for who in reads.values())
        text += (
            f"; {shared} of them held once and read by up to {most} requests, each through its own block "
            "table")
    return (
        f'<div class="kv-reads" role="status">{html.escape(text)}. Hover a block: who read it, through which '
        'page.</div>')


@per_snapshot
def strip_data(snap: Snapshot, per_row: int = PER_ROW, narrow_per_row: int = NARROW_PER_ROW,
               show_reads: bool = True) -> tuple[dict, dict, dict]:
    """Column data for the cells, the fill bars and the hatch stripes of a snapshot (pure: no
    Bokeh objects), with positions for both layouts (kvviz/figures/reflow.py). Every column
    keeps its length from one snapshot of a pool to the next."""
    rows = cells_of(snap)
    reads = last_reads(snap) if show_reads else {}
    for row in rows:
        who = reads.get(row["block_id"])
        row["read"] = 1.0 if who is not None else 0.0
        row["reads"] = ("; ".join(f"{n} via its page {p}" for n, p in who) or "a request since released"
                        if who is not None else "not in the last step")
    cells = {k: [r[k] for r in rows] for k in rows[0]}
    # (the positions, and what of the bars and stripes never changes, made once per pool size)
    return on_grid(cells, snap, (per_row, narrow_per_row))


class BlockStrip(pn.viewable.Viewer):
    """The pool of a snapshot parameter (e.g. `state.param.paged`), redrawn in place whenever
    that snapshot changes."""

    snapshot = Ref("the snapshot parameter to draw")
    reads = param.ClassSelector(class_=param.Parameter, default=None, allow_refs=False,
                                doc="a Boolean parameter (same owner): show the last step's reads while True")
    title = param.String(default="")
    per_row = param.Integer(default=PER_ROW, bounds=(1, None), doc="cells per row on a wide screen")
    gaps = param.Boolean(default=False, doc="box every run of free blocks with its length")

    def __init__(self, **params):
        super().__init__(**params)
        snap = value(self.snapshot)
        cells, bars, lines = (binary(d) for d in self._data())
        self.cells, self.bars, self.lines = (ColumnDataSource(cells), ColumnDataSource(bars),
                                             ColumnDataSource(lines))
        hover = HoverTool(tooltips=[
            ("block", "@block_id"), ("state", "@state"), ("owner(s)", "@owners"), ("logical page", "@page"),
            ("tokens", "@tokens"), ("ref count", "@ref_count"), ("text", "@text"),
        ] + ([("read in the last step by", "@reads")] if self.reads is not None else []))
        rows, narrow_rows = ceil_div(len(snap.blocks), self.per_row), ceil_div(len(snap.blocks),
                                                                               NARROW_PER_ROW)
        fig = figure(x_axis_type=None, y_axis_type=None,  # (no axes, no grid)
                     height=rows * ROW_PX + 10, x_range=(0, self.per_row), y_range=(rows, 0), tools=[hover],
                     toolbar_location=None, sizing_mode="stretch_width", min_border=4)
        fig.outline_line_color = None
        drawn = draw_cells(fig, self.cells, self.bars, self.lines)
        hover.renderers = [drawn["cell"]]
        switched = [(drawn[k], drawn["props"][k]) for k in ("halo", "cell", "stripes", "bar", "label")]
        fonts = [(drawn["label"].glyph, "text_font_size", "12px", "18px")]
        self.gap_source = None
        if self.gaps:
            self.gap_source = ColumnDataSource(binary(gap_data(snap, self.per_row, NARROW_PER_ROW)))
            box = fig.add_glyph(self.gap_source, Rect(x="x", y="y", width="width", height=CELL_H + 0.12,
                                                      fill_alpha=0, line_color="#444444", line_width=2,
                                                      line_dash="dashed"))
            words = fig.add_glyph(self.gap_source, Text(x="x", y="y", text="text", text_align="center",
                                                        text_baseline="middle", text_font_size="13px",
                                                        text_font_style="bold", text_color="#444444"))
            switched += [(box, ("x", "y", "width")), (words, ("x", "y", "text"))]
            fonts.append((words.glyph, "text_font_size", "13px", "18px"))
        reflow(fig, switched, max(NARROW_PX, self.per_row * MIN_CELL_PX),
               Frame(0, self.per_row, rows, 0, rows * ROW_PX + 10),
               Frame(0, NARROW_PER_ROW, narrow_rows, 0, narrow_rows * ROW_PX + 10), fonts)
        self.figure = fig
        self._pane = pn.pane.Bokeh(fig, sizing_mode="stretch_width", css_classes=["kv-strip"])
        # The title is HTML, not the canvas's: it wraps on a phone instead of being cut off, and
        # takes the stylesheet's projector size.
        parts = [pn.pane.HTML(f'<div class="kv-figure-title">{html.escape(self.title)}</div>',
                              sizing_mode="stretch_width", margin=(6, 10, 0, 10))] if self.title else []
        self._caption = None
        if self.reads is not None:
            self._caption = LiveHTML(reads_caption(snap, value(self.reads)), sizing_mode="stretch_width",
                                     margin=(0, 10))
            watch(self.snapshot, Redraw(self._update), self.reads)
            parts += [self._pane, self._caption]
        else:
            watch(self.snapshot, Redraw(self._update))
            parts.append(self._pane)
        self._layout = parts[0] if len(parts) == 1 else pn.Column(*parts, sizing_mode="stretch_width",
                                                                   css_classes=["kv-strip-box"])

    def _data(self):
        shown = value(self.reads) if self.reads is not None else False
        return strip_data(value(self.snapshot), self.per_row, NARROW_PER_ROW, shown)

    def _update(self) -> None:
        cells, bars, lines = self._data()
        snap = value(self.snapshot)
        with pn.io.hold():
            for source, data in ((self.cells, cells), (self.bars, bars), (self.lines, lines)):
                assign_columns(source, data)
            if self.gap_source is not None:
                assign_columns(self.gap_source, gap_data(snap, self.per_row, NARROW_PER_ROW))
            if self._caption is not None:
                self._caption.object = reads_caption(snap, value(self.reads))

    def __panel__(self):
        return self._layout
