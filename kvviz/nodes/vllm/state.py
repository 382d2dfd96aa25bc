"""Node 04's state: the student's requests to vLLM, our engine serving the same ones, and the
latest picture of vLLM's cache (param only, no Panel): live when a vLLM answers, else the
recording in assets/ (shipped.py), played through the watcher's own code (vllm_watch/),
with vLLM's recorded answers and our engine serving the same questions.

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
import time

import param

from engine import Snapshot
from kvviz import formatting as fmt
from kvviz.nodes.prompts import MORE_QUESTIONS
from kvviz.nodes.vllm import shipped
from kvviz.nodes.vllm.scenario import LESSON_QUESTIONS, MAX_NEW_TOKENS, Exchange, Mirror, prompt_for
from vllm_watch import client, monitor
from vllm_watch.playback import Played
from vllm_watch.snapshot import Endpoints, VllmSnapshot

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
    live = param.ClassSelector(class_=VllmSnapshot, default=None,
                               doc="vLLM's cache and metrics shown: the live server's, else the recording's")
    server = param.ClassSelector(class_=VllmSnapshot, default=None,
                                 doc="the watcher's latest (the live server)")
    recording = param.ClassSelector(class_=Played, default=None,
                                    doc="the recorded session, when no vLLM answers")
    recording_error = param.String(default="", doc="why no recording could be played")
    replaying = param.Boolean(default=False, doc="the recording is being replayed from its start")
    ours = param.ClassSelector(class_=Snapshot, default=None, doc="our engine after the same requests")
    our_hashes = param.Dict(default={}, doc="our radix blocks -> vLLM's hash for the same tokens")
    exchanges = param.List(default=[], item_type=Exchange, doc="the requests sent, oldest first")
    notice = param.String(default="")
    batch_updates = param.Callable(default=contextlib.nullcontext, precedence=-1)

    def __init__(self, endpoints: Endpoints | None = None, **params):
        super().__init__(**params)
        self._endpoints = endpoints
        self._monitor: monitor.Monitor | None = None
        self._mirror: Mirror | None = None
        self._pending: dict[int, concurrent.futures.Future] = {}  # index in exchanges -> vLLM's answer
        self._side: dict[str, dict] = {}  # "live" / "recording" -> the exchanges and our engine's side
        self._mode: str | None = None
        self._replay_from: float | None = None
        # our engine serving the recorded questions
        self._ours_recorded: concurrent.futures.Future | None = None
        self._ours_shown = False
        self.clock = time.monotonic

    # -- connecting -----------------------------------------------------------------------------
    def attach(self) -> monitor.Monitor:
        """Start (once per process) the watcher of vLLM, and show its latest picture (or the
        recording while no vLLM answers)."""
        if self._monitor is None:
            self._monitor = monitor.shared(self._endpoints).start()
            played = shipped.shipped()
            if isinstance(played, Played):
                self.recording = played
            else:
                self.recording_error = str(played)
            self._show(self._monitor.latest())
        return self._monitor

    @property
    def connected(self) -> bool:
        return self.live is not None and self.live.status == "connected"

    def _show(self, server: VllmSnapshot) -> None:
        """Show the live server when it is connected, else the recording (its step in a replay)."""
        mode = "live" if server.status == "connected" or self.recording is None else "recording"
        if mode == "live":
            live = server
        elif self._replay_from is not None:
            elapsed = self.clock() - self._replay_from
            live = self.recording.at(elapsed)
            if elapsed > self.recording.steps[-1][0]:
                self._replay_from = None
        else:
            live = self.recording.last
        extra = self._swap(mode) if mode != self._mode else {}
        with self.batch_updates():
            self.param.update(server=server, live=live, replaying=self._replay_from is not None, **extra)
        self._recorded_served()

    def _swap(self, mode: str) -> dict:
        """Each mode keeps its own requests: the live ones, or the recorded ones with our engine's."""
        if self._mode is not None:
            self._side[self._mode] = {"exchanges": self.exchanges, "ours": self.ours,
                                      "our_hashes": self.our_hashes}
        self._mode = mode
        if mode == "recording" and self._ours_recorded is None:
            self._ours_recorded = recorded_side(self.recording)
            self._side[mode] = vllm_only(self.recording)
        return self._side.get(mode, {"exchanges": [], "ours": None, "our_hashes": {}})

    def _recorded_served(self) -> bool:
        """Our engine has served the recording's questions (on the pool) since it was shown: show it."""
        f = self._ours_recorded
        if f is None or not f.done() or self._ours_shown:
            return False
        self._ours_shown = True
        try:
            self._side["recording"] = f.result()
        except Exception as e:  # (our engine failing is a bug: said in the node, not hidden)
            self.notice = f"kvviz's engine could not serve the recorded questions: {e}"
            return True
        if self._mode == "recording":
            self.param.update(**self._side["recording"])
        return True

    def replay(self) -> bool:
        """Play the recording again from its start, at the pace it was recorded."""
        self.attach()
        if self.connected or self.recording is None:
            return False
        self._replay_from = self.clock()
        self._show(self.server)
        return True

    # -- the recording, one snapshot at a time: the static export (kvviz/nodes/vllm/exported.py) --
    static = False  # shown in a static page: no vLLM can replace the recording there
    step_count = 0  # the recorded snapshot shown by show_recorded

    def show_recorded(self, step: int | None = None) -> None:
        """Show the recording whatever vLLM does, at its `step`-th snapshot (None: its last), with
        the recorded requests and our engine serving them (computed first: it waits for them).
        A snapshot before the last is shown as the live node shows it in a replay."""
        if self.recording is None:
            raise RuntimeError(f"no recording to show: {self.recording_error}")
        last = len(self.recording.steps) - 1
        self.static, self.step_count = True, last if step is None else max(0, min(step, last))
        if self._mode != "recording" or not self._ours_shown:
            self._side["recording"] = recorded_side(self.recording).result()
            self._mode, self._ours_shown = "recording", True
        with self.batch_updates():
            self.param.update(server=None, live=self.recording.steps[self.step_count][1], notice="",
                              replaying=self.step_count < last, **self._side["recording"])

    def step_back(self) -> bool:
        """The recorded snapshot before the one shown (False at the first)."""
        if self.step_count == 0:
            return False
        self.show_recorded(self.step_count - 1)
        return True

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
            self.notice = ("No vLLM answers now, so questions cannot be sent: what is shown is a recording. "
                           "When a vLLM runs, this node connects to it by itself.")
            return False
        if len(self._pending) + len(questions) > MAX_PENDING:
            self.notice = "Wait for your requests in flight to finish before sending more."
            return False
        url, model = snap.endpoints.url, snap.model
        exchanges = list(self.exchanges)
        for q in questions:
            self._pending[len(exchanges)] = _pool().submit(client.complete, url, model, prompt_for(q),
                                                           MAX_NEW_TOKENS)
            exchanges.append(Exchange(question=q))
        n = len(questions)
        self._publish(exchanges,
                      f"Sent {n} request{'s' if n > 1 else ''} to vLLM; the cache below follows its "
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
        changed = latest is not None and (latest is not self.server or self._replay_from is not None)
        if changed:
            self._show(latest)
        changed |= self._recorded_served()
        if not done:
            return changed
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
        self._publish(exchanges, self._summary(exchanges, answered))
        return True

    def _serve_ours(self, exchanges: list[Exchange], indices: list[int]) -> None:
        if self._mirror is None:
            self._mirror = Mirror()
        results = self._mirror.serve([prompt_for(exchanges[i].question) for i in indices])
        decode = self._mirror.engine.tokenizer.decode
        for i, (ids, cached) in zip(indices, results, strict=True):
            e = exchanges[i]
            exchanges[i] = Exchange(e.question, e.vllm_ids, e.vllm_text, e.vllm_cached, tuple(ids),
                                    decode(ids), cached)
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


_RECORDED_SIDE: dict[int, tuple[Played, concurrent.futures.Future]] = {}
_RECORDED_LOCK = threading.Lock()


def recorded_side(played: Played) -> concurrent.futures.Future:
    """The recording's requests (a future of the dict `_swap` shows): vLLM's recorded answers,
    and our engine serving the same questions in the same groups. Computed once per process on
    the request pool (it takes our engine seconds), then shared: immutable."""
    with _RECORDED_LOCK:
        if id(played) not in _RECORDED_SIDE:
            _RECORDED_SIDE[id(played)] = (played, _pool().submit(_serve_recorded, played))
        return _RECORDED_SIDE[id(played)][1]


def vllm_only(played: Played) -> dict:
    """The recording's requests before our engine has served them: vLLM's side only."""
    return {"exchanges": [Exchange(e.question, e.token_ids, e.text, e.cached_tokens)
                          for e in played.recording.exchanges],
            "ours": None, "our_hashes": {}}


def _serve_recorded(played: Played) -> dict:
    mirror, rec = Mirror(), played.recording
    exchanges = []
    for g in sorted({e.group for e in rec.exchanges}):
        group = [e for e in rec.exchanges if e.group == g]
        results = mirror.serve([prompt_for(e.question) for e in group], rec.max_new_tokens)
        for e, (ids, cached) in zip(group, results, strict=True):
            exchanges.append(Exchange(e.question, e.token_ids, e.text, e.cached_tokens, tuple(ids),
                                      mirror.engine.tokenizer.decode(ids), cached))
    return {"exchanges": exchanges, "ours": mirror.snapshot(), "our_hashes": mirror.block_hashes()}
