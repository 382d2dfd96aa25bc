"""The requests of a pool: name, status, text so far, and why requests were refused or preempted.

Node 02 lists its two pools in one table (`also`: the other pool's statuses in their own column).
Repeated refusals are counted on one line, with the newest reason in the engine's words. A
request the engine stopped because its slab was full shows as "stopped", with that reason.
All request text (prompts may be a student's) is escaped with `html.escape` before it reaches
the HTML pane, so `<img src=x onerror=alert(1)>` shows literally and runs nothing.
"""

from __future__ import annotations

import html

import panel as pn
import param

from engine import Snapshot
from kvviz import formatting as fmt
from kvviz.figures.cells import ink_on, owner_colour
from kvviz.web.live_html import AFTER_PAINT, LiveHTML
from kvviz.web.redraw import Redraw
from kvviz.web.refs import Ref, value, watch

TEXT_CHARS = 90
NAMES_SHOWN = 6


def _names(rs) -> str:
    names = [r.name for r in rs]
    return ", ".join(names[:NAMES_SHOWN]) + (", …" if len(names) > NAMES_SHOWN else "")


def why_lines(snap: Snapshot, pool: str = "") -> list[str]:
    """One sentence for the refused requests and one for the preempted ones (counted; the
    newest with the engine's reason)."""
    where = f" by the {pool} pool" if pool else ""
    out = []
    refused = [r for r in snap.requests if r.status == "refused"]
    if len(refused) == 1:
        out.append(f"{refused[0].name} refused{where}: {refused[0].reason}")
    elif refused:
        out.append(f"{len(refused)} requests refused{where} ({_names(refused)}); the latest, "
                   f"{refused[-1].name}: {refused[-1].reason}")
    preempted = [r for r in snap.requests if r.num_preemptions]
    if preempted:
        r = preempted[-1]
        times = sum(p.num_preemptions for p in preempted)
        out.append(f"{times} preemption{'s' if times != 1 else ''}{where} ({_names(preempted)}); the latest, "
                   f"{r.name} ({r.status}): {r.reason}")
    return out


def status_html(snap: Snapshot, r) -> str:
    """The status; for a finished request the engine's reason too ("stopped" when the slab was full)."""
    e = html.escape
    if fmt.stopped_by_slab(snap, r):
        return f'<span class="kv-stopped">stopped</span><span class="kv-reason">{e(r.reason)}</span>'
    if r.status == "finished" and r.reason:
        return f'{e(r.status)}<span class="kv-reason">{e(r.reason)}</span>'
    return e(r.status)


_STOPPED = {
    "": "stopped by the engine, not ended by the model",
    "stop_token": "stopped where the model wrote a word end (one of this request's stop tokens)",
}


def shown_text(r) -> str:
    """The request's text as HTML: prompt and generation told apart; a long one keeps its end,
    cut at a word boundary."""
    e = html.escape
    full = fmt.printable(r.text)
    shown = full
    if len(full) > TEXT_CHARS:
        tail = full[-(TEXT_CHARS - 1):]
        space = tail.find(" ")
        shown = "…" + (tail[space + 1:] if 0 <= space < TEXT_CHARS // 3 else tail)
    prompt_len = len(fmt.printable(r.prompt))
    cut = max(0, prompt_len - (len(full) - len(shown)))
    if shown.startswith("…"):
        cut = max(cut, 1)
    # (the model has no end-of-reply token: a finished reply was stopped by its budget or slab, or
    # at a word end the model wrote when the request asked to stop there)
    more = f'<span class="kv-more" title="{e(_STOPPED.get(r.stop, _STOPPED[""]))}">…</span>' \
        if r.status == "finished" else ""
    return (
        f'<span class="kv-prompt">{e(shown[:cut])}</span><span class="kv-gen">{e(shown[cut:])}</span>{more}')


def requests_html(snap: Snapshot, node: str, pool: str, also: Snapshot | None = None, also_pool: str = "",
                  why: bool = True) -> str:
    e = html.escape
    others = {r.name: r for r in also.requests} if also is not None else {}
    rows = []
    for r in snap.requests:
        colour = owner_colour(r.request_id)
        other = f'<td class="kv-status">{status_html(also, others[r.name])}</td>' if r.name in others else (
            "<td></td>" if also is not None else "")
        rows.append(
            f'<tr data-request="{e(r.name)}" data-status="{e(r.status)}">'
            f'<td><span class="kv-chip" style="background:{colour};color:{ink_on(colour)}">{e(r.name)}</span>'
            f'</td>{other}<td class="kv-status">{status_html(snap, r)}</td>'
            f'<td class="kv-text">{shown_text(r)}</td></tr>'
        )
    lines = (why_lines(also, also_pool) if also is not None else []) + why_lines(snap, pool if also else "")
    why_block = (f'<ul class="kv-why" role="status">{"".join(f"<li>{e(w)}</li>" for w in lines)}</ul>'
                 if lines and why else "")
    heads = f"<th>{e(also_pool)}</th><th>{e(pool)}</th>" if also is not None else "<th>status</th>"
    return (
        f'<div class="kv-requests" data-node="{e(node)}" data-pool="{e(pool)}">{why_block}'
        f'<table><thead><tr><th>request</th>{heads}<th>text so far '
        f'(<span class="kv-prompt">prompt</span> + <span class="kv-gen">generated</span>)</th></tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table></div>'
    )


def headline_html(snap: Snapshot) -> str:
    """The newest refusal, in the engine's words, as a node's headline ('' when none)."""
    refused = [r for r in snap.requests if r.status == "refused"]
    if not refused:
        return '<div class="kv-headline kv-empty"></div>'
    r = refused[-1]
    if len(refused) == 1:
        return (f'<div class="kv-headline kv-why" role="status"><b>{html.escape(r.name)} refused:</b> '
                f'{html.escape(r.reason)}</div>')
    every = "All " if len(refused) == len(snap.requests) else ""
    return (f'<div class="kv-headline kv-why" role="status"><b>{every}{len(refused)} requests refused '
            f'({html.escape(_names(refused))}).</b> The latest, {html.escape(r.name)}: '
            f'{html.escape(r.reason)}</div>')


class RequestList(pn.viewable.Viewer):
    snapshot = Ref("the pool whose requests are listed")
    also = param.ClassSelector(class_=param.Parameter, default=None, allow_refs=False,
                               doc="another pool of the same requests (same owner): its statuses in a column")
    node = param.String(doc="the node's key, for the data-node attribute")
    pool = param.String(default="", doc="which pool, for the data-pool attribute")
    also_pool = param.String(default="", doc="the other pool's name")
    why = param.Boolean(default=True, doc="list why requests were refused or preempted")

    def __init__(self, **params):
        super().__init__(**params)
        # (on a played page, written in the frame after the numbers and pictures: a list that grows by a
        # row lays the page out again, ~13 ms of node 02's first Add request; live, it redraws on the
        # session's next tick, after the numbers, as every `Redraw` does)
        self._pane = LiveHTML(self._html(), sizing_mode="stretch_width", margin=(0, 10),
                              css_classes=[AFTER_PAINT])
        more = (self.also,) if self.also is not None else ()
        watch(self.snapshot, Redraw(lambda: setattr(self._pane, "object", self._html())), *more)

    def _html(self) -> str:
        also = value(self.also) if self.also is not None else None
        return requests_html(value(self.snapshot), self.node, self.pool, also, self.also_pool, self.why)

    def __panel__(self):
        return self._pane


class Headline(pn.viewable.Viewer):
    """A node's headline: the newest refusal of a pool, large (kvviz.css .kv-headline)."""

    snapshot = Ref("the pool")

    def __init__(self, **params):
        super().__init__(**params)
        self._pane = LiveHTML(headline_html(value(self.snapshot)), sizing_mode="stretch_width",
                              margin=(4, 10))
        watch(self.snapshot, lambda _e: setattr(self._pane, "object", headline_html(value(self.snapshot))))

    def __panel__(self):
        return self._pane
