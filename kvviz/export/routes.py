"""The served lesson's routes: `panel serve app.py teacher.py --plugins kvviz.export.routes`.

    /                 the lesson: the recordings of this server's engine (/lesson/), played in the
                      browser; until they are made (a minute after the first start), the live /app
    /?node=paging     one node (/lesson/paging.html), with any state from its link
    /lesson/...       the recorded pages and their libraries, as static, cacheable files
    /lesson-status    JSON: whether the recordings are ready, and their key
    /lesson-handin    POST: a hand-in from the recorded lesson (kvviz/handin/endpoint.py)
    /lesson-live      GET: what no recording holds (a typed question, Release oldest...), run by
                      this process's engine and answered as one more branch to play
                      (kvviz/export/live.py)

Importing this module starts the recording (kvviz/export/cache.py) in a child process if this
code has none yet. Scripted actions on the recorded pages never reach the server; what no
recording holds runs on this server's engine: a typed prompt or question, Release oldest, Fill
the pool (/lesson-live, played in the page); Explain it back and node 04 (live at /app).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

from tornado.web import RequestHandler, StaticFileHandler

from kvviz.export import cache, live
from kvviz.handin.endpoint import HandInHandler

KEY = cache.key()
NODE_RE = re.compile(r"^[a-z]{1,20}$")


def _recorded_nodes(folder) -> set[str]:
    return {p.stem for p in folder.glob("*.html") if p.stem != "index"}


class LessonRoot(RequestHandler):
    """`/`: the recorded lesson when it is ready, else the live one; a link's state goes along."""

    def get(self) -> None:
        args = [(k, v) for k, vs in self.request.query_arguments.items() for v in vs]
        query = urlencode([(k, v.decode("utf-8", "replace")) for k, v in args])
        folder = cache.ready(k=KEY)
        node = self.get_query_argument("node", "")
        if folder is None or (node and node not in _recorded_nodes(folder)):
            self.redirect(f"app?{query}" if query else "app")
            return
        page = f"{node}.html" if node else ""
        self.redirect(f"lesson/{page}?{query}" if query else f"lesson/{page}")


class LessonFiles(StaticFileHandler):
    """`/lesson/<path>`: a file of the finished recording (before it is ready: the live lesson)."""

    def initialize(self) -> None:
        super().initialize(path=str(cache.cache_root()), default_filename="index.html")

    async def get(self, path: str, include_body: bool = True) -> None:
        if cache.ready(k=KEY) is None:
            node = path.removesuffix(".html")
            query = self.request.query + (f"&node={node}" if NODE_RE.match(node) and node != "index" else "")
            self.redirect(f"../app?{query.lstrip('&')}")
            return
        await super().get(f"{KEY}/{path}", include_body)

    def set_extra_headers(self, path: str) -> None:
        # Pages are revalidated (a new recording replaces them); the libraries carry versions.
        if path.endswith(".html") or path.endswith("/"):
            self.set_header("Cache-Control", "no-cache")


class LessonStatus(RequestHandler):
    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.write(json.dumps({"ready": cache.ready(k=KEY) is not None, "key": KEY}))


class LessonLive(RequestHandler):
    """`/lesson-live?node=...&<its link>[&act=...]`: one more branch for the page's player, run by
    this process's engine one request at a time (beside the event loop); a busy answer past a
    few waiting."""

    async def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        folder = cache.ready(k=KEY)
        if folder is None:
            self._send(503, live._gz({"ok": False, "message": "The server is still recording the lesson: try again in a minute."}))
            return
        global _WAITING
        with _WAITING_LOCK:
            if _WAITING >= MAX_WAITING:
                busy = True
            else:
                busy, _WAITING = False, _WAITING + 1
        if busy:
            self._send(503, live._gz({"ok": False, "message": "The server is busy right now: try again in a moment."}))
            return
        try:
            status, body = await asyncio.get_running_loop().run_in_executor(_ENGINE, _service(folder).answer,
                                                                           self.request.query)
        finally:
            with _WAITING_LOCK:
                _WAITING -= 1
        self._send(status, body)

    def _send(self, status: int, gz: bytes) -> None:
        self.set_status(status)
        if "gzip" in self.request.headers.get("Accept-Encoding", ""):
            self.set_header("Content-Encoding", "gzip")
            self.write(gz)
        else:
            self.write(live.gzip.decompress(gz))


MAX_WAITING = 24  # requests queued for this process's engine before a busy answer
_WAITING = 0
_WAITING_LOCK = threading.Lock()
_ENGINE = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvviz-live")  # (one at a time: one engine)
_SERVICES: dict[str, live.Service] = {}


def _service(folder) -> live.Service:
    from kvviz.export.recipes import recipes

    with _WAITING_LOCK:
        if str(folder) not in _SERVICES:
            _SERVICES[str(folder)] = live.Service(folder, recipes())
        return _SERVICES[str(folder)]


ROUTES = [
    (r"/", LessonRoot, {}),
    (r"/lesson/(.*)", LessonFiles, {}),
    (r"/lesson-status", LessonStatus, {}),
    (r"/lesson-handin", HandInHandler, {}),  # (a hand-in from the recorded lesson, in one request)
    (r"/lesson-live", LessonLive, {}),  # (what no recording holds, run here, played in the page)
]

# (None when this code's recording is there already, or KVVIZ_RECORDINGS=off: a server for tests
# that need no recording; / then always opens the live lesson until one is made)
RECORDER = None if os.environ.get("KVVIZ_RECORDINGS") == "off" else cache.start_in_background()


def _warm_when_recorded(poll_s: float = 2.0, give_up_s: float = 3600) -> None:
    """Once the recording is there: build this process's frames (the nodes' views on its own
    engine: a few seconds), on the engine's thread, so that the first question does not wait."""
    import time

    deadline = time.monotonic() + give_up_s
    while (folder := cache.ready(k=KEY)) is None:
        if time.monotonic() > deadline:
            return
        time.sleep(poll_s)
    _ENGINE.submit(_service(folder).warm)


if os.environ.get("KVVIZ_RECORDINGS") != "off":
    threading.Thread(target=_warm_when_recorded, name="kvviz-live-warm", daemon=True).start()
