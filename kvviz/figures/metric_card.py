"""Metric cards: a label, a large value read from a snapshot, and one line saying what it counts
(behind the card's "?", a <details>; also the card's hover text).

Selectors for browser tests (Playwright's CSS engine pierces Panel's open shadow roots):

    .kv-metric[data-label="IN USE"] .kv-value          -> "12 / 32 · 38%"
    .kv-metric[data-label="RESERVED · EMPTY"] .kv-value -> "12 blk"
    .kv-metric[data-label="CUT OFF"] .kv-value          -> "0 of 3"
    .kv-metric[data-label="LARGEST GAP"] .kv-value      -> "8 / 8 free"
    .kv-metric[data-label="CONTIGUOUS"] .kv-value       -> "NN% full"
    .kv-metric[data-label="PAGED"] .kv-value            -> "NN% full"
    .kv-metric[data-label="NAIVE REJECTS"] .kv-value    -> "0"
    .kv-metric[data-label="BLOCKS STORED"] .kv-value    -> "36 blk"
    .kv-metric[data-label="vs NO SHARING"] .kv-value    -> "36 blk"
    .kv-metric[data-label="SAVED"] .kv-value            -> "0%"

Each card also carries `data-node` (fragmentation | paging | radix) so a full-page test can tell
two nodes' cards apart, e.g. `.kv-metric[data-node="radix"][data-label="SAVED"] .kv-value`.
Node 03's prefill figures use the same markup with labels PREFILL COMPUTED, PREFIX REUSED and
PREFILL TIME.

Other stable hooks:
    .kv-step[data-node="paging"]            "step 18 · idle" (the transport's counter)
    .kv-notice                              the node's last notice (friendly errors, refusals)
    .kv-requests[data-pool="paged"] tr[data-request="R5"] .kv-text   a request's text so far
    .kv-why                                 why requests were refused/preempted (engine reasons)
    .kv-events li[data-kind="block_evicted"]  node 03's evictions
    .kv-url-notice                          problems with the link's parameters
    .kv-badge                               "engine: native · CPU"
    .kv-sharing input                       the Prefix sharing checkbox, also
                                            get_by_role("checkbox", name="Prefix sharing")
    .kv-reserve [role=slider]               the Reserved length slider's handle, also
                                            get_by_role("slider", name="Reserved length")
    .kv-keyboard                            present once the shortcut listener is installed
    .kv-nav a[data-node="radix"]            the numbered navigation
    .kv-feedback[data-check="naive_rejects"]  a self-check's verdict
    .kv-pagetable-text[data-pool="paged"]   "R1 in the paged pool: page 0 → block 0, …"
Buttons are found by role and name: Free R2, Reset, Add request, Release oldest, Fill the pool,
⟲ Rewind, ◀ Step back, Step ▶, ▶ Play / ❚❚ Pause, Check.
"""

from __future__ import annotations

import functools
import html

import panel as pn
import param

from kvviz.state.card import Card
from kvviz.web.live_html import LiveHTML
from kvviz.web.redraw import Update
from kvviz.web.refs import Ref, value, watch


@functools.lru_cache(maxsize=2048)  # (a live answer writes a node's six cards at each of its ~10 states)
def card_html(node: str, label: str, value: str, counts: str, source: str = "") -> str:
    """`source`: where the value comes from (e.g. a Prometheus metric name), added to the tooltip."""
    e = html.escape
    title = f"{counts} (source: {source})" if source else counts
    return (
        f'<div class="kv-metric" data-node="{e(node)}" data-label="{e(label)}" title="{e(title)}">'
        f'<div class="kv-label">{e(label)}</div><div class="kv-value">{e(value)}</div>'
        f'<details class="kv-more kv-q"><summary aria-label="What {e(label)} counts">?</summary>'
        f'<div class="kv-counts">{e(counts)}</div></details></div>'
    )


class MetricCard(pn.viewable.Viewer):
    """One card: `card` read from the snapshot parameter `snapshot`."""

    snapshot = Ref("the snapshot parameter the card reads")
    node = param.String(doc="the node's key, for the data-node attribute")
    card = param.ClassSelector(class_=Card)
    follow = param.Boolean(default=True, doc="watch `snapshot` itself (else its row calls `write`)")

    def __init__(self, **params):
        super().__init__(**params)
        self._pane = LiveHTML(self._html(), margin=(4, 6), styles={"flex": "1 1 14rem"})
        if self.follow:
            watch(self.snapshot, Update(self.write))

    def write(self) -> None:
        """Show the snapshot's value now."""
        self._pane.object = self._html()

    def _html(self) -> str:
        c, snap = self.card, value(self.snapshot)
        return card_html(self.node, c.label, c.value(snap if c.whole else snap.metrics), c.counts)

    def __panel__(self):
        return self._pane


def card_row(state, cards) -> pn.FlexBox:
    """The cards of a table, each reading its snapshot parameter of `state`: one watcher per
    parameter writes all of its cards (each call of a watcher costs param ~11 µs, and a live answer
    redraws a node's six cards at every state it records)."""
    views = [MetricCard(snapshot=state.param[c.of], node=state.key, card=c, follow=False) for c in cards]
    for of in dict.fromkeys(c.of for c in cards):
        watch(state.param[of], Update(_write_all([v for v in views if v.card.of == of])))
    return pn.FlexBox(*views, flex_wrap="wrap", sizing_mode="stretch_width", css_classes=["kv-cards"])


def _write_all(views: list[MetricCard]):
    def write() -> None:
        for view in views:
            view.write()
    return write
