"""The radix tree of node 03, root at the left: the shared trunk, then one branch per suffix.

Each node is labelled with an excerpt of its text cut to its box (Bokeh text glyphs: plain text,
never HTML; what follows the words its siblings share, where those would fill the box), its blocks
and its lock count (explained in a line under the title), and coloured as its blocks are in the strip: one
request's own branch in that request's colour, a part several requests share in the strip's shared grey.
Unlocked nodes (lock 0, used by no live request) are idle cache, drawn dashed and light: those
are what eviction removes first.
"""

from __future__ import annotations

import panel as pn
from bokeh.models import ColumnDataSource, HoverTool, Rect, Segment, Text
from bokeh.plotting import figure

from engine import Snapshot
from kvviz import formatting as fmt
from kvviz.figures.cells import CACHED_FILL, SHARED_FILL, ink_on, owner_colour
from kvviz.figures.reflow import reflow
from kvviz.web.live_html import LiveHTML
from kvviz.web.per_snapshot import per_snapshot
from kvviz.web.redraw import Redraw
from kvviz.web.refs import Ref, value, watch
from kvviz.web.sources import assign_columns, binary, padded

ROW_PX = 64
# a figure narrower than this draws the short labels: the long ones would spill out of the boxes
NARROW_PX = 900
# A label is cut to its box: the box's width in pixels at the narrowest figure of each layout (the
# wide one from NARROW_PX; a phone's ~330 px), over a character's width at the label's font size
# (12 px; 0.6 em, a wide estimate for a proportional font). The hover has the whole text.
BOX_WIDTH = 0.84  # of a column (one tree level)
LABEL_PX, CHAR_EM, BOX_PAD_PX = 12, 0.6, 6
NARROW_MIN_PX = 330
# What each box's second line says (its blocks and lock count), under the figure's title.
LOCK_NOTE = ("Each box: its text, its blocks, and <b>lock n</b>: how many live requests use it. "
             "Lock 0 (dashed) is idle cache, evicted first.")


def label_chars(figure_px: float, columns: float) -> int:
    """How many characters of a label fit in a box of a figure `figure_px` wide, `columns` levels."""
    box_px = BOX_WIDTH * figure_px / columns
    return max(4, int((box_px - BOX_PAD_PX) / (LABEL_PX * CHAR_EM)))


def shared_words(texts: list[str]) -> int:
    """The length of the whole words all of `texts` (siblings' labels) begin with: 0 for one text."""
    if len(texts) < 2:
        return 0
    first, last = min(texts), max(texts)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first.rfind(" ", 0, n) + 1  # (after the last space both share: a word cut in one is not shared)


def cut(text: str, shared: int, chars: int) -> str:
    """`text` in `chars` characters: whole, else its distinguishing part (the words after what its
    siblings share, after '…') when the shared words would leave it too little room."""
    if len(text) <= chars or shared == 0 or chars - shared >= 10:
        return fmt.excerpt(text, chars)
    return "…" + fmt.excerpt(text[shared:], chars - 1)


def layout(snap: Snapshot) -> tuple[dict, dict, int]:
    """Node and edge columns (x = depth, y = leaf order) and the number of rows (pure)."""
    children: dict[int, list] = {}
    for n in snap.radix:
        children.setdefault(n.parent_id, []).append(n)
    pos: dict[int, tuple[float, float]] = {0: (0.0, 0.0)}
    order = []
    next_row = [0]

    def place(node_id: int, depth: int) -> float:
        kids = sorted(children.get(node_id, []), key=lambda n: n.node_id)
        if not kids:
            y = float(next_row[0])
            next_row[0] += 1
        else:
            ys = [place(k.node_id, depth + 1) for k in kids]
            order.extend(kids)
            y = sum(ys) / len(ys)
        pos[node_id] = (float(depth), y)
        return y

    place(0, 0)
    rows = max(next_row[0], 1)
    columns = max(2.5, max(x for x, _y in pos.values()) + 0.5) + 0.5  # (as the figure's x range: _x_end)
    wide, narrow = label_chars(NARROW_PX, columns), label_chars(NARROW_MIN_PX, columns)
    texts = {n.node_id: fmt.printable(n.text) for n in snap.radix}
    shared = {parent: shared_words([texts[k.node_id] for k in kids]) for parent, kids in children.items()}
    nodes = {"x": [0.0], "y": [pos[0][1]], "label": ["root"], "sub": [""], "label_n": ["root"], "sub_n": [""],
             "fill": ["#444444"],
             "dash": ["solid"], "ink": ["#ffffff"], "text": ["(empty: the start of every prompt)"],
             "blocks": ["–"], "lock": ["–"]}
    edges = {"x0": [], "y0": [], "x1": [], "y1": []}
    owners_of = {b.block_id: b.owners for b in snap.blocks}
    for n in sorted(order, key=lambda n: n.node_id):
        x, y = pos[n.node_id]
        owners = {o for b in n.blocks for o in owners_of.get(b, ())}
        fill = (CACHED_FILL if n.lock_ref == 0 or not owners else
                owner_colour(owners.pop()) if len(owners) == 1 else SHARED_FILL)
        nodes["x"].append(x)
        nodes["y"].append(y)
        nodes["label"].append(cut(texts[n.node_id], shared[n.parent_id], wide))
        nodes["sub"].append(f"blocks {fmt.block_ranges(n.blocks)} · lock {n.lock_ref}")
        nodes["label_n"].append(cut(texts[n.node_id], shared[n.parent_id], narrow))
        nodes["sub_n"].append(f"{fmt.block_ranges(n.blocks)} · lock {n.lock_ref}")
        nodes["fill"].append(fill)
        nodes["dash"].append("solid" if n.lock_ref > 0 else "dashed")
        nodes["ink"].append(ink_on(fill))
        nodes["text"].append(fmt.excerpt(n.text, 120))
        nodes["blocks"].append(fmt.block_ranges(n.blocks))
        nodes["lock"].append(f"{n.lock_ref} live request(s)" if n.lock_ref else "0: idle, evictable")
        px, py = pos[n.parent_id]
        edges["x0"].append(px + 0.42)
        edges["y0"].append(py)
        edges["x1"].append(x - 0.42)
        edges["y1"].append(y)
    return nodes, edges, rows


@per_snapshot
def source_data(snap: Snapshot) -> tuple[dict, dict, int]:
    """`layout` padded to a fixed number of rows (see kvviz/sources.py): every node holds at
    least one block, so the tree never has more than blocks_total nodes besides the root."""
    nodes, edges, rows = layout(snap)
    capacity = snap.metrics.blocks_total
    return (padded(nodes, capacity + 1, ("x", "y")), padded(edges, capacity, ("x0", "y0", "x1", "y1")), rows)


class RadixTreeFigure(pn.viewable.Viewer):
    """The engine's radix tree of cached prefixes, drawn from a snapshot parameter."""

    snapshot = Ref("the snapshot parameter whose radix tree is drawn")
    sharing = Ref("the parameter saying whether prefix sharing is on")

    def __init__(self, **params):
        super().__init__(**params)
        nodes, edges, rows = source_data(value(self.snapshot))
        self.nodes, self.edges = ColumnDataSource(binary(nodes)), ColumnDataSource(binary(edges))
        fig = figure(x_axis_type=None, y_axis_type=None,  # (no axes, no grid)
                     height=self._height(rows), x_range=(-0.5, self._x_end(nodes)),
                     y_range=(rows - 0.5, -0.5), toolbar_location=None, sizing_mode="stretch_width",
                     min_border=4,
                     tools=[HoverTool(tooltips=[("text", "@text"), ("blocks", "@blocks"),
                                                ("lock", "@lock")])])
        fig.outline_line_color = None
        fig.add_glyph(self.edges,
                      Segment(x0="x0", y0="y0", x1="x1", y1="y1", line_color="#333333", line_width=2))
        box = fig.add_glyph(self.nodes, Rect(x="x", y="y", width=0.84, height=0.78, fill_color="fill",
                                             line_color="#222222", line_dash="dash", line_width=1.5))
        fig.hover.renderers = [box]
        label = fig.add_glyph(self.nodes,
                              Text(x="x", y="y", text="label", text_align="center", text_baseline="bottom",
                                               text_font_size="12px", text_color="ink", y_offset=-1))
        sub = fig.add_glyph(self.nodes,
                            Text(x="x", y="y", text="sub", text_align="center", text_baseline="top",
                                             text_font_size="11px", text_color="ink", y_offset=3))
        # (narrow: the short labels; the ranges and the height stay the tree's own)
        reflow(fig, [(label, ("text:label",)), (sub, ("text:sub",))], NARROW_PX, None, None,
               [(label.glyph, "text_font_size", "12px", "18px"),
                (sub.glyph, "text_font_size", "11px", "18px")])
        self.figure = fig
        self._empty = LiveHTML(self._empty_html(), sizing_mode="stretch_width", margin=(0, 10))
        watch(self.snapshot, Redraw(self._update))
        fig.css_classes = ["kv-tree"]
        fig.html_attributes = self._off()
        # (the title in HTML: it wraps on a phone, and hides with the figure while sharing is off)
        self._title = LiveHTML(self._title_html(), sizing_mode="stretch_width", margin=(6, 10, 0, 10))
        self._layout = pn.Column(self._empty, self._title, pn.pane.Bokeh(fig, sizing_mode="stretch_width"),
                                 sizing_mode="stretch_width")

    def _title_html(self) -> str:
        return ('<div class="kv-figure-title">Radix tree of cached prefixes (root at the left)</div>'
                f'<div class="kv-figure-note">{LOCK_NOTE}</div>') if value(self.sharing) else ""

    def _off(self) -> dict[str, str]:
        """While sharing is off the figure carries `data-off` and kvviz.css hides it. Bokeh's
        `visible` or a CSS class would do the same, but changing either makes BokehJS lay out the
        whole page again (about 100 ms a toggle); an HTML attribute does not."""
        return {} if value(self.sharing) else {"data-off": ""}

    @staticmethod
    def _x_end(nodes: dict) -> float:
        """One column per level of the tree (at least root, trunk and branches): boxes as wide as they can
        be."""
        return max(2.5, max((x for x in nodes["x"] if x == x), default=0.0) + 0.5)  # (NaN rows are padding)

    @staticmethod
    def _height(rows: int) -> int:
        return max(rows, 2) * ROW_PX + 12

    def _empty_html(self) -> str:
        if value(self.sharing):
            return ""
        return ('<div class="kv-note">Prefix sharing is off, so the engine keeps no radix tree: every '
                "request computes and stores its own copy of the system prompt.</div>")

    def _update(self) -> None:
        nodes, edges, rows = source_data(value(self.snapshot))
        with pn.io.hold():
            assign_columns(self.nodes, nodes)
            assign_columns(self.edges, edges)
            # (each set only where it changes: Bokeh validates a value before it finds it unchanged,
            # and a live answer redraws the tree at each of its ~10 states)
            fig = self.figure
            _set(fig.y_range, start=rows - 0.5, end=-0.5)
            _set(fig.x_range, end=self._x_end(nodes))
            if value(self.sharing):  # (hidden, it keeps its height: no re-layout on the way back)
                _set(fig, height=self._height(rows))
            self._empty.object = self._empty_html()
            self._title.object = self._title_html()
            _set(fig, html_attributes=self._off())

    def __panel__(self):
        return self._layout


def _set(model, **props) -> None:
    """Set those of `props` that differ from `model`'s."""
    changed = {k: v for k, v in props.items() if getattr(model, k) != v}
    if changed:
        model.update(**changed)
