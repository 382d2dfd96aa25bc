"""A class of students on one class server: time to a ready page, click -> changed text, Play
pace, server CPU and memory, document size, and where each page was built (issue 10).

    python -m benchmarks.classroom [--url http://127.0.0.1:5006/app | --start [--backends N]]
        [--students 40] [--open-seconds 10] [--act-seconds 60] [--act-every 3] [--cycles 200]
        [--probes 2] [--json PATH]

Against a running `make class` (default URL http://127.0.0.1:5006/app), or, with --start, a class
server started here on loopback by deploy/class_server.py (the script `make class` runs) and
stopped at the end. Only loopback addresses are targeted.

Students are protocol-level clients in one asyncio process, each from its own loopback source
address 127.1.x.y (so nginx's `hash $remote_addr` spreads them as it would a room):

    open    GET /app (a cold browser cache: also the page's scripts and stylesheets), read the
            session token, open /app/ws with `Sec-WebSocket-Protocol: bokeh, <token>`, wait for
            ACK, PULL-DOC-REQ -> PULL-DOC-REPLY (the whole document: its bytes are the document
            size), send document_ready as BokehJS does. Ready = the reply parsed and metric cards
            in it. The backend of the GET and of the websocket come from nginx's X-Kvviz-Backend
            header: a page whose websocket reached another backend was built twice.
    act     every ACT_EVERY seconds, in turn: Play (node 02; not while it plays), the Prefix
            sharing toggle (node 03), the Reserved length slider +-1 (node 01), Add request
            (node 02; every sixth time Reset) -- first scrolling there as a browser reports it
            (a node built only when scrolled to is waited for: "a node built when first scrolled
            to"), then as PATCH-DOC messages exactly as BokehJS sends them
            (benchmarks/classroom_protocol.py). Latency:
            the message sent -> the first PATCH-DOC from the server that changes a metric card,
            notice or step counter of that node. An action on a node that was already playing is
            counted apart (its first change may be a play tick). Play pace: the step counter
            ("step <b>N</b> · playing") advances per 10 s while a node plays (nominal: 40).
    leave   every websocket closed (code 1001, as a closing tab); backend CPU until it is quiet.
    cycles  CYCLES open/close pages (a warm browser cache: no scripts), CYCLE_CONCURRENCY at once;
            then the sessions' lifetime is waited out and memory measured again.

Optional Chromium probes (benchmarks/classroom_probes.py; Debian's /usr/bin/chromium, never a
downloaded browser) open /app too and act in the page, timing click -> changed card text in the page itself.

Server CPU, RSS and PSS come from /proc of the backends (found from the class server's state file
in the temporary directory, else by their `panel serve` command lines); nginx's access log counts
GETs and websockets per backend. The machine is probably shared: the load average is reported.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import datetime
import gzip
import ipaddress
import json
import math
import os
import platform
import random
import re
import resource
import socket
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import classroom_protocol as bp
from benchmarks.classroom_probes import OPEN_TIMEOUT_S, run_probes  # (a page's open: probes and students)
from benchmarks.classroom_server import (
    AccessLog,
    BackendLogs,
    ServerMeter,
    StartedServer,
)
from benchmarks.common import free_port, percentile

DEFAULT_URL = "http://127.0.0.1:5006/app"
RESULTS_DIR = Path(__file__).resolve().parent / "results"
NOMINAL_STEPS_PER_10S = 40.0  # normal speed: one engine step every 250 ms
ACT_TIMEOUT_S = 15
HTTP_TIMEOUT_S = 120
BUSY_RETRIES = 20  # a student's page reloads itself this often on the busy page before giving up
STATIC_CONNECTIONS = 6  # as a browser: six connections per host
ACTIONS = ("play", "sharing", "reserve", "add")  # Play 9 s before Add: its replay is over by then
ACTION_WIDGET = {  # action -> (its node, the widget that shows the node is built: DocIndex.find's arguments)
    "add": ("paging", {"label": "Add request", "kinds": ("Button",)}),
    "play": ("paging", {"label": "Play", "kinds": ("Button",)}),
    "sharing": ("radix", {"label": "Prefix sharing", "kinds": ("Checkbox",)}),
    "reserve": ("fragmentation", {"title": "Reserved length", "kinds": ("Slider",)}),
}
# After the last session's lifetime: Panel collects the garbage 5 s after the last session is
# destroyed (postponed while sessions keep expiring), and a full collection of a few hundred
# closed pages takes seconds; memory read before it measures garbage waiting to be collected.
GC_SETTLE_S = 30
RESET_EVERY_ADDS = 6  # node 02's pool fills: every sixth add is a Reset instead (a class-sized session)


# -- statistics ---------------------------------------------------------------------------------------
def summary(values: list[float], digits: int = 3) -> dict:
    if not values:
        return {"n": 0, "p50": None, "p95": None, "max": None}
    return {"n": len(values), "p50": round(percentile(values, 50), digits),
            "p95": round(percentile(values, 95), digits), "max": round(max(values), digits)}


def steps_per_10s(observations: list[tuple]) -> tuple[float, float]:
    """(steps per 10 s, seconds observed) while playing, from one node's step counter
    observations (time, step, status[, glance]) in order: each pair of consecutive observations
    that starts 'playing', within one glance of the student at the node (the same number, not
    None: see Student.glance), adds its step and time differences (a counter may skip numbers
    when updates are batched). A node off screen may stop animating: that time is not counted."""
    steps, seconds = 0, 0.0
    for a, b in zip(observations, observations[1:], strict=False):
        (t0, s0, st0), (t1, s1, st1) = a[:3], b[:3]
        if len(a) > 3 and (a[3] is None or a[3] != b[3]):
            continue  # off screen at either, or the student looked away in between
        if st0 == "playing" and st1 in ("playing", "idle", "paused") and s1 > s0:
            steps += s1 - s0
            seconds += t1 - t0
    return (10 * steps / seconds if seconds > 0 else math.nan), seconds


# -- HTTP, from a chosen source address ---------------------------------------------------------------
async def http_get(host: str, port: int, path: str, source: str, timeout: float = HTTP_TIMEOUT_S,
                   decompress: bool = True) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of a GET over HTTP/1.0 (no chunked encoding), sent from `source`,
    accepting gzip as a browser does (the body returned is decompressed unless `decompress` is
    False: a browser's work, on its own machine; `wire_bytes` in the headers is what came over
    the socket)."""
    async def go():
        reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
        try:
            writer.write(f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nUser-Agent: kvviz-classroom\r\n"
                         f"Accept: */*\r\nAccept-Encoding: gzip\r\n\r\n".encode())
            await writer.drain()
            raw = await reader.read()
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        head, _, body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        headers["wire_bytes"] = str(len(body))
        if decompress and headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        return status, headers, body
    return await asyncio.wait_for(go(), timeout)


RESOURCE_RE = re.compile(r'<(?:script[^>]*\bsrc|link[^>]*\bhref)="([^"]+)"')


def page_resources(page: str, page_path: str) -> list[str]:
    """Paths of the scripts and stylesheets a page loads from its own server."""
    out = []
    for ref in RESOURCE_RE.findall(page):
        url = urllib.parse.urljoin(page_path, ref)
        parsed = urllib.parse.urlsplit(url)
        if parsed.netloc or parsed.scheme not in ("", "http", "https"):
            continue  # another host (none in a served page; a CDN would be), or inline (the icon: data:)
        out.append(parsed.path + (f"?{parsed.query}" if parsed.query else ""))
    return list(dict.fromkeys(out))


def answered_by(upstreams: str | None) -> str | None:
    """The backend that answered, from nginx's $upstream_addr: after a retry it lists every
    backend tried ("127.0.0.1:5101, 127.0.0.1:5100"), the last one answered."""
    return upstreams.split(",")[-1].strip() if upstreams else None


def source_address(i: int) -> str:
    """Student i's loopback source address: 127.1.0.1, 127.1.0.2, ... (250 per third octet)."""
    return f"127.1.{i // 250}.{i % 250 + 1}"


# -- a student ------------------------------------------------------------------------------------
@dataclass
class Change:
    t: float
    node: str
    kind: str  # kv-metric | kv-notice | kv-step


@dataclass
class Student:
    index: int
    url: str
    source: str
    log: list = field(default_factory=list)  # action results
    steps: dict = field(default_factory=dict)  # node -> [(t, step, status)]

    def __post_init__(self):
        u = urllib.parse.urlsplit(self.url)
        self.host, self.port = u.hostname, u.port or 80
        self.path = u.path + (f"?{u.query}" if u.query else "")
        self.ws_url = f"ws://{u.hostname}:{self.port}{u.path.rstrip('/')}/ws" + (f"?{u.query}" if u.query else "")
        self.origin = f"http://{u.hostname}:{self.port}"
        self.ws = None
        self.doc: bp.DocIndex | None = None
        self.reader: asyncio.Task | None = None
        self.watched: dict[str, str] = {}
        self.texts: dict[str, str] = {}
        self.waiters: list[tuple[str, float, asyncio.Future]] = []
        self.acks: dict[str, float] = {}
        self.adds = 0
        self.reserve_dir = 1
        self.errors: list[str] = []
        self.open_info: dict = {}
        self.view = "fragmentation"  # the node on screen: the first, at load
        self.glances = 0  # how many times the student has looked at another node
        self.reveals: list[dict] = []  # nodes built when first scrolled to: {node, seconds}
        self.grew: asyncio.Event | None = None  # set when a patch brings new models
        self.bytes_in = 0  # every message received after the document, on the wire

    # -- open ---------------------------------------------------------------------------------
    async def open(self, fetch_static: bool) -> dict:
        import websockets  # noqa: PLC0415 (a test dependency: imported when students run)

        info: dict = {"student": self.index, "source": self.source}
        t0 = time.perf_counter()
        try:
            info["busy_pages"] = 0
            while True:
                status, headers, body = await http_get(self.host, self.port, self.path, self.source)
                if status != 503 or b"busy, retrying" not in body or info["busy_pages"] >= BUSY_RETRIES:
                    break
                # "The class server is busy, retrying…": as that page does, wait 2-4 s and reload
                info["busy_pages"] += 1
                await asyncio.sleep(2 + random.random() * 2)
            info["get_s"] = time.perf_counter() - t0
            info["get_backend"] = answered_by(headers.get("x-kvviz-backend"))
            if status != 200:
                raise RuntimeError(f"GET {self.path}: HTTP {status}")
            page = body.decode("utf-8", "replace")
            token, info["session_id"] = bp.session_token(page)
            if fetch_static:
                paths = page_resources(page, self.path)
                sem = asyncio.Semaphore(STATIC_CONNECTIONS)

                async def fetch(p):
                    async with sem:
                        st, h, _b = await http_get(self.host, self.port, p, self.source)
                        return st, int(h["wire_bytes"])

                got = await asyncio.gather(*(fetch(p) for p in paths))
                info["static_files"], info["static_bytes"] = len(got), sum(n for _s, n in got)
                info["static_failed"] = sum(1 for s, _n in got if s != 200)
            t_ws = time.perf_counter()
            info["static_s"] = t_ws - t0 - info["get_s"]
            self.ws = await websockets.connect(
                self.ws_url, origin=self.origin, subprotocols=["bokeh", token], compression=None, proxy=None,
                max_size=None, max_queue=4096, ping_interval=None, open_timeout=OPEN_TIMEOUT_S, close_timeout=2,
                user_agent_header="kvviz-classroom", local_addr=(self.source, 0))
            info["ws_backend"] = answered_by(self.ws.response.headers.get("X-Kvviz-Backend"))
            info["get_to_ws_s"] = time.perf_counter() - t0 - info["get_s"]  # the session waits this long
            assembler = bp.Assembler()
            ack = await self._next_message(assembler)
            if ack.msgtype != "ACK":
                raise RuntimeError(f"expected ACK, got {ack.msgtype}")
            info["ack_s"] = time.perf_counter() - t_ws
            reqid, frames = bp.pull_doc_req()
            for f in frames:
                await self.ws.send(f)
            reply = await self._next_message(assembler)
            while reply.msgtype != "PULL-DOC-REPLY":  # (a PATCH-DOC may come first)
                reply = await self._next_message(assembler)
            content = reply.json()
            self.doc = bp.DocIndex(content["doc"])
            cards = [m for m in self.doc.models if 'class="kv-metric"' in (self.doc.text(m) or "")]
            info["ready_s"] = time.perf_counter() - t0
            info["doc_bytes"] = reply.wire_bytes
            info["doc_buffers"] = len(reply.buffers)
            info["models"] = len(self.doc)
            info["cards"] = len(cards)
            if not cards:
                raise RuntimeError("the document has no metric cards")
            self.grew = asyncio.Event()
            self._watch_new_texts()
            _id, frames = bp.patch_doc([bp.document_ready()])
            for f in frames:
                await self.ws.send(f)
            self.reader = asyncio.create_task(self._read(assembler))
        except Exception as e:  # noqa: BLE001 (one student's failure is a result, not a crash)
            info["error"] = f"{type(e).__name__}: {e}"
            await self.close()
        self.open_info = info
        return info

    def _watch_new_texts(self) -> None:
        """Start watching the metric cards, notices and step counters not watched yet."""
        now = time.perf_counter()
        for mid, node in self.doc.watched().items():
            if mid in self.watched:
                continue
            self.watched[mid] = node
            self.texts[mid] = self.doc.text(mid) or ""
            step = bp.parse_step(self.texts[mid])
            if step:
                self.steps.setdefault(node, []).append((now, *step, self.glance(node)))

    async def _next_message(self, assembler: bp.Assembler) -> bp.Message:
        while True:
            frame = await asyncio.wait_for(self.ws.recv(), OPEN_TIMEOUT_S)
            msg = assembler.feed(frame)
            if msg is not None:
                return msg

    async def _read(self, assembler: bp.Assembler) -> None:
        try:
            async for frame in self.ws:
                msg = assembler.feed(frame)
                if msg is not None:
                    self._handle(msg)
        except Exception as e:  # noqa: BLE001
            if not isinstance(e, asyncio.CancelledError):
                self.errors.append(f"reader: {type(e).__name__}: {e}")

    def _handle(self, msg: bp.Message) -> None:
        now = time.perf_counter()
        self.bytes_in += msg.wire_bytes
        if msg.msgtype == "OK":
            self.acks[msg.header.get("reqid", "")] = now
            return
        if msg.msgtype == "ERROR":
            self.errors.append(f"server ERROR: {msg.content[:200]}")
            return
        if msg.msgtype != "PATCH-DOC":
            return
        c = msg.content
        if '"text"' not in c and '"label"' not in c and '"disabled"' not in c and "RootAdded" not in c \
                and '"children"' not in c and '"objects"' not in c:
            return  # figures' data, layout: nothing a student's texts show
        size = len(self.doc)
        changes = self.doc.apply(msg.json().get("events", []))
        if len(self.doc) > size:  # new models (a node built when scrolled to): their texts too
            self._watch_new_texts()
            self.grew.set()
        changed_nodes: dict[str, set[str]] = {}
        for mid, attr, _new in changes:
            if attr != "text":
                continue
            if mid not in self.watched:
                text = self.doc.text(mid) or ""
                if not any(k in text for k in bp.WATCHED_CLASSES):
                    continue
                node = self.doc.watched().get(mid)
                if node is None:
                    continue
                self.watched[mid] = node
            text = self.doc.text(mid) or ""
            if text == self.texts.get(mid):
                continue
            self.texts[mid] = text
            node = self.watched[mid]
            kind = next((k for k in bp.WATCHED_CLASSES if k in text), "?")
            changed_nodes.setdefault(node, set()).add(kind)
            if kind == "kv-step":
                step = bp.parse_step(text)
                if step:
                    self.steps.setdefault(node, []).append((now, *step, self.glance(node)))
        if changed_nodes:
            for w in list(self.waiters):
                node, _t0, fut = w
                if node in changed_nodes and not fut.done():
                    fut.set_result((now, sorted(changed_nodes[node])))
                    self.waiters.remove(w)

    # -- act ----------------------------------------------------------------------------------
    async def look_at(self, node: str, widget: dict) -> None:
        """Scroll to `node` as a browser would: its view sensors report near and in view, the
        previous node's report out of view. A node not built yet is built by the server then:
        wait (up to OPEN_TIMEOUT_S) until `widget` (DocIndex.find's arguments) is in the document."""
        if node == self.view:
            return
        events = [bp.model_changed(d, attr, False) for d in self.doc.view_sensors(self.view)
                  for attr in ("in_view", "near")]
        events += [bp.model_changed(d, attr, True) for d in self.doc.view_sensors(node) for attr in ("near", "in_view")]
        self.view = node
        self.glances += 1
        t0 = time.perf_counter()
        for ev in events:  # one message per change, as BokehJS sends them
            _id, frames = bp.patch_doc([ev])
            for f in frames:
                await self.ws.send(f)
        if self.doc.find(node, **widget):
            return
        deadline = t0 + OPEN_TIMEOUT_S
        while not self.doc.find(node, **widget) and time.perf_counter() < deadline:
            self.grew.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.grew.wait(), deadline - time.perf_counter())
        if self.doc.find(node, **widget):
            self.reveals.append({"node": node, "seconds": time.perf_counter() - t0})

    def glance(self, node: str) -> int | None:
        """Which look at `node` this is (a new number each time the student scrolls to it), or
        None if it is off the student's screen now."""
        return self.glances if self.view == node else None

    def node_status(self, node: str) -> str | None:
        obs = self.steps.get(node)
        return obs[-1][2] if obs else None

    def plan(self, action: str) -> tuple[str, str, list[list[dict]]] | None:
        """(node, what, PATCH-DOC event lists) for an action, or None if it cannot be done now."""
        d = self.doc
        if action == "add":
            self.adds += 1
            if self.adds % RESET_EVERY_ADDS == 0:
                ids = d.find("paging", label="Reset", kinds=("Button",)) or d.find("paging", label="Rewind", kinds=("Button",))
                if ids:
                    return "paging", "reset", [[bp.button_click(ids[0])]]
            ids = [i for i in d.find("paging", label="Add request", kinds=("Button",)) if not d.attr(i, "disabled")]
            return ("paging", "add", [[bp.button_click(ids[0])]]) if ids else None
        if action == "play":
            ids = d.find("paging", label="Play", kinds=("Button",))
            if not ids or self.node_status("paging") == "playing":
                return None
            return "paging", "play", [[bp.button_click(ids[0])]]
        if action == "sharing":
            ids = d.find("radix", label="Prefix sharing", kinds=("Checkbox",))
            if not ids:
                return None
            new = not bool(d.attr(ids[0], "active"))
            d.models[ids[0]]["attributes"]["active"] = new
            return "radix", "sharing", [[bp.model_changed(ids[0], "active", new)]]
        if action == "reserve":
            ids = d.find("fragmentation", title="Reserved length", kinds=("Slider",))
            if not ids:
                return None
            sid = ids[0]
            value, lo, hi = d.attr(sid, "value"), d.attr(sid, "start"), d.attr(sid, "end")
            if not isinstance(value, int | float):
                return None
            new = value + self.reserve_dir
            if new > hi or new < lo:
                self.reserve_dir = -self.reserve_dir
                new = value + self.reserve_dir
            new = int(new) if float(new).is_integer() else new
            d.models[sid]["attributes"]["value"] = new
            return "fragmentation", "reserve", [[bp.model_changed(sid, "value", new)],
                                                [bp.model_changed(sid, "value_throttled", new)]]
        raise ValueError(action)

    async def act(self, action: str) -> dict:
        if self.doc is not None and self.ws is not None:
            with contextlib.suppress(Exception):
                await self.look_at(*ACTION_WIDGET[action])
        planned = self.plan(action) if self.doc is not None else None
        if planned is None:
            rec = {"action": action, "skipped": True}
            self.log.append(rec)
            return rec
        node, what, messages = planned
        playing = self.node_status(node) == "playing"
        fut = asyncio.get_running_loop().create_future()
        t0 = time.perf_counter()
        self.waiters.append((node, t0, fut))
        first_id = None
        try:
            for events in messages:
                msgid, frames = bp.patch_doc(events)
                first_id = first_id or msgid
                for f in frames:
                    await self.ws.send(f)
            t1, kinds = await asyncio.wait_for(fut, ACT_TIMEOUT_S)
            rec = {"action": what, "node": node, "latency_ms": 1000 * (t1 - t0), "changed": kinds,
                   "while_playing": playing}
        except TimeoutError:
            rec = {"action": what, "node": node, "unchanged": True, "while_playing": playing}
        except Exception as e:  # noqa: BLE001
            rec = {"action": what, "node": node, "error": f"{type(e).__name__}: {e}", "while_playing": playing}
        finally:
            self.waiters = [w for w in self.waiters if w[2] is not fut]
        if first_id in self.acks:
            rec["ok_ms"] = 1000 * (self.acks[first_id] - t0)
        rec["at"] = round(time.time() - (time.perf_counter() - t0), 3)  # when it was sent (Unix time)
        self.log.append(rec)
        return rec

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close(code=1001, reason="tab closed")
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(BaseException):
                await self.reader
        self.ws = self.reader = None


SERVER_PID: int | None = None  # the class server this run started (--start): not the probes' CPU


# -- the scenario ---------------------------------------------------------------------------------------
def check_loopback(url: str) -> tuple[str, int]:
    u = urllib.parse.urlsplit(url)
    if u.scheme != "http" or not u.hostname:
        raise SystemExit(f"--url must be http://HOST:PORT/PATH, got {url!r}")
    addrs = {ai[4][0] for ai in socket.getaddrinfo(u.hostname, u.port or 80, proto=socket.IPPROTO_TCP)}
    if not addrs or not all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addrs):
        raise SystemExit(f"only a loopback class server may be targeted; {u.hostname} is {sorted(addrs)}")
    if "127.0.0.1" not in addrs:
        raise SystemExit("the students' 127.1.x.y source addresses need the server on 127.0.0.1")
    return "127.0.0.1", u.port or 80


async def scenario(args: argparse.Namespace, meter: ServerMeter, access: AccessLog, logs: BackendLogs,
                   state: dict | None) -> dict:
    url = args.url
    n = args.students
    rng = random.Random(0)
    students = [Student(i, url, source_address(i)) for i in range(n)]
    t_start = time.perf_counter()
    open_at = [args.open_seconds * i / max(n, 1) for i in range(n)]
    act_from = t_start + args.open_seconds
    act_until = act_from + args.act_seconds

    probe_future = None
    pool = None
    if args.probes:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        probe_open = [args.open_seconds * (i + 0.5) / args.probes for i in range(args.probes)]
        probe_future = asyncio.get_running_loop().run_in_executor(
            pool, run_probes, url, args.probes, probe_open, act_from, act_until, args.act_every, t_start,
            SERVER_PID)

    meter.sample("start")

    async def one(s: Student) -> None:
        await asyncio.sleep(max(0.0, t_start + open_at[s.index] - time.perf_counter()))
        await s.open(fetch_static=not args.no_static)
        if s.doc is None:
            return
        # acting: from the end of the open window (or when ready, if later) until act_until
        await asyncio.sleep(max(0.0, act_from - time.perf_counter()) + rng.uniform(0, args.act_every))
        k = s.index % len(ACTIONS)
        while time.perf_counter() < act_until:
            t_next = time.perf_counter() + args.act_every
            await s.act(ACTIONS[k % len(ACTIONS)])
            k += 1
            await asyncio.sleep(max(0.0, t_next - time.perf_counter()))

    opened = asyncio.gather(*(one(s) for s in students))
    # the open window's CPU: sampled at its end
    await asyncio.sleep(max(0.0, act_from - time.perf_counter()))
    meter.sample("opened")
    await opened
    meter.sample("acted")  # every student still has the page open
    print(f"  opened and acted: {sum(1 for s in students if s.doc)} of {n} pages", file=sys.stderr, flush=True)

    # leave
    await asyncio.gather(*(s.close() for s in students))
    t_left = time.perf_counter()
    meter.sample("left")
    quiet_after = None
    lifetime_s = (state or {}).get("session_lifetime_ms", 15000) / 1000
    check_s = (state or {}).get("check_sessions_ms", 17000) / 1000
    settle_s = args.settle_seconds if args.settle_seconds is not None else lifetime_s + check_s + GC_SETTLE_S
    # Until the sessions' lifetime is over (memory is read then): when did the backends go quiet
    # (under 5% of a core over 2 s: no Play left running)?
    meter.sample("quiet-0")
    i = 0
    while time.perf_counter() < t_left + settle_s:
        await asyncio.sleep(2.0)
        i += 1
        meter.sample(f"quiet-{i}")
        busy = meter.cpu_between(f"quiet-{i - 1}", f"quiet-{i}")["cores_busy"]
        if busy < 0.05 and quiet_after is None:
            quiet_after = time.perf_counter() - t_left
        elif busy >= 0.05:
            quiet_after = None
    meter.sample("settled")

    # open/close cycles
    cycle_info: list[dict] = []
    sem = asyncio.Semaphore(args.cycle_concurrency)

    async def cycle(j: int) -> None:
        async with sem:
            s = Student(n + j, url, source_address(j % max(n, 1)))
            info = await s.open(fetch_static=False)
            await s.close()
            cycle_info.append(info)

    t_cycles = time.perf_counter()
    await asyncio.gather(*(cycle(j) for j in range(args.cycles)))
    cycles_wall = time.perf_counter() - t_cycles
    meter.sample("cycled")
    if args.cycles:
        await asyncio.sleep(settle_s)
    meter.sample("cycled-settled")

    probes = None
    if probe_future is not None:
        try:
            probes = await probe_future
        except Exception as e:  # noqa: BLE001
            probes = {"errors": [f"{type(e).__name__}: {e}"[:500]]}
        pool.shutdown()

    return collect(args, students, cycle_info, cycles_wall, meter, access, logs, state, probes, quiet_after, settle_s)


def collect(args, students, cycle_info, cycles_wall, meter, access, logs, state, probes, quiet_after, settle_s) -> dict:
    infos = [s.open_info for s in students]
    ok = [i for i in infos if "error" not in i]
    failed = [i for i in infos if "error" in i]
    built_twice = [i["student"] for i in ok if i.get("get_backend") and i.get("ws_backend")
                   and i["get_backend"] != i["ws_backend"]]
    per_backend: dict[str, dict[str, int]] = {}
    for i in ok:
        for kind in ("get", "ws"):
            b = i.get(f"{kind}_backend") or "?"
            per_backend.setdefault(b, {"get": 0, "ws": 0})[kind] += 1
    records = [r for s in students for r in s.log]
    done = [r for r in records if "latency_ms" in r]
    idle = [r["latency_ms"] for r in done if not r["while_playing"]]
    by_action = {}
    for what in sorted({r["action"] for r in records if "action" in r and not r.get("skipped")}):
        rs = [r for r in done if r["action"] == what]
        by_action[what] = {**summary([r["latency_ms"] for r in rs if not r["while_playing"]], 1),
                           "while_playing": sum(1 for r in rs if r["while_playing"]),
                           "unchanged": sum(1 for r in records if r.get("action") == what and r.get("unchanged"))}
    pace_steps, pace_seconds = 0.0, 0.0
    per_node_pace = {}
    for node in ("fragmentation", "paging", "radix"):
        steps = seconds = 0.0
        for s in students:
            rate, secs = steps_per_10s(s.steps.get(node, []))
            if secs > 0:
                steps += rate * secs / 10
                seconds += secs
        if seconds:
            per_node_pace[node] = {"steps_per_10s": round(10 * steps / seconds, 2), "seconds_observed": round(seconds, 1)}
        pace_steps += steps
        pace_seconds += seconds
    cyc_ok = [i for i in cycle_info if "error" not in i]
    cpu = {
        "open": meter.cpu_between("start", "opened"),
        "act": meter.cpu_between("opened", "acted"),
        "after_leave": meter.cpu_between("left", "settled"),
        "cycles": meter.cpu_between("settled", "cycled"),
    }
    load = os.getloadavg()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    results = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "url": args.url,
        "config": {"students": args.students, "open_seconds": args.open_seconds, "act_seconds": args.act_seconds,
                   "act_every_s": args.act_every, "cycles": args.cycles, "cycle_concurrency": args.cycle_concurrency,
                   "probes": args.probes, "static": not args.no_static, "settle_s": round(settle_s, 1),
                   "backends": [b.name for b in meter.backends],
                   "session_lifetime_ms": (state or {}).get("session_lifetime_ms"),
                   "started_here": bool(args.start)},
        "open": {
            "ready_s": summary([i["ready_s"] for i in ok]),
            "get_s": summary([i["get_s"] for i in ok]),
            "ack_after_static_s": summary([i["ack_s"] for i in ok]),
            "get_to_websocket_s": summary([i["get_to_ws_s"] for i in ok]),
            "failed": len(failed), "errors": sorted({i["error"] for i in failed})[:10],
            "busy_pages": sum(i.get("busy_pages", 0) for i in ok + failed),
            "students_sent_busy": sum(1 for i in ok + failed if i.get("busy_pages")),
            "with_cards": sum(1 for i in ok if i.get("cards", 0) > 0),
            "doc_bytes": summary([i["doc_bytes"] for i in ok], 0),
            "models": summary([i["models"] for i in ok], 0),
            "static_bytes": summary([i.get("static_bytes", 0) for i in ok], 0),
            "static_failed": sum(i.get("static_failed", 0) for i in ok),
            "per_backend": per_backend,
            "built_twice": len(built_twice), "built_twice_students": built_twice,
            "node_built_when_scrolled_to_s": summary([r["seconds"] for s in students for r in s.reveals]),
            "node_built_by_node": {node: summary([r["seconds"] for s in students for r in s.reveals if r["node"] == node])
                                   for node in sorted({r["node"] for s in students for r in s.reveals})},
            "bytes_after_load": summary([s.bytes_in for s in students if s.open_info.get("cards")], 0),
        },
        "act": {
            "latency_ms": summary(idle, 1),
            "latency_ms_all": summary([r["latency_ms"] for r in done], 1),
            "ok_ms": summary([r["ok_ms"] for r in records if "ok_ms" in r], 1),
            "actions": len([r for r in records if not r.get("skipped")]),
            "skipped": sum(1 for r in records if r.get("skipped")),
            "unchanged": sum(1 for r in records if r.get("unchanged")),
            "errors": sum(1 for r in records if "error" in r),
            "while_playing": sum(1 for r in done if r["while_playing"]),
            "by_action": by_action,
            "play_steps_per_10s": round(10 * pace_steps / pace_seconds, 2) if pace_seconds else None,
            "play_nominal_per_10s": NOMINAL_STEPS_PER_10S,
            "play_by_node": per_node_pace,
            "reader_errors": sorted({e for s in students for e in s.errors})[:10],
        },
        "leave": {"quiet_after_s": round(quiet_after, 1) if quiet_after is not None else None,
                  "waited_s": round(settle_s, 1)},
        "cycles": {"n": len(cycle_info), "failed": len(cycle_info) - len(cyc_ok), "wall_s": round(cycles_wall, 1),
                   "ready_s": summary([i["ready_s"] for i in cyc_ok]),
                   "built_twice": sum(1 for i in cyc_ok if i.get("get_backend") != i.get("ws_backend")),
                   "errors": sorted({i["error"] for i in cycle_info if "error" in i})[:10]},
        "server": {
            "cpu": cpu,
            "memory_mb": {
                "at_start": meter.memory("start"),
                "all_open": meter.memory("acted"),
                "after_leave": meter.memory("settled"),
                "after_cycles": meter.memory("cycled"),
                "after_cycles_settled": meter.memory("cycled-settled"),
            },
            "access_log": access.counts(),
            "backend_logs": logs.counts(),
        },
        "probes": summarize_probes(probes),
        "students": [student_record(s) for s in students],
        "client": {"cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "max_rss_mb": round(usage.ru_maxrss / 1024, 1)},
        "machine": {"cpu_count": os.cpu_count(), "load_avg_1_5_15_after": [round(x, 2) for x in load],
                    "python": platform.python_version(), "shared": True},
    }
    mem = results["server"]["memory_mb"]
    base = mem["all_open"]["rss_mb"]
    results["server"]["memory_growth_after_cycles"] = (
        round(mem["after_cycles_settled"]["rss_mb"] / base - 1, 3) if base else None)
    return results


def student_record(s: Student) -> dict:
    i = s.open_info
    keep = ("student", "source", "ready_s", "get_s", "cards", "models", "doc_bytes", "get_backend", "ws_backend", "error")
    rec = {k: (round(i[k], 3) if isinstance(i.get(k), float) else i.get(k)) for k in keep}
    rec.update(actions=sum(1 for r in s.log if not r.get("skipped")), changed=sum(1 for r in s.log if "latency_ms" in r),
               skipped=sum(1 for r in s.log if r.get("skipped")),
               timed=[[r["at"], r["action"], round(r["latency_ms"]), round(r.get("ok_ms", -1))]
                      for r in s.log if "latency_ms" in r])
    return rec


def summarize_probes(probes: dict | None) -> dict | None:
    if probes is None:
        return None
    return {"ready_s": summary(probes.get("ready_s", [])),
            "latency_ms": summary(probes.get("latency_ms", []), 1),
            "by_action": {k: summary(v, 1) for k, v in probes.get("by_action", {}).items()},
            "unchanged": probes.get("unchanged", 0), "skipped_playing": probes.get("skipped_playing", 0),
            "act_cpu_cores": round(probes["act_cpu_cores"], 2) if "act_cpu_cores" in probes else None,
            "errors": probes.get("errors", [])[:10]}


# -- output -------------------------------------------------------------------------------------------
def fmt(s: dict | None, scale: float = 1.0, unit: str = "", digits: int = 2) -> str:
    if not s or not s.get("n"):
        return "–"
    return " / ".join(f"{s[k] * scale:.{digits}f}" for k in ("p50", "p95", "max")) + unit


def machine_split(cpu: dict, probes_cores: float | None) -> str:
    """all / backends / students / probes / the rest, in cores busy (the probes' share is measured
    over the probes' own acting window, which is about the same)."""
    probes = probes_cores or 0.0
    rest = max(0.0, cpu["other_cores_busy"] - probes)
    return (f"{cpu['machine_cores_busy']:.2f} / {cpu['cores_busy']:.2f} / {cpu['students_cores_busy']:.2f} / "
            f"{probes:.2f} / {rest:.2f}")


def report(r: dict) -> str:
    o, a, srv, c = r["open"], r["act"], r["server"], r["cycles"]
    mem = srv["memory_mb"]
    pace = a["play_steps_per_10s"]
    pb = r["probes"]
    rows = [
        ("students (pages ready / failed)", f"{o['with_cards']} / {o['failed']} of {r['config']['students']}"),
        ("time to a ready page, p50 / p95 / max", fmt(o["ready_s"], unit=" s")),
        ("  GET /app alone (busy pages included), p50 / p95 / max", fmt(o["get_s"], unit=" s")),
        ("  students who saw \"busy, retrying\" / busy pages in all", f"{o['students_sent_busy']} / {o['busy_pages']}"),
        ("  GET answered → websocket open (the session waits), p50 / p95 / max",
         fmt(o["get_to_websocket_s"], unit=" s")),
        ("click → changed text (protocol), p50 / p95 / max", fmt(a["latency_ms"], unit=" ms", digits=0)),
        ("  actions timed / on a playing node / unchanged / skipped",
         f"{a['latency_ms']['n']} / {a['while_playing']} / {a['unchanged']} / {a['skipped']}"),
        ("click → changed text in Chromium, p50 / p95 / max", fmt(pb["latency_ms"], unit=" ms", digits=0) if pb else "–"),
        ("Chromium time to a ready page, p50 / p95 / max", fmt(pb["ready_s"], unit=" s") if pb else "–"),
        (f"Play steps per 10 s (nominal {a['play_nominal_per_10s']:.0f})", f"{pace:.1f}" if pace else "–"),
        ("pages built twice (GET and websocket on different backends)",
         f"{o['built_twice']} of {o['with_cards']}; cycles: {c['built_twice']} of {c['n'] - c['failed']}"),
        ("document per page, p50 / max", f"{o['doc_bytes']['p50'] / 1e3:.0f} / {o['doc_bytes']['max'] / 1e3:.0f} kB"
         if o["doc_bytes"]["n"] else "–"),
        ("models per page, p50", f"{o['models']['p50']:.0f}" if o["models"]["n"] else "–"),
        ("a node built when first scrolled to, p50 / p95 / max", fmt(o["node_built_when_scrolled_to_s"], unit=" s")),
        ("websocket bytes per student after the document, p50 / max",
         f"{o['bytes_after_load']['p50'] / 1e3:.0f} / {o['bytes_after_load']['max'] / 1e3:.0f} kB"
         if o["bytes_after_load"]["n"] else "–"),
        ("server memory (RSS): start / all open / after leave / after cycles",
         f"{mem['at_start']['rss_mb']:.0f} / {mem['all_open']['rss_mb']:.0f} / {mem['after_leave']['rss_mb']:.0f} / "
         f"{mem['after_cycles_settled']['rss_mb']:.0f} MB"),
        ("server memory (PSS): all open / after cycles",
         f"{mem['all_open']['pss_mb']:.0f} / {mem['after_cycles_settled']['pss_mb']:.0f} MB"),
        ("server CPU, cores busy: open / act / after leave / cycles",
         " / ".join(f"{srv['cpu'][k]['cores_busy']:.2f}" for k in ("open", "act", "after_leave", "cycles"))),
        (f"machine ({srv['cpu']['act']['machine_cores']} cores) while acting, cores busy: all / backends / "
         "students / Chromium probes / the rest (nginx, others)",
         machine_split(srv["cpu"]["act"], (pb or {}).get("act_cpu_cores"))),
        ("backend CPU quiet after all left", f"{r['leave']['quiet_after_s']} s" if r["leave"]["quiet_after_s"] is not None
         else f"not within {r['leave']['waited_s']} s"),
        (f"{c['n']} open/close cycles: ready p50 / p95 / max, failed",
         f"{fmt(c['ready_s'], unit=' s')}, {c['failed']} failed, {c['wall_s']} s" if c["n"] else "–"),
    ]
    lines = ["| | |", "| --- | --- |", *(f"| {k} | {v} |" for k, v in rows)]
    by = " · ".join(f"{k} {fmt(v, unit=' ms', digits=0)} (n={v['n']}, on a playing node {v['while_playing']}, "
                    f"unchanged {v['unchanged']})" for k, v in a["by_action"].items())
    backends = ", ".join(f"{b}: {v['get']} GET / {v['ws']} ws" for b, v in sorted(o["per_backend"].items()))
    log = srv.get("access_log") or {}
    log_line = ", ".join(f"{b}: {v['get']} GET / {v['ws']} ws" for b, v in sorted(log.get("per_backend", {}).items()))
    m = r["machine"]
    notes = [
        "",
        f"by action (p50 / p95 / max): {by}",
        f"students per backend: {backends}",
        f"nginx access log (students, cycles and probes): {log_line or '–'}"
        + (f"; clients split across backends: {len(log.get('clients_split', []))}" if log else ""),
        f"play pace by node: {json.dumps(a['play_by_node'])}",
        f"client (this process): {r['client']['cpu_s']} s CPU, {r['client']['max_rss_mb']} MB; "
        f"machine: {m['cpu_count']} CPUs, load average after {m['load_avg_1_5_15_after']} (shared machine); {r['date']}",
    ]
    bl = srv.get("backend_logs", {}).get("totals")
    if bl:
        notes.append("backend logs: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in bl.items()))
    errors = o["errors"] + a["reader_errors"] + c["errors"] + (pb["errors"] if pb else [])
    if errors:
        notes.append("errors: " + " | ".join(errors[:6]))
    return "\n".join(lines + notes)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default=None, help=f"the class server's page (default {DEFAULT_URL}; loopback only)")
    p.add_argument("--start", action="store_true",
                   help="start a class server here (deploy/class_server.py, as `make class`) and stop it at the end")
    p.add_argument("--backends", type=int, default=os.cpu_count() or 1, help="with --start: backends (default: cores)")
    p.add_argument("--port", type=int, default=None, help="with --start: nginx's port (default: a free one)")
    p.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                   help="with --start: one more argument for deploy/class_server.py (repeatable)")
    p.add_argument("--students", type=int, default=40)
    p.add_argument("--open-seconds", type=float, default=10.0, help="students open the page spread over this")
    p.add_argument("--act-seconds", type=float, default=60.0)
    p.add_argument("--act-every", type=float, default=3.0, help="seconds between one student's actions")
    p.add_argument("--cycles", type=int, default=200, help="open/close cycles after everyone left")
    p.add_argument("--cycle-concurrency", type=int, default=4)
    p.add_argument("--probes", type=int, default=2, help="Chromium pages that also act (0: none)")
    p.add_argument("--no-static", action="store_true", help="students do not fetch the page's scripts")
    p.add_argument("--settle-seconds", type=float, default=None,
                   help="wait after leaving and after the cycles before reading memory "
                        "(default: the server's session lifetime + its check interval + GC_SETTLE_S: the garbage collected)")
    p.add_argument("--json", type=Path, metavar="PATH",
                   help="write the results here (default benchmarks/results/classroom-<UTC time>.json)")
    args = p.parse_args(argv)
    if args.start and args.url:
        p.error("--start serves its own class server: give --port, not --url")
    if not 1 <= args.students <= 60000:
        p.error("--students must be between 1 and 60000")
    if args.act_every <= 0 or args.open_seconds < 0 or args.act_seconds < 0 or args.cycles < 0:
        p.error("times and counts must not be negative")
    if args.cycle_concurrency < 1 or not 0 <= args.probes <= 8:
        p.error("--cycle-concurrency must be >= 1 and --probes between 0 and 8")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    with contextlib.ExitStack() as stack:
        if args.start:
            port = args.port or free_port()
            base = port + 1  # (deploy/class_server.py refuses ports in use)
            started = stack.enter_context(StartedServer(port, args.backends, base_port=base, extra=args.server_arg))
            global SERVER_PID
            SERVER_PID = started.proc.pid
            args.url = f"http://127.0.0.1:{port}/app"
        args.url = args.url or DEFAULT_URL
        _host, port = check_loopback(args.url)
        meter = ServerMeter(port)
        if not meter.backends:
            raise SystemExit(f"no class server backends found for port {port} (is `make class` running?)")
        access, logs = AccessLog((meter.state or {}).get("access_log")), BackendLogs(meter.state)
        print(f"classroom: {args.students} students on {args.url} ({len(meter.backends)} backends); "
              f"open over {args.open_seconds:g} s, act every {args.act_every:g} s for {args.act_seconds:g} s, "
              f"then {args.cycles} cycles", file=sys.stderr, flush=True)
        results = asyncio.run(scenario(args, meter, access, logs, meter.state))
    print(report(results))
    path = args.json or RESULTS_DIR / f"classroom-{datetime.datetime.now(datetime.UTC):%Y%m%dT%H%M%SZ}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results: {path}")
    return results


if __name__ == "__main__":
    main()
