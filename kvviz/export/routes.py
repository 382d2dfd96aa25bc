"""The served lesson's routes: `panel serve app.py teacher.py --plugins kvviz.export.routes`.

    /                 the lesson: the recordings of this server's engine (/lesson/), played in the
                      browser; until they are made (a minute after the first start), the live /app
    /?node=paging     one node (/lesson/paging.html), with any state from its link
    /lesson/...       the recorded pages and their libraries, as static, cacheable files
    /lesson-status    JSON: whether the recordings are ready, and their key
    /lesson-handin    POST: a hand-in from the recorded lesson (kvviz/handin/endpoint.py)

Importing this module starts the recording (kvviz/export/cache.py) in a child process if this
code has none yet. Scripted actions on the recorded pages never reach the server; what no
recording holds (a typed prompt, Fill the pool, Explain it back, node 04) runs live at /app.
"""

from __future__ import annotations

import json
import os
import re
from urllib.parse import urlencode

from tornado.web import RequestHandler, StaticFileHandler

from kvviz.export import cache
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


ROUTES = [
    (r"/", LessonRoot, {}),
    (r"/lesson/(.*)", LessonFiles, {}),
    (r"/lesson-status", LessonStatus, {}),
    (r"/lesson-handin", HandInHandler, {}),  # (a hand-in from the recorded lesson, in one request)
]

# (None when this code's recording is there already, or KVVIZ_RECORDINGS=off: a server for tests
# that need no recording; / then always opens the live lesson until one is made)
RECORDER = None if os.environ.get("KVVIZ_RECORDINGS") == "off" else cache.start_in_background()
