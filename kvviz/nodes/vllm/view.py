"""Node 04's view: vLLM's status, a prompt box (live) or a Replay button (the recording), its
cache tree and metrics over time, our engine's tree labelled with vLLM's hashes, and the requests
compared token for token. With no vLLM, every figure shows the recording in assets/, said so in
the status line.

Building the view attaches the state to the process's one vLLM watcher; once the page has loaded
(kvviz/web/timer.py), this session's poll timer starts (twice a second: the state reads the
watcher's latest snapshot and collects answers), stopped when the session ends.
"""

from __future__ import annotations

import html

import panel as pn
import param

from engine.tokenizer import ByteTokenizer
from kvviz import formatting as fmt
from kvviz.figures.block_tree import BlockTree, TreeRow
from kvviz.figures.live_lines import LiveLines
from kvviz.figures.metric_card import card_html
from kvviz.nodes.view_base import prose, section
from kvviz.nodes.vllm import text
from kvviz.nodes.vllm.state import VllmState
from kvviz.web.live_html import LiveHTML
from kvviz.web.redraw import Redraw
from kvviz.web.timer import SessionTimer
from vllm_watch.defaults import MODEL_NAME, NUM_BLOCKS

POLL_MS = 500
STATUS_COLOURS = {"connected": "#009E73", "recording": "#0072B2", "waiting": "#E69F00",
                  "disconnected": "#D55E00"}
SHOWN = ("connected", "recording")  # snapshot statuses with a picture to draw
ROW = '<div style="display:flex;flex-wrap:wrap;gap:0.5rem">{}</div>'
_decode = ByteTokenizer().decode


def block_text(snap, tokens) -> str:
    """What a vLLM block's tokens spell: our byte tokenizer when vLLM serves our model, else ids."""
    if snap.model == MODEL_NAME:
        return _decode(tokens)
    return "token ids " + " ".join(map(str, tokens[:12])) + (" …" if len(tokens) > 12 else "")


def vllm_rows(state: VllmState) -> list[TreeRow]:
    snap = state.live
    if snap is None or snap.status not in SHOWN:
        return []
    ours = set(state.our_hashes.values())
    below: dict[int, int] = {}  # parent hash -> children cached
    for b in snap.tree.blocks:
        below[b.parent_hash] = below.get(b.parent_hash, 0) + 1
    rows = []
    for b in snap.tree.blocks:
        words = block_text(snap, b.tokens)
        n = below.get(b.block_hash, 0)
        same = b.block_hash in ours
        checked = snap.tree.hash_checked(b.block_hash)
        about = ("the same block in kvviz's engine: same tokens, same hash" if same
                 else "not in kvviz's engine for this session")
        if checked is False:
            about += "; vLLM's hash differs from the one recomputed here (another seed or hash algorithm)"
        rows.append(TreeRow(b.block_hash, b.parent_hash, fmt.excerpt(words, 18),
                            text.short_hash(b.block_hash) + (f" · {n} branches" if n > 1 else ""),
                            text.SAME if same else text.VLLM_ONLY, fmt.excerpt(words, 120), about,
                            text.short_hash(b.block_hash)[:5] + (f" ×{n}" if n > 1 else "")))
    return rows


def our_rows(state: VllmState) -> list[TreeRow]:
    snap = state.ours
    if snap is None:
        return []
    in_vllm = {b.block_hash for b in state.live.tree.blocks} if state.live is not None else set()
    by_block = {b.block_id: b for b in snap.blocks}
    rows, parent_of = [], {}
    for node in snap.radix:  # (parents before children)
        parent = parent_of.get(node.parent_id)
        for block in node.blocks:
            h = state.our_hashes.get(block)
            same = h in in_vllm
            words = by_block[block].text
            rows.append(TreeRow(block, parent, fmt.excerpt(words, 18),
                                f"block {block} · {text.short_hash(h) if h is not None else '?'}",
                                text.SAME if same else text.OURS_ONLY, fmt.excerpt(words, 120),
                                "vLLM's cache holds this hash now" if same else "not in vLLM's cache now",
                                f"block {block}"))
            parent = block
        parent_of[node.node_id] = parent
    return rows


def trunk_html(state: VllmState) -> str:
    """The tree in words (also for screen readers): the longest prefix that requests share."""
    snap = state.live
    if snap is None or snap.status not in SHOWN or not snap.tree.blocks:
        return ""
    children: dict[int | None, list] = {}
    for b in snap.tree.blocks:
        children.setdefault(b.parent_hash, []).append(b)
    best = (0, 0, ())
    for root in children.get(None, []):
        trunk = [root]
        while len(children.get(trunk[-1].block_hash, [])) == 1:
            trunk.append(children[trunk[-1].block_hash][0])
        branches = len(children.get(trunk[-1].block_hash, []))
        if branches > 1:
            best = max(best, (branches, len(trunk), tuple(trunk)), key=lambda t: (t[0], t[1]))
    n = len(snap.tree.blocks)
    if not best[0]:
        said = (
            f"vLLM's cache holds {n} block{'s' if n != 1 else ''}; no prefix is shared by two requests yet.")
    else:
        branches, depth, trunk = best
        words = fmt.excerpt(block_text(snap, [t for b in trunk for t in b.tokens]), 60)
        said = (f"vLLM's cache holds {n} blocks. Shared trunk: {depth} block{'s' if depth != 1 else ''} "
                f"(\u201c{words}\u201d), stored once, then {branches} branches.")
    return (f'<div class="kv-note kv-vllm-trunk" data-trunk="{best[1]}" data-branches="{best[0]}">'
            f'{html.escape(said)}</div>')


def status_html(state: VllmState) -> str:
    kind, sentence = text.status_line(state)
    style = (
        "font-size:1rem;padding:0.35rem 0.7rem;background:#f6f8fb;border-left:5px solid "
        f"{STATUS_COLOURS[kind]}")
    return (
        f'<div class="kv-vllm-status" data-state="{kind}" role="status" '
        f'style="{style}">{html.escape(sentence)}</div>')


def cards_html(state: VllmState) -> str:
    return ROW.format("".join(card_html("vllm", c.label, c.value(state), c.counts, c.source)
                              for c in text.CARDS))


def same_html(state: VllmState) -> str:
    done = [e for e in state.exchanges if e.our_ids]
    same = sum(e.first_divergence is None for e in done)
    in_vllm = {b.block_hash for b in state.live.tree.blocks} if state.live is not None else set()
    matched = sum(h in in_vllm for h in state.our_hashes.values())
    return ROW.format(card_html("vllm", "SAME TOKENS", f"{same} / {len(done)}",
                                "Requests for which vLLM and kvviz's engine generated identical tokens.")
                      + card_html("vllm", "SAME BLOCKS", f"{matched} / {len(state.our_hashes)}",
                                  "kvviz's cached blocks whose vLLM hash vLLM's cache holds right now."))


EXCHANGE_HEADS = ("question", "vLLM wrote", "kvviz's engine wrote", "tokens",
                  "cached prompt tokens (vLLM / ours)")


def exchanges_html(state: VllmState) -> str:
    if not state.exchanges:
        return '<div class="kv-note">No request sent yet.</div>'
    rows = []
    for e in reversed(state.exchanges):
        if e.error:
            verdict = html.escape(e.error)
        elif e.vllm_ids and not e.our_ids:
            verdict = "kvviz's engine computing…"
        elif e.pending:
            verdict = "waiting for vLLM…"
        elif (k := e.first_divergence) is None:
            verdict = f"identical ({len(e.our_ids)} tokens)"
        else:
            verdict = f"differ from token {k}"
        cached = (
            f"{'–' if e.vllm_cached is None else e.vllm_cached} / "
            f"{'–' if e.our_cached is None else e.our_cached}")
        cells = (("kv-text kv-prompt", html.escape(fmt.excerpt(e.question, 60))),
                 ("kv-text kv-gen", html.escape(fmt.printable(e.vllm_text))),
                 ("kv-text kv-gen", html.escape(fmt.printable(e.our_text))), ("", verdict), ("", cached))
        rows.append(f'<tr data-verdict="{"same" if e.our_ids and e.first_divergence is None else "other"}">'
                    + "".join(f'<td class="{c}" data-label="{html.escape(h)}">{v}</td>'
                              for h, (c, v) in zip(EXCHANGE_HEADS, cells, strict=True)) + "</tr>")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in EXCHANGE_HEADS)
    # (each cell says its heading too: on a phone a row is a card, its cells one under another, full width)
    return (f'<div class="kv-requests kv-exchanges"><table><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def notice_html(state: VllmState) -> str:
    cls = "kv-notice" if state.notice else "kv-notice kv-empty"
    return f'<div class="{cls}" data-node="vllm">{html.escape(state.notice)}</div>'


class VllmView(pn.viewable.Viewer):
    outline = param.Parameter(default=(), doc="the lesson's nodes, (key, number, title) each (Node.outline)")

    def __init__(self, state: VllmState, on_interact=None, **params):
        super().__init__(**params)
        self.state, self.on_interact, s = state, on_interact, state
        s.batch_updates = pn.io.hold
        s.attach()
        box = pn.widgets.TextInput.from_param(s.param.prompt, label=text.QUESTION_LABEL,
                                              sizing_mode="stretch_width", min_width=220,
                                              max_length=fmt.PROMPT_MAX_CHARS, css_classes=["kv-in-question"])
        box.param.watch(lambda _e: s.send(), "enter_pressed")
        send = pn.widgets.Button(label="Send to vLLM", color="primary", css_classes=["kv-do-send"])
        send.on_click(lambda _e: s.send())
        four = pn.widgets.Button(label="Send the lesson's four questions", css_classes=["kv-do-send_four"])
        four.on_click(lambda _e: s.send_lesson_questions())
        self.send_row = pn.FlexBox(box, send, four, align_items="end", sizing_mode="stretch_width")
        self.replay = pn.widgets.Button(label="▶ Replay the recording", color="primary",
                                        css_classes=["kv-do-replay"])
        self.replay.on_click(lambda _e: s.replay())
        self.try_live, self.try_recorded = (prose(text.TRY, css_classes=["kv-try"]),
                                            prose(text.TRY_RECORDED, css_classes=["kv-try"]))
        self.vllm_tree = BlockTree(text.VLLM_TREE_TITLE, NUM_BLOCKS, "kv-vllm-tree", text.VLLM_TREE_EMPTY)
        self.our_tree = BlockTree(text.OUR_TREE_TITLE, NUM_BLOCKS, "kv-our-tree", text.OUR_TREE_EMPTY)
        self.usage = LiveLines("vLLM over time: KV usage and prefix hit rate",
                               (("kv_usage", "KV usage %", "#D55E00"),
                                ("hit_rate", "prefix hit rate %", "#0072B2")),
                               "%", y_range=(0, 100))
        self.load = LiveLines("Requests running and waiting, preemptions so far",
                              (("running", "running", "#009E73"), ("waiting", "waiting", "#E69F00"),
                               ("preemptions", "preemptions", "#CC79A7")), "count")
        self.panes = {f: LiveHTML(f(s), sizing_mode="stretch_width", margin=(4, 10))
                      for f in (status_html, notice_html, cards_html, trunk_html, same_html, exchanges_html)}
        s.param.watch(lambda _e: self._text(notice_html), "notice")
        s.param.watch(Redraw(self._redraw), ["live", "server", "replaying", "ours", "exchanges"])
        self._trees_drawn = ()
        self._redraw()
        SessionTimer(s.poll, POLL_MS)
        self._layout = section(
            "vllm", self.panes[status_html], prose(text.PROSE), self.send_row, self.replay,
            self.try_live, self.try_recorded, self.panes[notice_html], self.panes[cards_html],
            self.panes[trunk_html], self.vllm_tree, self.usage, self.load,
            self.panes[same_html], self.our_tree, self.panes[exchanges_html], prose(text.LIMITS),
            outline=self.outline)

    def _text(self, fn) -> None:
        html_now = fn(self.state)
        if self.panes[fn].object != html_now:
            self.panes[fn].object = html_now

    def _redraw(self) -> None:
        live = self.state.live
        trees = (None if live is None else (live.status, live.last_seq, live.restarts), id(self.state.ours))
        live = self.state.connected
        with pn.io.hold():
            for fn in self.panes:
                self._text(fn)
            for widget, shown in ((self.send_row, live), (self.try_live, live),
                                  (self.replay, not live and self.state.recording is not None),
                                  (self.try_recorded, not live and self.state.recording is not None)):
                if widget.visible != shown:
                    widget.visible = shown
            label = "Replaying…" if self.state.replaying else "▶ Replay the recording"
            if self.replay.label != label:
                self.replay.label = label
            if trees != self._trees_drawn:  # (the metrics change every second; the trees far less often)
                self._trees_drawn = trees
                self.vllm_tree.update(vllm_rows(self.state))
                self.our_tree.update(our_rows(self.state))
            history = self.state.live.history if self.state.live is not None else ()
            points = [{"t": h.t, "kv_usage": 100 * h.kv_usage, "hit_rate": 100 * h.hit_rate,
                       "running": h.running, "waiting": h.waiting, "preemptions": h.preemptions}
                      for h in history]
            self.usage.update(points)
            self.load.update(points)

    def set_visible(self, visible: bool) -> None:
        """(The poll keeps running off screen: answers still arrive; it costs a pointer compare.)"""

    def __panel__(self):
        return self._layout
