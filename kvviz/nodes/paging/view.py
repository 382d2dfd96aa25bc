"""Node 02's view: Add request, the two pools side by side, and the block tables."""

from __future__ import annotations

import panel as pn

from kvviz import formatting as fmt
from kvviz.figures.block_strip import BlockStrip
from kvviz.figures.legend import legend
from kvviz.figures.page_table import PageTable
from kvviz.figures.request_list import RequestList
from kvviz.nodes.paging import text
from kvviz.nodes.view_base import NodeView, badge, prose, section
from kvviz.web.live_html import bound_html


class PagingView(NodeView):
    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        box = pn.widgets.TextInput.from_param(s.param.prompt, label=text.PROMPT_LABEL,
                                              max_length=fmt.PROMPT_MAX_CHARS, sizing_mode="stretch_width",
                                              min_width=220, css_classes=["kv-in-prompt"])
        box.param.watch(lambda _e: (self._touch(), s.add_request()), "enter_pressed")
        box.param.watch(lambda e: s.typing(e.new), "value_input")  # (the student's own text: kept)
        add = self._button("Add request", s.add_request, color="primary")
        reset = self._button("Reset", s.reset)
        chooser = pn.widgets.Select.from_param(s.param.request, label="Block table of", width=160,
                                               css_classes=["kv-in-request"])
        self._layout = section(
            s.key,
            # The picture first: the heading and its lead, then the two strips (on a phone, kvviz.css
            # puts the heading and the strips first, as node 01's); the controls right under them.
            prose(text.HEADING, css_classes=["kv-heading"]),
            prose(text.PROSE, css_classes=["kv-lead"]),
            BlockStrip(snapshot=s.param.contiguous, title=text.CONTIGUOUS_TITLE, gaps=True,
                       reads=s.param.show_reads),
            BlockStrip(snapshot=s.param.paged, title=text.PAGED_TITLE, reads=s.param.show_reads),
            legend(text.LEGEND),
            pn.FlexBox(box, add, reset, align_items="end", sizing_mode="stretch_width"),
            self._notice(),
            self._cards(text.CARDS),
            bound_html(lambda: f'<p class="kv-tails">{fmt.page_tails(s.paged.metrics)}</p>', s.param.paged,
                       sizing_mode="stretch_width", margin=(0, 10)),
            prose(text.TRY + "\n\n" + text.TRY_MORE, css_classes=["kv-try"]),
            self._prediction(),
            self._transport(),
            prose(text.ANALOGY, css_classes=["kv-analogy"]),
            prose(text.MORE),
            prose("### The block table: the KV cache's own page table"),
            chooser,
            PageTable(snapshot=s.param.paged, request=s.param.request, pool="paged",
                      title="Paged: pages scattered wherever blocks were free"),
            PageTable(snapshot=s.param.contiguous, request=s.param.request, pool="contiguous",
                      title="Contiguous: one slab, reserved up front"),
            badge(s.key, s.param.paged),
            RequestList(snapshot=s.param.paged, also=s.param.contiguous, node=s.key, pool="paged",
                        also_pool="contiguous"),
            outline=self.outline,
        )
