"""Bokeh's server protocol, spoken directly: what the tests' protocol-level students send and read
(tests/ui/test_handin_class.py: forty hand in at once; tests/deploy/test_classroom_smoke.py: pages through
the class server's proxy). `Page` opens one page as BokehJS does; nothing else here does I/O.

A Bokeh server page (`panel serve`, GET /app) carries a signed session token in its script
(`render_items = [{"token": "...", ...}]`); the token's payload (base64url JSON) names the
session. BokehJS then opens `ws(s)://HOST/app/ws` plus the page's query string, with
`Sec-WebSocket-Protocol: bokeh, <token>`; the server builds (or finds) the session and sends ACK.

Every message is three text frames, header, metadata and content (JSON), then `num_buffers` pairs
(a buffer header `{"id": ...}` text frame, then the binary payload); see bokeh/protocol/message.py
and receiver.py. A client asks PULL-DOC-REQ and gets PULL-DOC-REPLY (`{"doc": {...}}`: the models
as `{"type": "object", "name", "id", "attributes"}`, a model seen before as `{"id": ...}`); both
sides then send PATCH-DOC (`{"events": [...]}`), answered with OK (`reqid`: the request's msgid).
The events a browser sends, as captured from BokehJS 3.9 in Chromium:

    button click   {"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": {"type": "event",
                    "name": "button_click", "values": {"type": "map", "entries": [["model", {"id": ID}]]}}}
    checkbox       {"kind": "ModelChanged", "model": {"id": ID}, "attr": "active", "new": true}
    slider         {"kind": "ModelChanged", "model": {"id": ID}, "attr": "value", "new": 9}, then, in a
                   second PATCH-DOC, the same for "value_throttled" (Panel acts on that one when
                   `pn.extension(throttled=True)`)
    page rendered  {"kind": "MessageSent", ..., "msg_data": {"type": "event", "name": "document_ready",
                    "values": {"type": "map"}}}
"""

from __future__ import annotations

import asyncio
import base64
import html
import json
import re
import urllib.parse
import uuid
from dataclasses import dataclass, field
from typing import Any

# The token in a Bokeh server page: render_items = [{"token": "...", ...}].
TOKEN_RE = re.compile(r'"token"\s*:\s*"([A-Za-z0-9_\-.=]+)"')
STEP_RE = re.compile(r"step <b>(\d+)</b>\s*·\s*(\w+)")
METRIC_RE = re.compile(r'class="kv-metric"[^>]*data-node="([^"]*)"[^>]*data-label="([^"]*)"[^>]*>.*?'
                       r'class="kv-value">([^<]*)<', re.S)
WATCHED_CLASSES = ("kv-metric", "kv-notice", "kv-step")  # a text that shows an action's effect
NODE_CLASS_RE = re.compile(r"^kv-node-([a-z0-9_-]+)$")
DATA_NODE_RE = re.compile(r'data-node="([a-z0-9_-]+)"')


# -- framing ------------------------------------------------------------------------------------
def make_id() -> str:  # a message id as BokehJS makes them (32 upper-case hex digits)
    return uuid.uuid4().hex.upper()


def message_frames(msgtype: str, content: dict, msgid: str | None = None) -> tuple[str, list[str]]:
    """(msgid, [header, metadata, content]) text frames of one message without buffers, the JSON
    written compactly as BokehJS writes it."""
    msgid = msgid or make_id()
    header = json.dumps({"msgid": msgid, "msgtype": msgtype}, separators=(",", ":"))
    return msgid, [header, "{}", json.dumps(content, separators=(",", ":"), ensure_ascii=False)]


def pull_doc_req() -> tuple[str, list[str]]:
    return message_frames("PULL-DOC-REQ", {})


def patch_doc(events: list[dict]) -> tuple[str, list[str]]:
    return message_frames("PATCH-DOC", {"events": events})


def bokeh_event(name: str, values: dict | None = None) -> dict:
    """A MessageSent event carrying a Bokeh UI event (bokeh/events.py), as BokehJS encodes it."""
    entries = [[k, v] for k, v in (values or {}).items()]
    encoded: dict[str, Any] = {"type": "map", "entries": entries} if entries else {"type": "map"}
    return {"kind": "MessageSent", "msg_type": "bokeh_event",
            "msg_data": {"type": "event", "name": name, "values": encoded}}


def button_click(model_id: str) -> dict:
    return bokeh_event("button_click", {"model": {"id": model_id}})


def document_ready() -> dict:
    return bokeh_event("document_ready")


def model_changed(model_id: str, attr: str, new: Any) -> dict:
    return {"kind": "ModelChanged", "model": {"id": model_id}, "attr": attr, "new": new}


@dataclass
class Message:
    header: dict
    metadata: str
    content: str  # the JSON text: parsed only by whoever needs it (see `json`)
    buffers: list[bytes] = field(default_factory=list)
    wire_bytes: int = 0  # every frame's payload, buffer headers included: what the browser receives

    @property
    def msgtype(self) -> str:
        return self.header.get("msgtype", "")

    def json(self) -> Any:
        return json.loads(self.content)


class ProtocolError(Exception):
    pass


class Assembler:
    """Frames in, messages out: feed(frame) returns a Message once its last frame has arrived."""

    def __init__(self):
        self._frames: list[str] = []
        self._partial: Message | None = None
        self._expect_payload = False
        self._bytes = 0

    def feed(self, frame: str | bytes) -> Message | None:
        self._bytes += len(frame) if isinstance(frame, bytes) else len(frame.encode())
        if self._partial is None:
            if not isinstance(frame, str):
                raise ProtocolError("a binary frame where a header, metadata or content was expected")
            self._frames.append(frame)
            if len(self._frames) < 3:
                return None
            header_json, metadata, content = self._frames
            self._frames = []
            try:
                header = json.loads(header_json)
            except ValueError as e:
                raise ProtocolError(f"header is not JSON: {header_json[:80]!r}") from e
            if not isinstance(header, dict) or "msgtype" not in header or "msgid" not in header:
                raise ProtocolError(f"not a message header: {header_json[:80]!r}")
            message = Message(header, metadata, content)
            if header.get("num_buffers", 0) == 0:
                message.wire_bytes, self._bytes = self._bytes, 0
                return message
            self._partial, self._expect_payload = message, False
            return None
        if not self._expect_payload:
            if not isinstance(frame, str) or set(json.loads(frame)) != {"id"}:
                raise ProtocolError(f"expected a buffer header, got {str(frame)[:80]!r}")
            self._expect_payload = True
            return None
        if not isinstance(frame, bytes):
            raise ProtocolError("expected a binary buffer payload, got text")
        self._partial.buffers.append(frame)
        self._expect_payload = False
        if len(self._partial.buffers) < self._partial.header["num_buffers"]:
            return None
        message, self._partial = self._partial, None
        message.wire_bytes, self._bytes = self._bytes, 0
        return message


# -- the page -----------------------------------------------------------------------------------
def session_token(page_html: str) -> tuple[str, str]:
    """(token, session_id) from a Bokeh server page; LookupError if the page has none."""
    match = TOKEN_RE.search(page_html)
    if not match:
        raise LookupError("no Bokeh session token in the page")
    token = match.group(1)
    payload = token.split(".")[0]
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return token, data["session_id"]


# -- the document ---------------------------------------------------------------------------------
def text_of(attributes: dict) -> str | None:
    """An HTML pane's text, unescaped (Panel sends its markup HTML-escaped), or None."""
    text = attributes.get("text")
    return html.unescape(text) if isinstance(text, str) else None


def parse_step(text: str) -> tuple[int, str] | None:
    """(step, 'playing' | 'paused' | 'idle') from a node's step counter text."""
    m = STEP_RE.search(text)
    return (int(m.group(1)), m.group(2)) if m else None


def metric_values(text: str) -> dict[tuple[str, str], str]:
    """(node, label) -> value of the metric cards in an HTML pane's text."""
    return {(html.unescape(n), html.unescape(lab)): html.unescape(v) for n, lab, v in METRIC_RE.findall(text)}


class DocIndex:
    """The models of a pulled document, kept up to date from the server's PATCH-DOCs: names,
    attributes that matter here (label, title, text, value, active, disabled, css_classes, ...),
    and which lesson node (fragmentation | paging | radix | ...) each model belongs to."""

    def __init__(self, doc: dict):
        self.models: dict[str, dict] = {}  # id -> {"name", "attributes"}
        self.children: dict[str, set[str]] = {}
        self.parents: dict[str, set[str]] = {}
        self._node_cache: dict[str, str | None] = {}
        self.roots = [r["id"] for r in doc.get("roots", []) if isinstance(r, dict) and "id" in r]
        for root in doc.get("roots", []):
            self._walk(root, None)

    def __len__(self) -> int:
        return len(self.models)

    def _walk(self, value: Any, owner: str | None) -> None:
        """Index every model rep inside `value`; `owner` refers to each model found directly."""
        stack = [(value, owner)]
        while stack:
            v, own = stack.pop()
            if isinstance(v, dict):
                mid = v.get("id")
                if v.get("type") == "object" and mid is not None and "name" in v:
                    attrs = v.get("attributes", {}) or {}
                    entry = self.models.setdefault(mid, {"name": v["name"], "attributes": {}})
                    entry["attributes"].update(attrs)
                    self._link(own, mid)
                    stack.extend((a, mid) for a in attrs.values())
                elif mid is not None and len(v) == 1:
                    self._link(own, mid)  # a reference to a model seen elsewhere
                else:
                    stack.extend((x, own) for x in v.values())
            elif isinstance(v, list):
                stack.extend((x, own) for x in v)

    def _link(self, parent: str | None, child: str) -> None:
        if parent is None or parent == child:
            return
        self.children.setdefault(parent, set()).add(child)
        self.parents.setdefault(child, set()).add(parent)
        self._node_cache.clear()

    def attr(self, mid: str, name: str, default: Any = None) -> Any:
        return self.models.get(mid, {}).get("attributes", {}).get(name, default)

    def name(self, mid: str) -> str:
        return self.models.get(mid, {}).get("name", "")

    def text(self, mid: str) -> str | None:
        return text_of(self.models.get(mid, {}).get("attributes", {}))

    def apply(self, events: list[dict]) -> list[tuple[str, str, Any]]:
        """Apply a PATCH-DOC's events; returns the (model id, attr, new value) of each ModelChanged."""
        changes = []
        for ev in events:
            kind = ev.get("kind")
            if kind == "ModelChanged":
                mid, attr, new = ev.get("model", {}).get("id"), ev.get("attr"), ev.get("new")
                if mid is None:
                    continue
                entry = self.models.setdefault(mid, {"name": "", "attributes": {}})
                entry["attributes"][attr] = new
                if isinstance(new, dict | list):
                    self._walk(new, mid)
                changes.append((mid, attr, new))
            elif kind == "RootAdded":
                self._walk(ev.get("model"), None)
                if isinstance(ev.get("model"), dict) and "id" in ev["model"]:
                    self.roots.append(ev["model"]["id"])
        return changes

    # -- where a model is ---------------------------------------------------------------------------
    def _own_nodes(self, mid: str) -> set[str]:
        """The nodes a model names itself: a `kv-node-<key>` CSS class (a node's section)."""
        classes = self.attr(mid, "css_classes") or []
        return {m.group(1) for c in classes if isinstance(c, str) for m in [NODE_CLASS_RE.match(c)] if m}

    def node_of(self, mid: str) -> str | None:
        """The lesson node a model belongs to: the nearest ancestor section with a `kv-node-<key>`
        class, else the nearest ancestor whose subtree's HTML names exactly one `data-node`."""
        if mid in self._node_cache:
            return self._node_cache[mid]
        found = self._nearest(mid, self._own_nodes)
        if found is None:
            found = self._nearest(mid, self._subtree_data_nodes)
        self._node_cache[mid] = found
        return found

    def _nearest(self, mid: str, nodes_of) -> str | None:
        seen, frontier = {mid}, [mid]
        while frontier:
            hits: set[str] = set()
            for m in frontier:
                hits |= nodes_of(m)
            if hits:
                return hits.pop() if len(hits) == 1 else None
            nxt = []
            for m in frontier:
                for p in self.parents.get(m, ()):
                    if p not in seen:
                        seen.add(p)
                        nxt.append(p)
            frontier = nxt
        return None

    def _subtree_data_nodes(self, mid: str, limit: int = 400) -> set[str]:
        out: set[str] = set()
        seen, stack = {mid}, [mid]
        while stack and len(seen) < limit:
            m = stack.pop()
            text = self.text(m)
            if text and "data-node" in text:
                out |= set(DATA_NODE_RE.findall(text))
            for c in self.children.get(m, ()):
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return out

    # -- finding what a student acts on -----------------------------------------------------------
    def find(self, node: str, *, label: str | None = None, title: str | None = None,
             kinds: tuple[str, ...] = ()) -> list[str]:
        """Models of `node` whose label (buttons, checkboxes) or title (sliders) contains the text."""
        out = []
        for mid, m in self.models.items():
            if kinds and m["name"].rsplit(".", 1)[-1] not in kinds:  # e.g. panel.models.widgets.Button
                continue
            a = m["attributes"]
            if label is not None and not (isinstance(a.get("label"), str) and label in a["label"]):
                continue
            if title is not None and not (isinstance(a.get("title"), str) and title in a["title"]):
                continue
            if self.node_of(mid) == node:
                out.append(mid)
        return sorted(out)

    def watched(self) -> dict[str, str]:
        """id -> node of every HTML pane showing a metric card, a notice or a step counter."""
        out = {}
        for mid in self.models:
            text = self.text(mid)
            if text and any(c in text for c in WATCHED_CLASSES):
                node = self._text_node(text) or self.node_of(mid)
                if node:
                    out[mid] = node
        return out

    def _text_node(self, text: str) -> str | None:
        found = set(DATA_NODE_RE.findall(text))
        return found.pop() if len(found) == 1 else None

    def metric_cards(self) -> dict[tuple[str, str], str]:
        out: dict[tuple[str, str], str] = {}
        for mid in self.models:
            text = self.text(mid)
            if text and "kv-metric" in text:
                out.update(metric_values(text))
        return out


# -- one page over its websocket ------------------------------------------------------------------
class Page:
    """A Bokeh server page (`url`: http://HOST:PORT/app?QUERY) opened as BokehJS opens it, from the
    page's HTML: its websocket (`ws://HOST:PORT/app/ws?QUERY`, `bokeh, <token>`), ACK, then
    PULL-DOC-REQ -> PULL-DOC-REPLY (`doc`, its `reply`); `send` a PATCH-DOC, `next` message."""

    def __init__(self, url: str):
        u = urllib.parse.urlsplit(url)
        self.origin = f"{u.scheme}://{u.netloc}"
        self.ws_url = f"ws://{u.netloc}{u.path.rstrip('/')}/ws" + (f"?{u.query}" if u.query else "")
        self.assembler = Assembler()
        self.ws: Any = None
        self.doc: DocIndex | None = None
        self.reply: Message | None = None
        self.ws_headers: dict[str, str] = {}

    async def open(self, page_html: str, source: str | None = None, timeout: float = 300) -> DocIndex:
        import websockets  # noqa: PLC0415 (a test dependency)

        token, _session = session_token(page_html)
        self.ws = await websockets.connect(
            self.ws_url, origin=self.origin, subprotocols=["bokeh", token], max_size=None, ping_interval=None,
            open_timeout=timeout, proxy=None, local_addr=(source, 0) if source else None)
        self.ws_headers = {k.lower(): v for k, v in self.ws.response.headers.raw_items()}
        ack = await asyncio.wait_for(self.next(), timeout)
        if ack.msgtype != "ACK":
            raise ProtocolError(f"expected ACK, got {ack.msgtype}")
        _id, frames = pull_doc_req()
        for f in frames:
            await self.ws.send(f)
        self.reply = await asyncio.wait_for(self.next(), timeout)
        while self.reply.msgtype != "PULL-DOC-REPLY":  # (a PATCH-DOC may come first)
            self.reply = await asyncio.wait_for(self.next(), timeout)
        self.doc = DocIndex(self.reply.json()["doc"])
        return self.doc

    async def send(self, events: list[dict]) -> str:
        msgid, frames = patch_doc(events)
        for f in frames:
            await self.ws.send(f)
        return msgid

    async def next(self) -> Message:
        while True:
            message = self.assembler.feed(await self.ws.recv())
            if message is not None:
                return message

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close(code=1001, reason="tab closed")
