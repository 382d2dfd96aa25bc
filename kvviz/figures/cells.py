"""The block strip's visual language, shared by every figure that draws blocks (the strip, the
page table): what a block looks like in each state, and the glyphs that draw it.

Cues (colour is never the only one): tokens = filled in the owner's colour with its name;
reserved-but-empty = white with hatching in the owner's colour; free = light grey outline;
shared by several requests = thick black outline and "×n"; cached-idle (held only by the prefix
cache) = grey with a dashed outline and "cache"; a full block holding the same tokens as an
earlier one (a duplicate sharing would avoid) = dotted, paler, "≡"; a dark bar at the foot of
every cell shows tokens / block size; a red halo = read by the attention kernel in the last
step. Tooltip fields are HTML-escaped by Bokeh (no `{safe}` anywhere), so block text stays text.

Hatching and dots are drawn as line segments (HATCH_LINES per cell, hidden where unused), not
with Bokeh's per-cell `hatch_pattern`: BokehJS paints a fresh pattern canvas for every cell
of every copy of the glyph on each update, which cost tens of milliseconds per strip and click.

Positions come in two layouts: `x`, `y` … for a wide screen and `x_n`, `y_n` … for a narrow
one (a phone); `kvviz/figures/reflow.py` switches between them in the browser.
"""

from __future__ import annotations

import functools

import numpy as np
from bokeh.models import Quad, Rect, Segment, Text

from engine import Snapshot
from kvviz import formatting as fmt

# Okabe & Ito's colour-blind-safe palette (black left out: it is the outline colour), then six
# of Paul Tol's "muted" colours, so that thirteen requests in a row get thirteen colours.
PALETTE = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
           "#882255", "#332288", "#44AA99", "#999933", "#CC6677", "#117733")
DARK_INK, LIGHT_INK = "#111111", "#ffffff"


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two '#rrggbb' colours (1 to 21)."""
    def luminance(c: str) -> float:
        rgb = [int(c[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b_ = [x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in rgb]
        return 0.2126 * r + 0.7152 * g + 0.0722 * b_
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


# Fills a label is written on in white: those where white reads better than near-black.
DARK_FILLS = {c for c in PALETTE if contrast(c, LIGHT_INK) > contrast(c, DARK_INK)}
FREE_FILL, FREE_LINE, CACHED_FILL, SHARED_FILL = "#f4f4f4", "#b9b9b9", "#bdbdbd", "#8a8a8a"
READ_HALO = "#E4003A"  # the attention kernel read this block in the last step
CELL_W, CELL_H = 0.9, 0.8  # a cell, in data units (one unit per block across, per row down)
DIAGONALS, RULES = 5, 2  # a cell's stripes: "/" for reserved (owner's colour), dotted "=" for a copy
HATCH_LINES = DIAGONALS + RULES
LAYOUTS = ("", "_n")  # the wide and the narrow position columns

STATE_WORDS = {
    "free": "free",
    "reserved": "reserved, holds no token",
    "tokens": "holds tokens",
    "cached": "cached prefix, idle (evictable)",
}


def owner_colour(request_id: int) -> str:
    return PALETTE[(request_id - 1) % len(PALETTE)]


def ink_on(fill: str) -> str:
    return LIGHT_INK if fill in DARK_FILLS else DARK_INK


def cell_look(b, names: dict[int, str], block_size: int) -> dict:
    """Look and hover text of one BlockView (a new dict: the caller may change it)."""
    return dict(_cell_look(b, tuple(names.get(o, f"R{o}") for o in b.owners), block_size))


@functools.lru_cache(maxsize=4096)
def _cell_look(b, owners: tuple[str, ...], block_size: int) -> dict:
    """(Kept per block state and owners' names: most blocks look the same from one step to the next,
    and a snapshot's BlockViews are frozen. Shared: `cell_look` hands out copies.)"""
    base = owner_colour(b.owners[0]) if b.owners else CACHED_FILL
    look = {"fill": base, "alpha": 0.9, "line": "#333333", "lw": 1.0, "dash": "solid", "hatch": " ",
            "label": owners[0] if owners else "", "ink": ink_on(base)}
    if b.state == "free":
        look.update(fill=FREE_FILL, alpha=1.0, line=FREE_LINE, label="")
    elif b.state == "cached":
        look.update(fill=CACHED_FILL, dash="dashed", line="#555555", label="cache", ink="#111111")
    elif b.state == "reserved":
        look.update(fill="#ffffff", alpha=1.0, line=base, lw=1.5, hatch="/", label=owners[0], ink="#111111")
    if len(owners) > 1:
        look.update(fill=SHARED_FILL, line="#000000", lw=3.5, label=f"×{len(owners)}", ink="#111111")
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


def mark_copies(snap: Snapshot, rows: list[dict]) -> None:
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


def cells_of(snap: Snapshot) -> list[dict]:
    """Every block's look, as the strip draws it."""
    names = {r.request_id: r.name for r in snap.requests}
    rows = [cell_look(b, names, snap.block_size) for b in snap.blocks]
    mark_copies(snap, rows)
    return rows


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


def hatch_data(cells: dict) -> dict:
    """Every cell's HATCH_LINES stripes, in both layouts. The geometry never changes; a cell's
    pattern only shows or hides its stripes (alpha) and colours them, so an update sends just
    the `colour` and `alpha` columns. Reserved ("/"): the diagonals in the owner's colour;
    copy ("."): the rules, dotted. (Row i * HATCH_LINES + j is cell i's stripe j.)"""
    lines = hatch_look(cells["hatch"], cells["line"])
    if not cells["hatch"]:
        return {**lines, **{c + s: [] for s in LAYOUTS for c in ("x0", "y0", "x1", "y1")}}
    for suffix in LAYOUTS:
        lines.update(_stripes_at(np.asarray(cells["x" + suffix], dtype=float),
                                 np.asarray(cells["y" + suffix], dtype=float),
                                 np.asarray(cells["cw" + suffix], dtype=float), suffix))
    return lines


def hatch_look(patterns: list[str], line: list[str]) -> dict:
    """The stripes' `colour`, `alpha` and `dash` columns for cells of these patterns and lines (a new
    dict, but its columns shared by every call with the same patterns and lines: the caller must not
    change them; `alpha` is read-only)."""
    return dict(_hatch_look(tuple(patterns), tuple(line)))


@functools.lru_cache(maxsize=256)
def _hatch_look(patterns: tuple[str, ...], line: tuple[str, ...]) -> dict:
    n = len(patterns)
    if not n:
        return {"colour": [], "alpha": [], "dash": []}
    diagonal = np.arange(HATCH_LINES) < DIAGONALS
    shown = np.where(diagonal[None, :], np.asarray([p == "/" for p in patterns])[:, None],
                     np.asarray([p == "." for p in patterns])[:, None])
    alpha = np.where(shown, np.where(diagonal, 0.8, 0.6)[None, :], 0.0).ravel()
    alpha.flags.writeable = False
    return {
        "colour": np.where(shown & diagonal[None, :], np.asarray(line, dtype=object)[:, None],
                           "#333333").ravel().tolist(),
        "alpha": alpha,
        "dash": ["solid" if d else "dotted" for d in diagonal] * n,
    }


def _stripes_at(x: np.ndarray, y: np.ndarray, cw: np.ndarray, suffix: str) -> dict[str, np.ndarray]:
    """The stripes' end points for cells centred at (x, y), `cw` wide, as the columns of a layout."""
    stripes = np.asarray(STRIPES)  # (HATCH_LINES, 4): dx0, dy0, dx1, dy1 from the centre
    sx = cw / CELL_W
    return {"x0" + suffix: (x[:, None] + stripes[None, :, 0] * sx[:, None]).ravel(),
            "y0" + suffix: (y[:, None] + stripes[None, :, 1]).ravel(),
            "x1" + suffix: (x[:, None] + stripes[None, :, 2] * sx[:, None]).ravel(),
            "y1" + suffix: (y[:, None] + stripes[None, :, 3]).ravel()}


@functools.lru_cache(maxsize=32)
def grid(n: int, widths: tuple[int, ...], y0: float = 0.5,
         row_h: float = 1.0) -> dict[str, dict[str, np.ndarray]]:
    """Where `n` blocks sit in rows of `widths` cells (one per layout: LAYOUTS), block b at
    (b % width + 0.5, y0 + (b // width) * row_h), and what of their fill bars and stripes never
    changes: the same columns as `place`, `bar_data` and `hatch_data` give them (whole block
    widths), made once per pool size as read-only arrays (the same objects every time:
    kvviz/web/sources.py neither copies nor compares them again). `on_grid` uses them."""
    cells: dict[str, np.ndarray] = {}
    bars: dict[str, np.ndarray] = {}
    lines: dict[str, np.ndarray] = {}
    ids = np.arange(n)
    for suffix, width in zip(LAYOUTS, widths, strict=True):
        x, y = (ids % width + 0.5).astype(float), y0 + (ids // width) * row_h
        cw = np.full(n, CELL_W)
        cells.update({"x" + suffix: x, "y" + suffix: y, "cw" + suffix: cw, "hw" + suffix: cw + 0.06})
        bars.update({"left" + suffix: x - 0.44 * cw, "top" + suffix: y + 0.26, "bottom" + suffix: y + 0.36})
        lines.update(_stripes_at(x, y, cw, suffix))
    for column in (*cells.values(), *bars.values(), *lines.values()):
        column.flags.writeable = False
    return {"cells": cells, "bars": bars, "lines": lines}


def on_grid(cells: dict, snap: Snapshot, widths: tuple[int, ...], y0: float = 0.5,
            row_h: float = 1.0) -> tuple[dict, dict, dict]:
    """`cells` (the looks of `snap`'s blocks, which a snapshot holds in block-id order) placed on
    their `grid`, with their fill bars (tokens / block size) and stripes: (cells, bars, stripes),
    the same columns, bit for bit and in the same order, as `place`, `bar_data` and `hatch_data`
    make them cell by cell."""
    fixed = grid(len(snap.blocks), widths, y0, row_h)
    cells.update(fixed["cells"])
    f = np.asarray([b.num_tokens / snap.block_size for b in snap.blocks], dtype=float)
    bars, fixed_bars = {}, fixed["bars"]
    for suffix in LAYOUTS:  # (bar_data's columns, in its order; right: x + 0.44 * w * (2 * f - 1), as there)
        bars["left" + suffix] = fixed_bars["left" + suffix]
        bars["right" + suffix] = cells["x" + suffix] + 0.44 * cells["cw" + suffix] * (2 * f - 1)
        for name in ("top", "bottom"):
            bars[name + suffix] = fixed_bars[name + suffix]
    return cells, bars, {**hatch_look(cells["hatch"], cells["line"]), **fixed["lines"]}


def place(cells: dict, suffix: str, xs: list[float], ys: list[float],
          widths: list[float] | None = None) -> None:
    """Set one layout's positions of `cells`: centres and cell widths (default CELL_W); the
    read halo is a little wider than its cell."""
    widths = [CELL_W] * len(xs) if widths is None else widths
    cells["x" + suffix], cells["y" + suffix], cells["cw" + suffix] = xs, ys, widths
    cells["hw" + suffix] = [w + 0.06 for w in widths]


def bar_data(cells: dict, fractions: list[float]) -> dict:
    """The fill bar at the foot of each cell (tokens / block size), in both layouts."""
    bars: dict[str, list] = {}
    for suffix in LAYOUTS:
        xs, ys, ws = cells["x" + suffix], cells["y" + suffix], cells["cw" + suffix]
        bars["left" + suffix] = [x - 0.44 * w for x, w in zip(xs, ws, strict=True)]
        bars["right" + suffix] = [x + 0.44 * w * (2 * f - 1)
                                  for x, w, f in zip(xs, ws, fractions, strict=True)]
        bars["top" + suffix] = [y + 0.26 for y in ys]
        bars["bottom" + suffix] = [y + 0.36 for y in ys]
    return bars


def draw_cells(fig, cells, bars, lines, label_size: str = "12px") -> dict:
    """Add the glyphs of the cells (sources `cells`, `bars`, `lines`) to `fig`, halo first:
    returns the renderers by name, with the properties `reflow` switches between layouts."""
    # (add_glyph, not fig.rect & co: those also build a nonselection and a muted copy of each
    # glyph, which the browser makes by itself when needed)
    halo = fig.add_glyph(cells, Rect(x="x", y="y", width="hw", height=CELL_H + 0.18,
                                     fill_color=READ_HALO, fill_alpha="read", line_color=None))
    cell = fig.add_glyph(cells, Rect(x="x", y="y", width="cw", height=CELL_H, fill_color="fill",
                                     fill_alpha="alpha", line_color="line", line_width="lw",
                                     line_dash="dash"))
    stripes = fig.add_glyph(lines, Segment(x0="x0", y0="y0", x1="x1", y1="y1", line_color="colour",
                                           line_alpha="alpha", line_dash="dash", line_width=1.5))
    bar = fig.add_glyph(bars,
                        Quad(left="left", right="right", top="top", bottom="bottom", fill_color="#222222",
                                   fill_alpha=0.75, line_color=None))
    label = fig.add_glyph(cells, Text(x="x", y="y", text="label", text_align="center", text_baseline="middle",
                                      text_font_size=label_size, text_font_style="bold", text_color="ink",
                                      y_offset=-3))
    return {"halo": halo, "cell": cell, "stripes": stripes, "bar": bar, "label": label,
            "props": {"halo": ("x", "y", "width:hw"), "cell": ("x", "y", "width:cw"),
                      "stripes": ("x0", "y0", "x1", "y1"), "bar": ("left", "right", "top", "bottom"),
                      "label": ("x", "y")}}
