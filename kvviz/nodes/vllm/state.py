"""Node 04's state: the student's requests to vLLM, our engine serving the same ones, and the
latest picture of vLLM's cache (param only, no Panel).

Cheap to build (the lesson builds every node's state for every session): nothing connects, no
thread starts and no engine is made until the view is built (`attach`) or a request is sent.
Requests go to vLLM on a small process-wide thread pool, so a click never waits for vLLM; `poll()`
(the view's timer, or a test) collects the answers, serves the same prompts with our engine and
reads the shared watcher's latest snapshot.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading

import param

from engine import Snapshot
from kvviz import formatting as fmt
from kvviz.nodes.radix.scenario import MORE_QUESTIONS
from kvviz.nodes.vllm import client, monitor
from kvviz.nodes.vllm.monitor import VllmSnapshot
from kvviz.nodes.vllm.scenario import LESSON_QUESTIONS, MAX_NEW_TOKENS, Exchange, Mirror, prompt_for

MAX_EXCHANGES = 12  # requests listed (the oldest drop off)
MAX_PENDING = 8  # a session's requests in flight at once
_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="kvviz-vllm-send")
        return _POOL


class VllmState(param.Parameterized):
    key = "vllm"

    prompt = param.String(default=MORE_QUESTIONS[0], label="Your question",
                          doc="sent to vLLM after node 03's shared system prompt")
    live = param.ClassSelector(class_=VllmSnapshot, default=None, doc="vLLM's cache and metrics, latest")
    ours = param.ClassSelector(class_=Snapshot, default=None, doc="our engine after the same requests")
    our_hashes = param.Dict(default={}, doc="our radix blocks -> vLLM's hash for the same tokens")
    exchanges = param.List(default=[], item_type=Exchange, doc="the requests sent, oldest first")
    notice = param.String(default="")
    batch_updates = param.Callable(default=contextlib.nullcontext, precedence=-1)

    def __init__(self, endpoints: monitor.Endpoints | None = None, **params):
        super().__init__(**params)
        self._endpoints = endpoints
        self._monitor: monitor.Monitor | None = None
        self._mirror: Mirror | None = None
        self._pending: dict[int, concurrent.futures.Future] = {}  # index in exchanges -> vLLM's answer

    # -- connecting -----------------------------------------------------------------------------
    def attach(self) -> monitor.Monitor:
        """Start (once per process) the watcher of vLLM, and show its latest picture."""
        if self._monitor is None:
            self._monitor = monitor.shared(self._endpoints).start()
            self.live = self._monitor.latest()
        return self._monitor

    @property
    def connected(self) -> bool:
        return self.live is not None and self.live.status == "connected"

    # -- sending --------------------------------------------------------------------------------
    def send(self, question: str | None = None) -> bool:
        """Send one question (default: the prompt box) to vLLM, after the shared system prompt."""
        question = self.prompt if question is None else question
        if why := fmt.check_prompt(question):
            self.notice = why
            return False
        return self._send([question])

    def send_lesson_questions(self) -> bool:
        """Node 03's four questions at once: vLLM batches them, and they share the system prompt."""
        return self._send(list(LESSON_QUESTIONS))

    def _send(self, questions: list[str]) -> bool:
        mon = self.attach()
        snap = mon.latest()
        if snap.status != "connected" or not snap.model:
            self.notice = f"No vLLM answers at {snap.endpoints.url}: start one with `make vllm`, then send again."
            return False
        if len(self._pending) + len(questions) > MAX_PENDING:
            self.notice = "Wait for your requests in flight to finish before sending more."
            return False
        url, model = snap.endpoints.url, snap.model
        exchanges = list(self.exchanges)
        for q in questions:
            self._pending[len(exchanges)] = _pool().submit(client.complete, url, model, prompt_for(q), MAX_NEW_TOKENS)
            exchanges.append(Exchange(question=q))
        n = len(questions)
        self._publish(exchanges, f"Sent {n} request{'s' if n > 1 else ''} to vLLM; the cache below follows its "
                                 "events as it computes them.", prompt=self._next_question(exchanges))
        return True

    @staticmethod
    def _next_question(exchanges) -> str:
        asked = sum(e.question in MORE_QUESTIONS for e in exchanges)
        return MORE_QUESTIONS[asked % len(MORE_QUESTIONS)]

    # -- collecting -----------------------------------------------------------------------------
    def poll(self, wait: float | None = None) -> bool:
        """Read the watcher's latest picture and collect vLLM's answers (waiting up to `wait`
        seconds for all of them); our engine then serves the answered prompts. Returns whether
        anything changed."""
        if wait is not None and self._pending:
            concurrent.futures.wait(self._pending.values(), timeout=wait)
        done = {i: f for i, f in self._pending.items() if f.done()}
        latest = self._monitor.latest() if self._monitor is not None else None
        if not done and (latest is None or latest is self.live):
            return False
        exchanges = list(self.exchanges)
        answered = []
        for i, future in done.items():
            del self._pending[i]
            try:
                c = future.result()
            except (OSError, ValueError) as e:
                exchanges[i] = Exchange(exchanges[i].question, error=f"vLLM did not answer: {e}")
                continue
            exchanges[i] = Exchange(exchanges[i].question, c.token_ids, c.text, c.cached_tokens)
            answered.append(i)
        if answered:
            self._serve_ours(exchanges, answered)
        self._publish(exchanges, self.notice if not done else self._summary(exchanges, answered), live=latest)
        return True

    def _serve_ours(self, exchanges: list[Exchange], indices: list[int]) -> None:
        if self._mirror is None:
            self._mirror = Mirror()
        results = self._mirror.serve([prompt_for(exchanges[i].question) for i in indices])
        decode = self._mirror.engine.tokenizer.decode
        for i, (ids, cached) in zip(indices, results, strict=True):
            e = exchanges[i]
            exchanges[i] = Exchange(e.question, e.vllm_ids, e.vllm_text, e.vllm_cached, tuple(ids), decode(ids), cached)
        self.param.update(ours=self._mirror.snapshot(), our_hashes=self._mirror.block_hashes())

    @staticmethod
    def _summary(exchanges: list[Exchange], answered: list[int]) -> str:
        same = sum(exchanges[i].first_divergence is None for i in answered)
        if not answered:
            return "vLLM did not answer: see the request list."
        return (f"vLLM answered {len(answered)}; our engine gave the same {MAX_NEW_TOKENS} tokens for "
                f"{same} of {len(answered)}.")

    def _publish(self, exchanges: list[Exchange], notice: str, **extra) -> None:
        drop = max(0, len(exchanges) - MAX_EXCHANGES)
        if drop and not any(i < drop for i in self._pending):
            exchanges = exchanges[drop:]
            self._pending = {i - drop: f for i, f in self._pending.items()}
        extra = {k: v for k, v in extra.items() if v is not None}
        with self.batch_updates():
            self.param.update(exchanges=exchanges, notice=notice, **extra)
