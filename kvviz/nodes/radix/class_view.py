"""The class's radix tree, for the teacher's projector: the server's own class cache
(class_cache.py) drawn with node 03's tree figure and its three cards, and how many questions it
holds, looked at again every second (drawn again only when a question came)."""

from __future__ import annotations

import html

import panel as pn
import param

from engine import Snapshot
from kvviz.figures.radix_tree import RadixTreeFigure
from kvviz.nodes.radix import text
from kvviz.nodes.radix.class_cache import ClassCache, class_cache
from kvviz.web.live_html import LiveHTML
from kvviz.web.timer import SessionTimer

TITLE = "The class's own cache"
NOTE = ("Every question your students type in node 03 is also asked here, in one engine with prefix "
        "sharing: the system prompt is stored once (the trunk), each question adds its own branch. "
        "{backends}")
ONE_SERVER = "These are the questions asked on this server."
POLL_MS = 1000  # (a look compares one count: a question shows within about a second of its answer)
ASKED = "QUESTIONS ASKED"


class ClassTreeView(pn.viewable.Viewer):
    """The class cache's tree and cards, kept current while the page is open."""

    snapshot = param.ClassSelector(class_=Snapshot, default=None, allow_None=True, doc="the class cache now")
    sharing = param.Boolean(default=True, constant=True, doc="(the class cache always shares)")

    def __init__(self, cache: ClassCache | None = None, backends_note: str = ONE_SERVER, **params):
        super().__init__(**params)
        self.cache = cache or class_cache()
        self._asked = -1
        self.snapshot = self.cache.snapshot()
        self.cards = LiveHTML(self._cards_html(), sizing_mode="stretch_width")
        self.empty = LiveHTML(self._empty_html(), sizing_mode="stretch_width")
        self.tree = RadixTreeFigure(snapshot=self.param.snapshot, sharing=self.param.sharing) \
            if self.snapshot is not None else None
        head = pn.pane.HTML(f'<h2 class="kv-t-section">{html.escape(TITLE)}</h2>'
                            '<p class="kv-figure-note">'
                            f'{html.escape(NOTE.format(backends=backends_note))}</p>',
                            sizing_mode="stretch_width")
        self._layout = pn.Column(head, self.cards, self.empty, *([self.tree] if self.tree else []),
                                 sizing_mode="stretch_width", css_classes=["kv-class-tree"])
        self._asked = self.cache.asked
        SessionTimer(self.refresh, POLL_MS)

    def _cards_html(self) -> str:
        if self.snapshot is None:
            return ""
        m = self.snapshot.metrics
        # (node 03's three cards, as large figures for the projector; each says what it counts)
        cards = [(c.label, c.value(m), c.counts) for c in text.CARDS]
        cards.append((ASKED, str(self.cache.asked),
                      "the students' questions this server has answered and kept"))
        return ('<dl class="kv-class-cards">' + "".join(
            f'<div title="{html.escape(counts, quote=True)}" data-label="{html.escape(label, quote=True)}">'
            f'<dt>{html.escape(label)}</dt><dd>{html.escape(value)}</dd></div>'
            for label, value, counts in cards) + "</dl>")

    def _empty_html(self) -> str:
        return ('<p class="kv-note">No question typed yet: when students type their own questions in node '
                "03, they appear here as branches of one shared trunk.</p>") if self.snapshot is None else ""

    def refresh(self) -> None:
        """Draw the cache again if a question came since the last look."""
        if self.cache.asked == self._asked:
            return
        self._asked = self.cache.asked
        self.snapshot = self.cache.snapshot()
        if self.tree is None:  # (the first question: the figure is made from it)
            self.tree = RadixTreeFigure(snapshot=self.param.snapshot, sharing=self.param.sharing)
            self._layout.append(self.tree)
        self.cards.object = self._cards_html()
        self.empty.object = self._empty_html()

    def __panel__(self):
        return self._layout
