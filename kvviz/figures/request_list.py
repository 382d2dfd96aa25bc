"""The requests of a pool: name, status, text so far, and why a request was refused or preempted.

All request text (prompts may be a student's) is escaped with `html.escape` before it reaches the
HTML pane, so `<img src=x onerror=alert(1)>` shows literally and runs nothing.
"""

from __future__ import annotations

import html

import panel as pn
import param

from engine import Snapshot
from kvviz import formatting as fmt
from kvviz.figures.block_strip import DARK_FILLS, owner_colour
from kvviz.web.live_html import LiveHTML
from kvviz.web.redraw import Redraw
from kvviz.web.refs import Ref, value, watch

TEXT_CHARS = 90


def why_lines(snap: Snapshot) -> list[str]:
    """Sentences for the requests that were refused or preempted (the engine's reasons)."""
    out = []
    for r in snap.requests:
        if r.status == "refused":
            out.append(f"{r.name} refused: {r.reason}")
        elif r.num_preemptions:
            out.append(f"{r.name} preempted {r.num_preemptions}× ({r.status}): {r.reason}")
    return out


def requests_html(snap: Snapshot, node: str, pool: str) -> str:
    e = html.escape
    rows = []
    for r in snap.requests:
        colour = owner_colour(r.request_id)
        ink = "#fff" if colour in DARK_FILLS else "#111"
        shown = fmt.printable(r.text)
        if len(shown) > TEXT_CHARS:
            shown = "…" + shown[-(TEXT_CHARS - 1):]
        prompt_len = len(fmt.printable(r.prompt))
        cut = max(0, prompt_len - (len(fmt.printable(r.text)) - len(shown)))
        body = f'<span class="kv-prompt">{e(shown[:cut])}</span><span class="kv-gen">{e(shown[cut:])}</span>'
        rows.append(
            f'<tr data-request="{e(r.name)}" data-status="{e(r.status)}">'
            f'<td><span class="kv-chip" style="background:{colour};color:{ink}">{e(r.name)}</span></td>'
            f'<td class="kv-status">{e(r.status)}</td><td class="kv-text">{body}</td></tr>'
        )
    why = "".join(f'<li>{e(w)}</li>' for w in why_lines(snap))
    why_block = f'<ul class="kv-why" role="status">{why}</ul>' if why else ""
    return (
        f'<div class="kv-requests" data-node="{e(node)}" data-pool="{e(pool)}">{why_block}'
        f'<table><thead><tr><th>request</th><th>status</th><th>text so far '
        f'(<span class="kv-prompt">prompt</span> + <span class="kv-gen">generated</span>)</th></tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table></div>'
    )


class RequestList(pn.viewable.Viewer):
    snapshot = Ref("the snapshot parameter whose requests are listed")
    node = param.String(doc="the node's key, for the data-node attribute")
    pool = param.String(default="", doc="which pool, for the data-pool attribute")

    def __init__(self, **params):
        super().__init__(**params)
        self._pane = LiveHTML(self._html(), sizing_mode="stretch_width", margin=(0, 10))
        watch(self.snapshot, Redraw(lambda: setattr(self._pane, "object", self._html())))

    def _html(self) -> str:
        return requests_html(value(self.snapshot), self.node, self.pool)

    def __panel__(self):
        return self._pane
