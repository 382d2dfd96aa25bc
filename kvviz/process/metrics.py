"""What a class server's status page reads from each backend process: sessions, pages, nodes built
and the timeline memo, as Prometheus metrics (prometheus_client).

`serve(MEMO)` runs once per process, at a server's start (kvviz/serve/routes.py `start`): when
`KVVIZ_METRICS_PORT` is set (deploy/class_server.py gives each backend its own), it serves the
metrics on 127.0.0.1 at that port. `install(MEMO)` runs for every session (app.py calls it,
handing in the timeline memo): it counts the session, and when the session is destroyed (and
serves the metrics, if the server did not). Nothing here is per student: counts only.
"""

from __future__ import annotations

import os
import threading
import weakref

import panel as pn
from prometheus_client import REGISTRY, Counter, Gauge, start_http_server
from prometheus_client.core import GaugeMetricFamily

from kvviz.process import memory

SESSIONS = Gauge("kvviz_sessions", "Browser sessions this process holds now")
PAGES = Counter("kvviz_pages_built", "Pages built (one per session)")
NODES = Counter("kvviz_nodes_built", "Lesson nodes built when a student scrolled to them", ["node"])

_installed = False
_lock = threading.Lock()
# every Lesson still in memory (a destroyed session's should go)
_lessons: weakref.WeakSet = weakref.WeakSet()


class _MemoCollector:
    """The timeline memo's size and its hits and misses (any object with `len`, `hits` and
    `misses`: the page hands in kvviz.timeline.MEMO), read when scraped."""

    def __init__(self, memo=None):
        self.memo = memo

    def collect(self):
        if (memo := self.memo) is not None:
            yield GaugeMetricFamily("kvviz_memo_states", "States kept in the timeline memo", value=len(memo))
            yield GaugeMetricFamily("kvviz_memo_hits", "Operations read from the timeline memo",
                                    value=memo.hits)
            yield GaugeMetricFamily("kvviz_memo_misses", "Operations the engine had to run",
                                    value=memo.misses)
        yield GaugeMetricFamily("kvviz_lessons_alive",
                                "Sessions' lessons still in memory (destroyed ones included "
                                "until collected)", value=len(_lessons))


def metrics_port(environ=os.environ) -> int | None:
    text = environ.get("KVVIZ_METRICS_PORT", "")
    if text.isascii() and text.isdigit() and 1024 <= int(text) <= 65535:
        return int(text)
    return None


def track(lesson) -> None:
    """Count `lesson` as alive until it is garbage: beside `kvviz_sessions` it shows whether a
    destroyed session's lesson is really let go."""
    _lessons.add(lesson)


def serve(memo=None) -> None:
    """Set up this process's metrics, once: the memo's collector and, when `KVVIZ_METRICS_PORT` is
    set, their HTTP server. A server runs it at its start (kvviz/serve/routes.py `start`), so that
    the status page reads a backend no student has reached yet (else its first session does: a
    backend that nginx had passed over, while it was slow to answer, said nothing until then);
    `memo`: the timeline memo whose size, hits and misses it reports (kvviz.timeline.MEMO)."""
    global _installed
    with _lock:
        first, _installed = not _installed, True
    if first:
        REGISTRY.register(_MemoCollector(memo))
        if (port := metrics_port()) is not None:
            start_http_server(port, addr="127.0.0.1")


def install(memo=None) -> None:
    """Count this session (and `serve(memo)` the first time, if the server did not)."""
    serve(memo)
    SESSIONS.inc()
    PAGES.inc()
    pn.state.on_session_destroyed(_destroyed)  # (this session's document)


def _destroyed(_ctx) -> None:
    SESSIONS.dec()
    memory.give_back()
