"""The served lesson's routes: `panel serve app.py teacher.py --plugins kvviz.serve.routes`.

    /                 the lesson: the recordings of this server's engine (/lesson/), played in the
                      browser; until they are made (a minute after the first start), the live /app
    /?node=paging     one node (/lesson/paging.html), with any state from its link
    /?node=explain    the whole lesson at Explain it back (/lesson/#explain), with the link's state
    /lesson/...       the recorded pages and their libraries, as static, cacheable files
    /lesson-status    JSON: whether the recordings are ready, and their key
    /lesson-handin    POST: a hand-in from the recorded lesson (kvviz/handin/endpoint.py)
    /lesson-report    POST: where a student's page is, for the teacher's roster
    /lesson-class     GET: the class state every page polls (paused, pace, follow me); POST: the
                      teacher's command, with the passphrase (kvviz/handin/class_endpoint.py)
    /lesson-live      GET: what no recording holds (a typed question, Release oldest...), run by
                      this process's engine and answered as one more branch to play
                      (kvviz/serve/live.py); a client asking too fast: 429, "slow down"
                      (kvviz/process/throttle.py, as /lesson-handin)

Importing this module does nothing more: `start()` begins the recording (`python -m
kvviz.export.cache`, by kvviz/export/cache_folder.py: never imported here) in a child process
if this code has none yet, at the server's start (Panel's `--setup on_start.py`,
which the launchers pass) or else at its first request. Scripted actions on the recorded pages never reach the
server; what no recording holds runs on this server's engine: a typed prompt or question, Release oldest, Fill
the pool (/lesson-live, played in the page); Explain it back and node 04 (live at /app).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import torch
from tornado.ioloop import IOLoop
from tornado.web import RequestHandler, StaticFileHandler

from kvviz.export import cache_folder
from kvviz.handin.class_endpoint import ClassHandler, ReportHandler
from kvviz.handin.endpoint import HandInHandler
from kvviz.nodes import KEYS as NODE_KEYS
from kvviz.nodes.radix.class_cache import class_cache, question_in
from kvviz.process import metrics, throttle
from kvviz.serve import live
from kvviz.timeline import MEMO

NODE_RE = re.compile(r"^[a-z]{1,20}$")


def _recorded_nodes(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.html") if p.stem != "index"}


class LessonRoot(RequestHandler):
    """`/`: the recorded lesson when it is ready, else the live one; a link's state goes along."""

    def get(self) -> None:
        start()
        args = [(k, v) for k, vs in self.request.query_arguments.items() for v in vs]
        query = urlencode([(k, v.decode("utf-8", "replace")) for k, v in args])
        folder = cache_folder.ready(k=cache_folder.served_key())
        node = self.get_query_argument("node", "")
        if folder is not None and node == "explain":  # (Explain it back is on the whole lesson's page: there)
            rest = urlencode([(k, v) for k, v in parse_qsl(query) if k != "node"])
            self.redirect(f"lesson/?{rest}#explain" if rest else "lesson/#explain")
            return
        if folder is None or (node and node not in _recorded_nodes(folder)):
            self.redirect(f"app?{query}" if query else "app")
            return
        page = f"{node}.html" if node else ""
        self.redirect(f"lesson/{page}?{query}" if query else f"lesson/{page}")


class LessonFiles(StaticFileHandler):
    """`/lesson/<path>`: a file of the finished recording (before it is ready: the live lesson)."""

    def initialize(self, path: str = "", default_filename: str | None = "index.html",
                   allowed_symlink_directory: str | list[str] | None = None) -> None:
        """The files under the cache's folder (`path`, when a route names none)."""
        super().initialize(path=path or str(cache_folder.cache_root()), default_filename=default_filename,
                           allowed_symlink_directory=allowed_symlink_directory)

    async def get(self, path: str, include_body: bool = True) -> None:
        start()
        if cache_folder.ready(k=cache_folder.served_key()) is None:
            node = path.removesuffix(".html")
            query = self.request.query + (f"&node={node}" if NODE_RE.match(node) and node != "index" else "")
            self.redirect(f"../app?{query.lstrip('&')}")
            return
        await super().get(f"{cache_folder.served_key()}/{path}", include_body)

    def set_extra_headers(self, path: str) -> None:
        # Pages are revalidated (a new recording replaces them); the libraries carry versions.
        if path.endswith(".html") or path.endswith("/"):
            self.set_header("Cache-Control", "no-cache")


class LessonStatus(RequestHandler):
    def get(self) -> None:
        start()
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        folder = cache_folder.ready(k=cache_folder.served_key())
        # warm: this process's engine is ready for what no recording holds (its frames built)
        warm = folder is not None and str(folder) in _SERVICES and _SERVICES[str(folder)].warmed()
        # (the recording in progress)
        facts = None if folder is not None else cache_folder.progress(k=cache_folder.served_key())
        self.write(json.dumps({"ready": folder is not None, "key": cache_folder.served_key(), "warm": warm,
                               "progress": facts}))


class LessonLive(RequestHandler):
    """`/lesson-live?node=...&<its link>[&act=...]`: one more branch for the page's player, run by
    this process's engine on its one answering thread (`ANSWERING`: one branch at a time, a few
    hundred milliseconds each), so that the event loop goes on serving pages, hand-ins and
    status meanwhile. A client asking faster than kvviz/process/throttle.py allows is answered
    429 at once, with nothing computed."""

    async def get(self) -> None:
        if throttle.refused(self, throttle.LIVE, throttle.SLOW_DOWN):
            return
        start()
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        folder = cache_folder.ready(k=cache_folder.served_key())
        if folder is None:
            status, body, compute = 503, live.gz({"ok": False,
                                                  "message": "The server is still recording the lesson: try "
                                                             "again in a minute."}), 0.0
        else:
            _CLASS_QUESTIONS.waiting += 1
            try:
                status, body, compute = await IOLoop.current().run_in_executor(ANSWERING, _answer, folder,
                                                                               self.request.query)
            finally:
                _CLASS_QUESTIONS.waiting -= 1
            pairs = parse_qsl(self.request.query)
            asked = question_in(pairs) if status == 200 and ("node", "radix") in pairs else None
            _CLASS_QUESTIONS.answered(asked)
        # (seen in a browser's developer tools, and by benchmarks.classroom: where the time
        # went; wait: in this server before its answer began, behind other answers)
        waited = max(0.0, self.request.request_time() - compute)
        self.set_header("Server-Timing", f"wait;dur={waited * 1000:.1f}, compute;dur={compute * 1000:.1f}")
        self.set_status(status)
        if "gzip" in self.request.headers.get("Accept-Encoding", ""):
            self.set_header("Content-Encoding", "gzip")
            self.write(body)
        else:
            self.write(gzip.decompress(body))


# The one thread of this process that runs its live frames (building them, answering): Panel's and
# Bokeh's models are not for two threads at once, and the frames of all nodes share one document.
ANSWERING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvviz-live")


def _answer(folder: Path, query: str) -> tuple[int, bytes, float]:
    started = time.perf_counter()
    status, body = _service(folder).answer(query)
    return status, body, time.perf_counter() - started


class _ClassQuestions:
    """The questions answered in node 03, for the class's own cache (the teacher's projector:
    kvviz/nodes/radix/class_cache.py). They are asked of it on the answering thread once no
    student's answer waits (or once `BATCH` have gathered), all together: one batched run for a
    class that pressed Enter at once, and never a student's answer behind the projector's. (The
    counts are the event loop's own: it alone changes them.)"""

    BATCH = 16

    def __init__(self) -> None:
        self.waiting = 0  # answers asked of the answering thread and not yet back
        self.pending: list[str] = []

    def answered(self, question: str | None) -> None:
        """After an answer (`question`: the one it asked in node 03, if any)."""
        if question:
            self.pending.append(question)
        if self.pending and (self.waiting == 0 or len(self.pending) >= self.BATCH):
            questions, self.pending = self.pending, []
            ANSWERING.submit(lambda: class_cache().ask_all(questions))


_CLASS_QUESTIONS = _ClassQuestions()


_SERVICES: dict[str, live.Service] = {}


def _service(folder: Path) -> live.Service:
    from kvviz.export.recipes import recipes

    if str(folder) not in _SERVICES:
        _SERVICES[str(folder)] = live.Service(folder, recipes())
    return _SERVICES[str(folder)]


ROUTES = [
    (r"/", LessonRoot, {}),
    (r"/lesson/(.*)", LessonFiles, {}),
    (r"/lesson-status", LessonStatus, {}),
    (r"/lesson-handin", HandInHandler, {}),  # (a hand-in from the recorded lesson, in one request)
    (r"/lesson-report", ReportHandler, {"nodes": NODE_KEYS}),  # (the roster: where a student's page is)
    (r"/lesson-class", ClassHandler, {"nodes": NODE_KEYS}),  # (pause, pace, follow me: polled; the teacher's)
    (r"/lesson-live", LessonLive, {}),  # (what no recording holds, run here, played in the page)
]

_STARTED = threading.Lock()
# (the recording's child process, once started; None when it was there already)
RECORDER: list[subprocess.Popen[bytes] | None] = []


def start() -> None:
    """What a server of these routes runs once, at its start (Panel's `--setup`:
    on_start.py, which the launchers pass) or else at its first request: the
    recording in a child process unless this code's is there (or KVVIZ_RECORDINGS=off, a server for
    tests that need none: / then opens the live lesson until one is made), and a thread that builds
    this process's live frames once it is. Nothing of it happens at import."""
    if not _STARTED.acquire(blocking=False):
        return  # (started already, or starting)
    # This server's engines (live answers, each /app session's) compute on one thread each: a model
    # this small gains nothing from more, threads that wait for each other under load cost 4x (a live
    # answer 0.35 s on one thread, 1.5 s on two with other work running), and a class server runs a
    # backend per core.
    torch.set_num_threads(1)
    metrics.serve(MEMO)  # (the status page reads this backend from its start, before any student)
    if os.environ.get("KVVIZ_RECORDINGS") == "off":
        return
    RECORDER.append(cache_folder.start_in_background())
    threading.Thread(target=_warm_when_recorded, name="kvviz-live-warm", daemon=True).start()


def _warm_when_recorded(poll_s: float = 2.0, give_up_s: float = 3600) -> None:
    """Once the recording is there: build this process's frames (each node's view on its own
    engine: a second or two each), one node per turn of the event loop, so that the first
    question does not wait for them."""
    deadline = time.monotonic() + give_up_s
    while (folder := cache_folder.ready(k=cache_folder.served_key())) is None:
        if time.monotonic() > deadline:
            return
        time.sleep(poll_s)
    for key in live.Service.recorded_nodes(folder):
        ANSWERING.submit(_warm, folder, key)  # (between answers, on their thread)


def _warm(folder: Path, key: str) -> None:
    _service(folder).warm(key)

