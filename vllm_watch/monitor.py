"""The watcher: one ZeroMQ subscription to a vLLM's KV events and one scrape of its /metrics a
second, in one daemon thread, publishing immutable `VllmSnapshot`s (snapshot.py). Readers never
run on its thread: each reads the latest snapshot on its own timer (`latest()`). `shared()` keeps
one watcher per server and process, however many readers (node 04 builds one view per student,
and 40 students must not open 40 subscriptions); it starts on `start()`, not when made.

Gaps are repaired: the first batch seen, a jump in sequence numbers, or a restarted server
(its `process_start_time_seconds` changed) makes the watcher ask vLLM's replay socket for the
batches it missed (vLLM keeps the last 10,000). A server that stops answering is reported as
disconnected, and picked up again, its cache rebuilt, when it comes back.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable

import zmq

from vllm_watch.cache_tree import CacheTree
from vllm_watch.client import fetch_metrics, served_model
from vllm_watch.metrics import VllmMetrics
from vllm_watch.snapshot import Endpoints, Sample, VllmSnapshot
from vllm_watch.wire import EventBatch, decode_frames

SCRAPE_S = 1.0  # /metrics period
HISTORY = 600  # samples kept for the plots: one per change of the metrics, at least every HEARTBEAT_S
HEARTBEAT_S = 5.0
REPLAY_TIMEOUT_MS = 2000
THREAD_NAME = "vllm-watch"


class Monitor:
    scrape_s = SCRAPE_S  # (a recorder scrapes more often, to catch requests while they run)

    def __init__(self, endpoints: Endpoints) -> None:
        self.endpoints = endpoints
        self._tree = CacheTree()
        self._history: collections.deque[Sample] = collections.deque(maxlen=HISTORY)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._status, self._since, self._restarts = "waiting", self._now(), 0
        self._model: str | None = None
        self._metrics: VllmMetrics | None = None
        self._last_seq: int | None = None
        self._start_time: float | None = None
        self._version = 0
        self._snapshot = self._build()

    # -- for readers --------------------------------------------------------------------------
    def start(self) -> Monitor:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
                self._thread.start()
        return self

    def latest(self) -> VllmSnapshot:
        return self._snapshot

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def wait_for(self, predicate: Callable[[VllmSnapshot], bool], timeout: float = 30.0) -> VllmSnapshot:
        """Block until `predicate(snapshot)` holds (tests, benchmarks); TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        while not predicate(snap := self._snapshot):
            if time.monotonic() > deadline:
                raise TimeoutError(f"vLLM watcher: condition not met in {timeout} s (status {snap.status})")
            time.sleep(0.05)
        return snap

    # -- the thread -----------------------------------------------------------------------------
    def _run(self) -> None:
        ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        sub = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.setsockopt(zmq.LINGER, 0)
        sub.connect(self.endpoints.events)
        next_scrape = 0.0
        try:
            while not self._stop.is_set():
                changed = False
                if sub.poll(min(100, int(1000 * self.scrape_s))):
                    while sub.poll(0):
                        changed |= self._on_frames(sub.recv_multipart())
                if time.monotonic() >= next_scrape:
                    next_scrape = time.monotonic() + self.scrape_s
                    changed |= self._scrape()
                if changed:
                    self._publish()
        finally:
            sub.close()

    # -- what the watcher reads (a playback replaces these: playback.py; a recorder keeps them) ---
    def _now(self) -> float:
        return time.time()

    def _fetch_metrics(self) -> VllmMetrics:
        return fetch_metrics(self.endpoints.url)

    def _fetch_model(self) -> str:
        return served_model(self.endpoints.url)

    def _received(self, frames: list[bytes]) -> None:
        """Every KV-event message as it arrived (subscription or replay); a recorder keeps them."""

    def _scrape(self) -> bool:
        try:
            m = self._fetch_metrics()
            start = m.start_time
            if self._model is None or start != self._start_time:
                self._model = self._fetch_model()
        except (OSError, ValueError, KeyError, IndexError):
            if self._status == "connected":
                self._status, self._since = "disconnected", self._now()
                return True
            return False
        if self._start_time is not None and start != self._start_time:
            self._restarts += 1
            self._reset_cache()
        fresh = self._status != "connected"
        changed = fresh or m != self._metrics
        self._start_time, self._metrics = start, m
        if fresh:
            self._status, self._since = "connected", self._now()
            self._catch_up()
        now = self._now()
        if changed or not self._history or now - self._history[-1].t >= HEARTBEAT_S:
            self._history.append(Sample(now, m.kv_usage, m.hit_rate, m.running, m.waiting, m.preemptions))
            return True
        return False

    def _reset_cache(self) -> None:
        self._tree.clear()
        self._last_seq = None

    def _on_frames(self, frames: list[bytes]) -> bool:
        self._received(frames)
        try:
            batch = decode_frames(frames)
        except ValueError:
            return False  # (not a KV-event message: ignored)
        if self._last_seq is not None and batch.seq <= self._last_seq:
            self._reset_cache()  # numbering started again: a new server, an empty cache
        if self._last_seq is None or batch.seq > self._last_seq + 1:
            self._catch_up()  # the first batch, or batches were missed: ask for them
        self._apply(batch)
        return True

    def _catch_up(self) -> None:
        """Apply the batches after the last one applied, from vLLM's replay socket."""
        start = 0 if self._last_seq is None else self._last_seq + 1
        for batch in self._replay(start):
            self._apply(batch)

    def _replay(self, start: int) -> list[EventBatch]:
        ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.RCVTIMEO, REPLAY_TIMEOUT_MS)
        out: list[EventBatch] = []
        try:
            sock.connect(self.endpoints.replay)
            sock.send_multipart([b"", start.to_bytes(8, "big")])
            while True:
                frames = sock.recv_multipart()[1:]  # (the empty delimiter first)
                if len(frames) != 3 or int.from_bytes(frames[1], "big", signed=True) < 0:
                    return out
                self._received(frames)
                out.append(decode_frames(frames))
        except (zmq.ZMQError, ValueError):
            return out  # no replay socket, or it went away: the tree starts from what arrives
        finally:
            sock.close()

    def _apply(self, batch: EventBatch) -> None:
        if self._last_seq is not None and batch.seq <= self._last_seq:
            return  # already applied
        self._tree.apply(batch)
        self._last_seq = batch.seq

    def _build(self) -> VllmSnapshot:
        return VllmSnapshot(self._version, self._status, self.endpoints, self._model, self._metrics,
                            self._tree.view(), tuple(self._history), self._last_seq, self._since,
                            self._restarts)

    def _publish(self) -> None:
        self._version += 1
        self._snapshot = self._build()


_SHARED: dict[Endpoints, Monitor] = {}
_SHARED_LOCK = threading.Lock()


def shared(endpoints: Endpoints | None = None) -> Monitor:
    """The process's one watcher of these endpoints (default: `Endpoints()`, from the environment
    or `make vllm`'s). Not started: call `.start()`."""
    endpoints = endpoints or Endpoints()
    with _SHARED_LOCK:
        if endpoints not in _SHARED:
            _SHARED[endpoints] = Monitor(endpoints)
        return _SHARED[endpoints]
