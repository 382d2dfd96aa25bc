"""A prefix tree drawn block by block, root at the left: one box per cached block, labelled with
the text its tokens spell and a short form of its hash, each joined to the block before it.

Node 04 draws two: vLLM's cache rebuilt from its events, and our engine's radix tree cut into
blocks, each labelled with vLLM's hash for the same tokens. The caller says what each box is
(`TreeRow`); this figure only lays them out (x = depth, y = leaf order) and draws them, in
sources of a fixed capacity (kvviz/web/sources.py). Labels are Bokeh text glyphs: plain text.
A figure narrower than NARROW_PX (a phone) draws each box's short labels, which fit its box;
the hover keeps the whole text.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import panel as pn
from bokeh.models import ColumnDataSource, HoverTool, Rect, Segment, Text
from bokeh.plotting import figure

from kvviz import formatting as fmt
from kvviz.figures.reflow import reflow
from kvviz.web.sources import assign_columns, binary, padded

ROW_PX = 54
NARROW_PX = 700  # narrower than this (a phone), a box is about 50 px wide: the short labels
NARROW_LABEL_CHARS = 5  # "Q: W…" at 11 px (36 px), inside a phone's box (45 px on the full page)


@dataclass(frozen=True)
class TreeRow:
    key: int  # unique in the tree (a block hash, or a block id)
    parent: int | None  # the key of the block before it (None, or not in the tree: drawn from the root)
    label: str  # the block's text (already shortened)
    sub: str  # one short line under it (its hash, how many share it)
    fill: str  # box colour
    text: str  # hover: the block's whole text
    about: str  # hover: what the colour means for this block
    sub_n: str = ""  # the line under it on a phone: at most 8 characters (default: none)


def layout(rows: list[TreeRow]) -> tuple[dict, dict, int, int]:
    """Box and edge columns, the number of leaf rows and the depth (pure)."""
    keys = {r.key for r in rows}
    children: dict[int | None, list[TreeRow]] = {}
    for r in rows:
        children.setdefault(r.parent if r.parent in keys else None, []).append(r)
    pos: dict[int | None, tuple[float, float]] = {}
    next_row = [0]

    def place(key: int | None, depth: int) -> float:
        kids = children.get(key, [])
        if not kids:
            y = float(next_row[0])
            next_row[0] += 1
        else:
            ys = [place(k.key, depth + 1) for k in kids]
            y = sum(ys) / len(ys)
        pos[key] = (float(depth), y)
        return y

    place(None, 0)
    boxes = {"x": [], "y": [], "label": [], "sub": [], "label_n": [], "sub_n": [], "fill": [], "text": [],
             "about": []}
    edges = {"x0": [], "y0": [], "x1": [], "y1": []}
    for r in rows:
        x, y = pos[r.key]
        for name, v in (("x", x), ("y", y), ("label", r.label), ("sub", r.sub),
                        ("label_n", fmt.excerpt(r.text, NARROW_LABEL_CHARS)), ("sub_n", r.sub_n[:8]),
                        ("fill", r.fill), ("text", r.text), ("about", r.about)):
            boxes[name].append(v)
        px, py = pos[r.parent if r.parent in keys else None]
        for name, v in (("x0", px + 0.45), ("y0", py), ("x1", x - 0.45), ("y1", y)):
            edges[name].append(v)
    depth = int(max(boxes["x"], default=0.0))
    return boxes, edges, max(next_row[0], 1) if rows else 1, depth


class BlockTree(pn.viewable.Viewer):
    """Call `update(rows)` with the tree's blocks; `capacity` is the most blocks it can hold."""

    def __init__(self, title: str, capacity: int, css_class: str, empty: str):
        self.capacity, self.empty_text = capacity, empty
        self.boxes = ColumnDataSource(binary(self._padded([])[0]))
        self.edges = ColumnDataSource(binary(self._padded([])[1]))
        fig = figure(x_axis_type=None, y_axis_type=None, height=self._height(1), x_range=(-0.6, 4.6),
                     y_range=(0.5, -0.5), toolbar_location=None, sizing_mode="stretch_width", min_border=4,
                     tools=[HoverTool(tooltips=[("text", "@text"), ("block", "@sub"), ("", "@about")])])
        fig.outline_line_color = None
        fig.add_glyph(self.edges,
                      Segment(x0="x0", y0="y0", x1="x1", y1="y1", line_color="#333333", line_width=2))
        box = fig.add_glyph(self.boxes, Rect(x="x", y="y", width=0.9, height=0.8, fill_color="fill",
                                             line_color="#222222", line_width=1.2))
        fig.hover.renderers = [box]
        label = fig.add_glyph(self.boxes,
                              Text(x="x", y="y", text="label", text_align="center", text_baseline="bottom",
                                               text_font_size="11px", text_color="#111111", y_offset=-1))
        sub = fig.add_glyph(self.boxes,
                            Text(x="x", y="y", text="sub", text_align="center", text_baseline="top",
                                             text_font_size="10px", text_color="#333333", y_offset=3))
        # (narrow: the short labels; the ranges and the height stay the tree's own; big: a projector's sizes)
        reflow(fig, [(label, ("text:label",)), (sub, ("text:sub",))], NARROW_PX, None, None,
               [(label.glyph, "text_font_size", "11px", "18px"),
                (sub.glyph, "text_font_size", "10px", "18px")])
        fig.css_classes = [css_class]
        self.figure = fig
        self.note = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))
        # (the title in HTML: it wraps on a phone instead of being cut off)
        heading = pn.pane.HTML(f'<div class="kv-figure-title">{html.escape(title)}</div>',
                               sizing_mode="stretch_width", margin=(6, 10, 0, 10))
        self._layout = pn.Column(heading, self.note, pn.pane.Bokeh(fig, sizing_mode="stretch_width"),
                                 sizing_mode="stretch_width")
        self.update([])

    def _padded(self, rows: list[TreeRow]) -> tuple[dict, dict, int, int]:
        boxes, edges, leaves, depth = layout(rows[: self.capacity])
        blank = {"label": "", "sub": "", "label_n": "", "sub_n": "", "fill": "#ffffff", "text": "",
                 "about": ""}
        return (padded(boxes, self.capacity, ("x", "y"), blank),
                padded(edges, self.capacity, ("x0", "y0", "x1", "y1")), leaves, depth)

    @staticmethod
    def _height(leaves: int) -> int:
        return max(leaves, 2) * ROW_PX + 16

    def update(self, rows: list[TreeRow]) -> None:
        boxes, edges, leaves, depth = self._padded(rows)
        with pn.io.hold():
            assign_columns(self.boxes, boxes)
            assign_columns(self.edges, edges)
            self.figure.y_range.start, self.figure.y_range.end = leaves - 0.5, -0.5
            self.figure.x_range.end = max(4.6, depth + 0.6)
            self.figure.height = self._height(leaves)
            note = "" if rows else f'<div class="kv-note">{html.escape(self.empty_text)}</div>'
            if self.note.object != note:
                self.note.object = note

    def __panel__(self):
        return self._layout
