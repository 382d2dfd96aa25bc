"""Node 01's view: the slider, Free R2, the block strip and its cards."""

from __future__ import annotations

import panel as pn

from kvviz.figures.block_strip import BlockStrip
from kvviz.figures.legend import legend
from kvviz.figures.request_list import Headline, RequestList
from kvviz.nodes.fragmentation import text
from kvviz.nodes.view_base import NodeView, badge, prose, section
from kvviz.web.a11y import AccessibleNames
from kvviz.web.live_html import bound_html
from kvviz.web.widgets import IntSlider


class FragmentationView(NodeView):
    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        slider = IntSlider.from_param(s.param.reserve, label=text.RESERVE_LABEL, css_classes=["kv-reserve"],
                                      sizing_mode="stretch_width", min_width=220)
        slider.param.watch(self._touch, "value")
        free = self._button("Free R2", s.free_r2, color="warning",
                            disabled=pn.bind(bool, s.param.free_r2_off), css_classes=["kv-free-r2"])
        off = bound_html(lambda: f'<div class="kv-off" data-node="{s.key}">{s.free_r2_off}</div>',
                         s.param.free_r2_off, sizing_mode="stretch_width", margin=(0, 10))
        reset = self._button("Reset", s.reset)
        self._layout = section(
            s.key,
            # (on a phone, kvviz.css puts the heading and the strip first: one screen shows both)
            prose(text.HEADING, css_classes=["kv-heading"]),
            prose(text.PROSE, css_classes=["kv-lead"]),
            pn.FlexBox(slider, free, reset, align_items="center", sizing_mode="stretch_width"),
            off,
            self._notice(),
            AccessibleNames(names={"kv-reserve": text.RESERVE_LABEL}),
            Headline(snapshot=s.param.snapshot),
            BlockStrip(snapshot=s.param.snapshot, title=text.STRIP_TITLE, per_row=s.scenario.NUM_BLOCKS,
                       gaps=True, reads=s.param.show_reads),
            legend(text.LEGEND),
            self._cards(text.CARDS),
            prose(text.TRY + "\n\n" + text.TRY_MORE, css_classes=["kv-try"]),
            self._prediction(),
            self._transport(),
            prose(text.MORE),
            badge(s.key, s.param.snapshot),
            RequestList(snapshot=s.param.snapshot, node=s.key, pool="contiguous", why=False),
            outline=self.outline,
        )
