"""A block strip: one Bokeh cell per physical block of a pool, updated in place from snapshots.

Cues (colour is never the only one): tokens = filled in the owner's colour with its name;
reserved-but-empty = white with hatching in the owner's colour; free = light grey outline;
shared by several requests = thick black outline and "×n"; cached-idle (held only by the prefix
cache) = grey with a dashed outline and "cache"; a full block holding the same tokens as an
earlier one (a duplicate sharing would avoid) = dotted, paler, "≡"; a dark bar at the foot of every cell shows
tokens / block size. Hover any cell for its block id, owners, page, tokens, ref count and text.
Tooltip fields are HTML-escaped by Bokeh (no `{safe}` anywhere), so block text stays text.

Hatching and dots are drawn as line segments (HATCH_LINES per cell, hidden where unused), not
with Bokeh's per-cell `hatch_pattern`: BokehJS paints a fresh pattern canvas for every cell
of every copy of the glyph on each update, which cost tens of milliseconds per strip and click.
An update sends only the columns that changed (kvviz/sources.py).
"""

from __future__ import annotations

import panel as pn
import param
from bokeh.models import ColumnDataSource, CustomJS, HoverTool, Quad, Rect, Segment, Text
from bokeh.plotting import figure

from engine import Snapshot, ceil_div
from kvviz import formatting as fmt
from kvviz.web.redraw import Redraw
from kvviz.web.refs import Ref, value, watch
from kvviz.web.sources import assign, binary

# Okabe & Ito's colour-blind-safe palette (black left out: it is the outline colour).
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7")
DARK_FILLS = {"#0072B2", "#D55E00", "#009E73", "#CC79A7"}
FREE_FILL, FREE_LINE, CACHED_FILL = "#f4f4f4", "#b9b9b9", "#bdbdbd"
CELL_W, CELL_H = 0.9, 0.8  # a cell, in data units (one unit per block across, per row down)
DIAGONALS, RULES = 5, 2  # a cell's stripes: "/" for reserved (owner's colour), dotted "=" for a copy
HATCH_LINES = DIAGONALS + RULES
PER_ROW = 16  # cells per row on a wide screen
NARROW_PER_ROW = 8  # ... and when the figure is narrower than NARROW_PX (a phone)
NARROW_PX = 520
ROW_PX = 46

STATE_WORDS = {
    "free": "free",
    "reserved": "reserved, holds no token",
    "tokens": "holds tokens",
    "cached": "cached prefix, idle (evictable)",
}


def owner_colour(request_id: int) -> str:
    return OKABE_ITO[(request_id - 1) % len(OKABE_ITO)]


def _cell(b, names: dict[int, str], block_size: int) -> dict:
    """Look and hover text of one BlockView."""
    owners = [names.get(o, f"R{o}") for o in b.owners]
    base = owner_colour(b.owners[0]) if b.owners else CACHED_FILL
    look = {"fill": base, "alpha": 0.9, "line": "#333333", "width": 1.0, "dash": "solid", "hatch": " ",
            "label": owners[0] if owners else "", "ink": "#ffffff" if base in DARK_FILLS else "#111111"}
    if b.state == "free":
        look.update(fill=FREE_FILL, alpha=1.0, line=FREE_LINE, label="")
    elif b.state == "cached":
        look.update(fill=CACHED_FILL, dash="dashed", line="#555555", label="cache", ink="#111111")
    elif b.state == "reserved":
        look.update(fill="#ffffff", alpha=1.0, line=base, width=1.5, hatch="/", label=owners[0], ink="#111111")
    if len(owners) > 1:
        look.update(fill="#8a8a8a", line="#000000", width=3.5, label=f"×{len(owners)}", ink="#111111")
    state = STATE_WORDS[b.state] + (f", shared by {len(owners)} requests" if len(owners) > 1 else "")
    return {
        **look,
        "block_id": b.block_id,
        "state": state,
        "owners": ", ".join(owners) or ("prefix cache" if b.state == "cached" else "nobody"),
        "page": str(b.logical_page) if b.logical_page >= 0 else "–",
        "tokens": f"{b.num_tokens} / {block_size}",
        "ref_count": b.ref_count,
        "text": fmt.excerpt(b.text, 48) if b.text else "(no tokens)",
    }


def _mark_copies(snap: Snapshot, rows: list[dict]) -> None:
    """Dot the full blocks that hold exactly the tokens of an earlier block at the same page: the
    duplicates prefix sharing would store once. (A display cue only; metrics come from the engine.)"""
    first: dict[tuple, int] = {}
    for b, row in zip(snap.blocks, rows, strict=True):
        if b.state != "tokens" or b.num_tokens != snap.block_size:
            continue
        key = (b.logical_page, b.text)
        if key in first:
            row.update(hatch=".", alpha=0.55, state=row["state"] + f", a copy of block {first[key]}")
            row["label"] += "≡"
        else:
            first[key] = b.block_id


def _stripes() -> list[tuple[float, float, float, float]]:
    """A cell's HATCH_LINES segments (dx0, dy0, dx1, dy1) from its centre, in data units (y grows
    downwards): DIAGONALS "/" stripes, then RULES horizontal rules."""
    w, h = CELL_W / 2, CELL_H / 2
    out = []
    for k in range(DIAGONALS):  # lines u - v = c across the cell, u right and v up, both in [-1, 1]
        c = 4 * (k + 1) / (DIAGONALS + 1) - 2
        (u0, v0), (u1, v1) = ((-1 + c, -1), (1, 1 - c)) if c >= 0 else ((-1, -1 - c), (1 + c, 1))
        out.append((u0 * w, -v0 * h, u1 * w, -v1 * h))
    return out + [(-w, v * h, w, v * h) for v in (-0.62, 0.62)[:RULES]]


STRIPES = _stripes()


def _hatch_data(cells: dict) -> dict:
    """Every cell's HATCH_LINES stripes, in both layouts. The geometry never changes; a cell's
    pattern only shows or hides its stripes (alpha) and colours them, so an update sends just
    the `colour` and `alpha` columns. Reserved ("/"): the diagonals in the owner's colour;
    copy ("."): the rules, dotted."""
    lines: dict[str, list] = {k: [] for k in ("colour", "alpha", "dash")}
    for suffix in ("", "_n"):
        for k in ("x0", "y0", "x1", "y1"):
            lines[k + suffix] = []
    for i, pattern in enumerate(cells["hatch"]):
        for j, stripe in enumerate(STRIPES):
            diagonal = j < DIAGONALS
            shown = pattern == ("/" if diagonal else ".")
            lines["colour"].append(cells["line"][i] if shown and diagonal else "#333333")
            lines["alpha"].append((0.8 if diagonal else 0.6) if shown else 0.0)
            lines["dash"].append("solid" if diagonal else "dotted")
            for suffix in ("", "_n"):
                x, y = cells["x" + suffix][i], cells["y" + suffix][i]
                for k, centre, d in zip(("x0", "y0", "x1", "y1"), (x, y, x, y), stripe, strict=True):
                    lines[k + suffix].append(centre + d)
    return lines


def strip_data(snap: Snapshot) -> tuple[dict, dict, dict]:
    """Column data for the cells, the fill bars and the hatch stripes of a snapshot (pure: no
    Bokeh objects). Every column keeps its length from one snapshot of a pool to the next.

    Positions come twice: `x`, `y`, `left` … for PER_ROW cells a row, and `x_n`, `y_n`,
    `left_n` … for NARROW_PER_ROW; the browser picks one set by the figure's width."""
    names = {r.request_id: r.name for r in snap.requests}
    rows = [_cell(b, names, snap.block_size) for b in snap.blocks]
    _mark_copies(snap, rows)
    cells = {k: [r[k] for r in rows] for k in rows[0]} if rows else {}
    bars: dict[str, list] = {}
    frac = [b.num_tokens / snap.block_size for b in snap.blocks]
    for suffix, per_row in (("", PER_ROW), ("_n", NARROW_PER_ROW)):
        xs = [b.block_id % per_row + 0.5 for b in snap.blocks]
        ys = [b.block_id // per_row + 0.5 for b in snap.blocks]
        cells["x" + suffix], cells["y" + suffix] = xs, ys
        bars["left" + suffix] = [x - 0.4 for x in xs]
        bars["right" + suffix] = [x - 0.4 + 0.8 * f for x, f in zip(xs, frac, strict=True)]
        bars["top" + suffix] = [y + 0.26 for y in ys]
        bars["bottom" + suffix] = [y + 0.36 for y in ys]
    return cells, bars, _hatch_data(cells)


# Runs in the browser whenever the figure's drawn width changes: switch every glyph to the
# narrow (or wide) set of position columns and resize the ranges and the height to match.
REFLOW_JS = """
const narrow = fig.inner_width > 0 && fig.inner_width < narrow_px;
const sfx = narrow ? "_n" : "";
if (fig.x_range.end === (narrow ? narrow_per_row : per_row)) return;
const rows = Math.ceil(count / (narrow ? narrow_per_row : per_row));
for (const r of [cells, labels]) { r.glyph.x = {field: "x" + sfx}; r.glyph.y = {field: "y" + sfx}; }
for (const k of ["left", "right", "top", "bottom"]) { bars.glyph[k] = {field: k + sfx}; }
for (const k of ["x0", "y0", "x1", "y1"]) { stripes.glyph[k] = {field: k + sfx}; }
fig.x_range.end = narrow ? narrow_per_row : per_row;
fig.y_range.start = rows;
fig.height = rows * row_px + 28;
"""


class BlockStrip(pn.viewable.Viewer):
    """The pool of a snapshot parameter (e.g. `state.param.paged`), redrawn in place whenever
    that snapshot changes."""

    snapshot = Ref("the snapshot parameter to draw")
    title = param.String(default="")

    def __init__(self, **params):
        super().__init__(**params)
        snap = value(self.snapshot)
        rows = ceil_div(len(snap.blocks), PER_ROW)
        cells, bars, lines = (binary(d) for d in strip_data(snap))
        self.cells, self.bars, self.lines = ColumnDataSource(cells), ColumnDataSource(bars), ColumnDataSource(lines)
        hover = HoverTool(tooltips=[
            ("block", "@block_id"), ("state", "@state"), ("owner(s)", "@owners"), ("logical page", "@page"),
            ("tokens", "@tokens"), ("ref count", "@ref_count"), ("text", "@text"),
        ])
        fig = figure(x_axis_type=None, y_axis_type=None,  # (no axes, no grid)
                     height=rows * ROW_PX + 28, x_range=(0, PER_ROW), y_range=(rows, 0), tools=[hover],
                     toolbar_location=None, sizing_mode="stretch_width", min_border=4, title=self.title)
        fig.outline_line_color = None
        fig.title.text_font_size = "15px"
        # (add_glyph, not fig.rect & co: those also build a nonselection and a muted copy of each
        # glyph, which the browser makes by itself when needed)
        cell = fig.add_glyph(self.cells, Rect(
            x="x", y="y", width=CELL_W, height=CELL_H, fill_color="fill", fill_alpha="alpha",
            line_color="line", line_width="width", line_dash="dash"))
        hover.renderers = [cell]
        stripes = fig.add_glyph(self.lines, Segment(
            x0="x0", y0="y0", x1="x1", y1="y1", line_color="colour", line_alpha="alpha", line_dash="dash",
            line_width=1.5))
        bars = fig.add_glyph(self.bars, Quad(
            left="left", right="right", top="top", bottom="bottom", fill_color="#222222", fill_alpha=0.75,
            line_color=None))
        labels = fig.add_glyph(self.cells, Text(
            x="x", y="y", text="label", text_align="center", text_baseline="middle", text_font_size="12px",
            text_font_style="bold", text_color="ink", y_offset=-3))
        fig.js_on_change("inner_width", CustomJS(code=REFLOW_JS, args=dict(
            fig=fig, cells=cell, labels=labels, bars=bars, stripes=stripes, count=len(snap.blocks), per_row=PER_ROW,
            narrow_per_row=NARROW_PER_ROW, narrow_px=NARROW_PX, row_px=ROW_PX)))
        self.figure = fig
        self._pane = pn.pane.Bokeh(fig, sizing_mode="stretch_width", css_classes=["kv-strip"])
        watch(self.snapshot, Redraw(self._update))

    def _update(self) -> None:
        cells, bars, lines = strip_data(value(self.snapshot))
        with pn.io.hold():
            for source, data in ((self.cells, cells), (self.bars, bars), (self.lines, lines)):
                assign(source, binary(data))

    def __panel__(self):
        return self._pane
