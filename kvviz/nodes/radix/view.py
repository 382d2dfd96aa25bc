"""Node 03's view: prefix sharing, questions, the pool, the radix tree and its events."""

from __future__ import annotations

import html

import panel as pn

from kvviz import formatting as fmt
from kvviz.figures.block_strip import BlockStrip
from kvviz.figures.legend import legend
from kvviz.figures.radix_tree import RadixTreeFigure
from kvviz.figures.request_list import RequestList
from kvviz.nodes.radix import text
from kvviz.nodes.view_base import NodeView, badge, prose, section
from kvviz.web.a11y import AccessibleNames
from kvviz.web.live_html import LiveHTML
from kvviz.web.redraw import Redraw
from kvviz.web.widgets import Checkbox


def events_html(snap) -> str:
    """The engine's evictions, newest first, counted (engine reasons, escaped). Refusals and
    preemptions are the request list's."""
    rows = [e for e in snap.events if e.kind == "block_evicted"]
    if not rows:
        return '<div class="kv-events kv-empty">No eviction yet: the pool has not run dry.</div>'
    items = "".join(
        f'<li data-kind="{e.kind}">step {e.step}: evicted blocks '
        f'{html.escape(fmt.block_ranges(sorted(e.blocks)))} ({html.escape(e.reason)})</li>'
        for e in reversed(rows[-EVENTS_SHOWN:]))
    blocks = sum(len(e.blocks) for e in rows)
    more = f" (the latest {EVENTS_SHOWN} below)" if len(rows) > EVENTS_SHOWN else ""
    return (f'<div class="kv-events"><b>{len(rows)} eviction{"s" if len(rows) != 1 else ""}, {blocks} '
            f'block{"s" if blocks != 1 else ""} in all{more}:</b><ul>{items}</ul></div>')


EVENTS_SHOWN = 4


class RadixView(NodeView):
    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        sharing = Checkbox.from_param(s.param.sharing, css_classes=["kv-sharing"])
        names = AccessibleNames(names={"kv-sharing": s.param.sharing.label})
        sharing.param.watch(self._touch, "value")
        box = pn.widgets.TextInput.from_param(s.param.prompt, label=text.QUESTION_LABEL,
                                              max_length=fmt.PROMPT_MAX_CHARS, sizing_mode="stretch_width",
                                              min_width=220, css_classes=["kv-in-question"])
        box.param.watch(lambda _e: (self._touch(), s.add_request()), "enter_pressed")
        events = LiveHTML(events_html(s.snapshot), sizing_mode="stretch_width", margin=(0, 10))
        s.param.watch(Redraw(lambda: setattr(events, "object", events_html(s.snapshot))), "snapshot")
        self._layout = section(
            s.key,
            prose(text.PROSE),
            pn.FlexBox(sharing, self._button("Reset", s.reset), align_items="center",
                       sizing_mode="stretch_width"),
            names,
            prose(text.TRY + "\n\n" + text.TRY_MORE, css_classes=["kv-try"]),
            self._prediction(),
            pn.FlexBox(box, self._button("Add request", s.add_request, color="primary"),
                       self._button("Release oldest", s.release_oldest),
                       self._button("Fill the pool", s.fill_pool, slow=True), align_items="end",
                       sizing_mode="stretch_width"),
            self._notice(),
            BlockStrip(snapshot=s.param.snapshot, title=text.STRIP_TITLE, reads=s.param.show_reads),
            legend(text.LEGEND),
            self._cards(text.CARDS),
            self._transport(),
            RadixTreeFigure(snapshot=s.param.snapshot, sharing=s.param.sharing),
            self._cards(text.PREFILL_CARDS),
            events,
            prose(text.MORE),
            badge(s.key, s.param.snapshot),
            RequestList(snapshot=s.param.snapshot, node=s.key, pool="paged"),
            outline=self.outline,
        )
