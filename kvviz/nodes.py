"""The three live nodes: each a section with its text, widgets, block strips and metric cards."""

from __future__ import annotations

import html

import panel as pn
import param

from kvviz import format as fmt
from kvviz import text
from kvviz.a11y import AccessibleNames
from kvviz.block_strip import BlockStrip, legend
from kvviz.controls import Transport
from kvviz.live_html import LiveHTML
from kvviz.metric_card import MetricCard, card_row
from kvviz.page_table import PageTable
from kvviz.radix_tree import RadixTree
from kvviz.redraw import Redraw
from kvviz.requests_table import RequestList
from kvviz.widgets import Checkbox, IntSlider

RESERVE_LABEL = "Reserved length (blocks)"


def badge(state, snapshot_param: str = "snapshot") -> pn.pane.HTML:
    """Which engine backend and device are live, from the snapshot."""
    def html_for(snap):
        return (f'<span class="kv-badge" data-node="{state.key}" title="The engine backend and device '
                f'running this node">engine: {html.escape(fmt.backend_badge(snap))}</span>')
    return LiveHTML(pn.bind(html_for, state.param[snapshot_param]), margin=(4, 10), align="end")


def section(key: str, *objects) -> pn.Column:
    return pn.Column(*objects, sizing_mode="stretch_width", css_classes=["kv-node", f"kv-node-{key}"],
                     margin=(0, 0, 24, 0))


def prose(md: str, css_classes=()) -> pn.pane.Markdown:
    return pn.pane.Markdown(md, sizing_mode="stretch_width", css_classes=["kv-prose", *css_classes])


class NodeView(pn.viewable.Viewer):
    """A node's view; `on_interact(key)` tells the page which node the user last touched."""

    state = param.Parameter()
    on_interact = param.Callable(default=None)

    def _touch(self, *_):
        if self.on_interact:
            self.on_interact(self.state.key)

    def _button(self, name: str, method, slow: bool = False, **kw) -> pn.widgets.Button:
        """A button calling `method`; a `slow` one (a second or more) shows a spinner meanwhile."""
        button = pn.widgets.Button(label=name, **kw)

        def click(_event):
            self._touch()
            if not slow:
                return method()
            with pn.param.set_values(button, loading=True):  # (sent before the work starts)
                return method()

        button.on_click(click)
        return button

    def _transport(self) -> Transport:
        return Transport(state=self.state, on_interact=self.on_interact)


class FragmentationNode(NodeView):
    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        slider = IntSlider.from_param(s.param.reserve, label=RESERVE_LABEL, css_classes=["kv-reserve"],
                                      sizing_mode="stretch_width", min_width=220)
        slider.param.watch(self._touch, "value")
        free = self._button("Free R2", s.free_r2, color="warning",
                            disabled=s.param.freed_r2)
        reset = self._button("Reset", s.reset)
        cards = card_row(
            MetricCard(state=s, label="IN USE", value=fmt.in_use,
                       counts="Blocks holding at least one token, of all blocks in the pool."),
            MetricCard(state=s, label="RESERVED · EMPTY", value=fmt.reserved_empty,
                       counts="Blocks locked in a request's slab that hold no token yet."),
            MetricCard(state=s, label="LARGEST GAP", value=fmt.largest_gap,
                       counts="Longest run of free blocks next to each other, of all free blocks."),
        )
        self._layout = section(
            s.key,
            badge(s),
            prose(text.FRAGMENTATION),
            pn.FlexBox(slider, free, reset, align_items="center", sizing_mode="stretch_width"),
            AccessibleNames(names={"kv-reserve": RESERVE_LABEL}),
            prose(text.FRAGMENTATION_TRY, css_classes=["kv-try"]),
            BlockStrip(state=s, title="GPU KV cache · 32 blocks · contiguous slabs"),
            legend(),
            cards,
            self._transport(),
            RequestList(state=s, pool="contiguous"),
        )

    def __panel__(self):
        return self._layout


class PagingNode(NodeView):
    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        box = pn.widgets.TextInput.from_param(s.param.prompt, label="Prompt (plain text, up to 200 characters)",
                                              sizing_mode="stretch_width", min_width=220)
        box.param.watch(lambda _e: (self._touch(), s.add_request()), "enter_pressed")
        add = self._button("Add request", s.add_request, color="primary")
        reset = self._button("Reset", s.reset)
        chooser = pn.widgets.Select.from_param(s.param.request, label="Block table of", width=160)
        cards = card_row(
            MetricCard(state=s, snapshot_param="contiguous", label="CONTIGUOUS", value=fmt.full,
                       counts="Naive pool: tokens held ÷ token slots locked by slabs."),
            MetricCard(state=s, snapshot_param="paged", label="PAGED", value=fmt.full,
                       counts="Paged pool: tokens held ÷ token slots in pages handed out."),
            MetricCard(state=s, snapshot_param="contiguous", label="NAIVE REJECTS", value=fmt.rejects,
                       counts="Requests the contiguous pool refused since the start."),
        )
        self._layout = section(
            s.key,
            badge(s, "paged"),
            prose(text.PAGING),
            prose(text.PAGING_ANALOGY, css_classes=["kv-analogy"]),
            pn.FlexBox(box, add, reset, align_items="end", sizing_mode="stretch_width"),
            prose(text.PAGING_TRY, css_classes=["kv-try"]),
            BlockStrip(state=s, snapshot_param="contiguous", title="CONTIGUOUS · each request reserves 6 blocks"),
            RequestList(state=s, snapshot_param="contiguous", pool="contiguous"),
            BlockStrip(state=s, snapshot_param="paged", title="PAGED · a block only when a page fills"),
            legend(),
            cards,
            self._transport(),
            prose("#### The block table: the KV cache's own page table"),
            chooser,
            PageTable(state=s, snapshot_param="paged", title="Paged: pages scattered wherever blocks were free"),
            PageTable(state=s, snapshot_param="contiguous", title="Contiguous: one slab, reserved up front"),
            RequestList(state=s, snapshot_param="paged", pool="paged"),
        )

    def __panel__(self):
        return self._layout


def events_html(snap) -> str:
    """The engine's eviction and refusal events, newest first (engine reasons, escaped)."""
    rows = [e for e in snap.events if e.kind in ("block_evicted", "request_refused", "request_preempted")]
    if not rows:
        return '<div class="kv-events kv-empty">No eviction yet: the pool has not run dry.</div>'
    items = "".join(
        f'<li data-kind="{e.kind}">step {e.step}: {html.escape(e.kind.replace("_", " "))}'
        f'{" of blocks " + html.escape(fmt.block_ranges(sorted(e.blocks))) if e.blocks else ""}'
        f' ({html.escape(e.reason)})</li>' for e in reversed(rows[-8:]))
    return f'<ul class="kv-events">{items}</ul>'


class RadixNode(NodeView):
    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        sharing = Checkbox.from_param(s.param.sharing, css_classes=["kv-sharing"])
        names = AccessibleNames(names={"kv-sharing": s.param.sharing.label})
        sharing.param.watch(self._touch, "value")
        box = pn.widgets.TextInput.from_param(
            s.param.prompt, label="Your question, after the shared system prompt (up to 200 characters)",
            sizing_mode="stretch_width", min_width=220)
        box.param.watch(lambda _e: (self._touch(), s.add_request()), "enter_pressed")
        cards = card_row(
            MetricCard(state=s, label="BLOCKS STORED", value=fmt.blocks_stored,
                       counts="Distinct physical blocks holding KV for live requests (idle cached blocks are not counted)."),
            MetricCard(state=s, label="vs NO SHARING", value=fmt.without_sharing,
                       counts="Blocks the live requests would hold if each kept its own copy."),
            MetricCard(state=s, label="SAVED", value=fmt.saved,
                       counts="1 − stored ÷ no-sharing: the share of the live requests' memory that sharing saves."),
        )
        events = LiveHTML(events_html(s.snapshot), sizing_mode="stretch_width", margin=(0, 10))
        s.param.watch(Redraw(lambda: setattr(events, "object", events_html(s.snapshot))), "snapshot")
        prefill = card_row(
            MetricCard(state=s, label="PREFILL COMPUTED", value=lambda m: f"{m.prefill_tokens_computed} tok",
                       counts="Prompt tokens whose KV the model computed."),
            MetricCard(state=s, label="PREFIX REUSED", value=lambda m: f"{m.prefix_hit_tokens} tok",
                       counts="Prompt tokens whose KV came from the radix cache instead."),
            MetricCard(state=s, label="PREFILL TIME", value=lambda m: fmt.seconds(m.prefill_seconds),
                       counts="Measured wall time of all prefill forwards on this machine."),
        )
        self._layout = section(
            s.key,
            badge(s),
            prose(text.RADIX),
            pn.FlexBox(sharing, self._button("Reset", s.reset), align_items="center",
                       sizing_mode="stretch_width"),
            names,
            pn.FlexBox(box, self._button("Add request", s.add_request, color="primary"),
                       self._button("Release oldest", s.release_oldest),
                       self._button("Fill the pool", s.fill_pool, slow=True), align_items="end",
                       sizing_mode="stretch_width"),
            prose(text.RADIX_TRY, css_classes=["kv-try"]),
            BlockStrip(state=s, title="GPU KV cache · 48 blocks · paged, one system prompt for every request"),
            legend(),
            cards,
            self._transport(),
            RadixTree(state=s),
            prefill,
            events,
            RequestList(state=s, pool="paged"),
        )

    def __panel__(self):
        return self._layout
