"""The class in small requests, with no Panel session (routes in kvviz/serve/routes.py):

    POST /lesson-report   a student's page says where it is (classroom.Report, JSON); its first
                          report is answered with the token its later ones carry (roster.py)
    GET  /lesson-class    the class state (paused, pace, the last "follow me"), as JSON with its
                          `tag`: what every student's page asks for; one small read per process
                          per MEMO_S, an unchanged answer a 304 (its ETag). `?since=<tag>` (the
                          state the page shows) is held until the state differs, at most HOLD_S:
                          a class's pages wait on the server instead of asking every second, so
                          a command reaches them within MEMO_S and a quiet class costs a request
                          per page per HOLD_S (Held)
    POST /lesson-class    a teacher's command (JSON `{"command", "node", "query"}`), only with the
                          passphrase (`Authorization: Bearer <passphrase>`): 403 otherwise, and
                          429 while a wrong one's wait (key.Attempts, per client address) runs

Every answer is JSON; nothing is ever rendered as HTML. The node keys a report or a command may
name are handed in (`nodes`) by the routes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections import OrderedDict

from tornado.web import RequestHandler

from kvviz.handin import class_state, roster
from kvviz.handin import key as passphrase
from kvviz.handin.classroom import MAX_REPORT, REPORT_BURST, REPORT_GAP_S, Report, ReportError
from kvviz.handin.storage import Store, StoreError, shared
from kvviz.process.throttle import TokenBucket

log = logging.getLogger("kvviz.handin")
MAX_TRACKED = 5000
MAX_COMMAND = 4000  # bytes of a command's body
_REPORTS: OrderedDict[str, TokenBucket] = OrderedDict()  # student id -> their reports' bucket (this process)
_ATTEMPTS: OrderedDict[str, passphrase.Attempts] = OrderedDict()  # client address -> wrong passphrases
MEMO = class_state.Memo()
HOLD_S = 20.0  # a poll naming the state its page shows waits this long for a change (then: unchanged)
MAX_TAG = 64


def tag(state: dict) -> str:
    """A class state's short name: equal states, equal tags."""
    text = json.dumps({k: v for k, v in state.items() if k != "tag"}, separators=(",", ":"), sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _bounded(table: OrderedDict, k: str, make):
    value = table.pop(k, None)
    table[k] = make() if value is None else value
    while len(table) > MAX_TRACKED:
        table.popitem(last=False)
    return table[k]


def _read(body: bytes, cap: int):
    if len(body) > cap:
        return 413, "That is too large to send."
    try:
        return 200, json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return 400, "That could not be read."


def report(body: bytes, nodes: tuple[str, ...], store: Store | None = None,
           clock=time.monotonic) -> tuple[int, dict]:
    """(HTTP status, JSON answer) for a student page's report."""
    status, data = _read(body, MAX_REPORT)
    if status != 200:
        return status, {"ok": False, "message": data}
    try:
        r = Report.from_json(data, nodes)
    except ReportError as e:
        return 400, {"ok": False, "message": str(e)}
    bucket = _bounded(_REPORTS, r.student_id, lambda: TokenBucket(1 / REPORT_GAP_S, REPORT_BURST, clock))
    if bucket.take() > 0:
        return 429, {"ok": False, "message": "Reported a moment ago."}
    store = store or shared()
    try:
        owner = roster.owns(store, r.student_id, data.get("token"))
        done = roster.save(store, r, time.time(), owner)
        answer = {"ok": done != "taken" and done != "full", "message": done}
        if done == "created":
            answer["token"] = roster.token(store, r.student_id)
    except StoreError:
        log.exception("saving a report")
        return 503, {"ok": False, "message": "unavailable"}
    return {"taken": 403, "full": 409}.get(done, 200), answer


def status(store: Store | None = None) -> dict:
    """The class state every student page polls, with its tag."""
    try:
        state = json.loads(MEMO.get(store or shared()).to_json())
    except StoreError:
        log.exception("reading the class state")
        state = {"paused": False, "pace": "", "follow": {"seq": 0, "node": "", "query": ""}, "unknown": True}
    return {**state, "tag": tag(state)}


class Held:
    """This process's held polls. Each waits for the class state's tag to differ from the one its
    page shows; one look at the memo every MEMO_S answers all of them, however many are held (on
    each event loop that holds some: a server has one, tests several)."""

    def __init__(self) -> None:
        self._held: dict[asyncio.AbstractEventLoop, dict[asyncio.Future, str]] = {}

    def __len__(self) -> int:
        return sum(len(held) for held in self._held.values())

    async def changed(self, since: str, hold_s: float, read=status) -> dict | None:
        """The state once its tag is not `since`; None after `hold_s` (or if the page went away)."""
        loop = asyncio.get_running_loop()
        held = self._held.get(loop)
        if held is None:
            held = self._held[loop] = {}
            loop.create_task(self._watch(loop, read))
        future: asyncio.Future = loop.create_future()
        held[future] = since
        try:
            return await asyncio.wait_for(future, hold_s)
        except (TimeoutError, asyncio.CancelledError):
            return None
        finally:
            held.pop(future, None)

    async def _watch(self, loop: asyncio.AbstractEventLoop, read) -> None:
        held = self._held[loop]
        try:
            while held:
                await asyncio.sleep(class_state.MEMO_S)
                state = read()
                for future, since in list(held.items()):
                    if since != state["tag"] and not future.done():
                        future.set_result(state)
        finally:
            self._held.pop(loop, None)


HELD = Held()


def command(body: bytes, authorization: str, peer: str, nodes: tuple[str, ...],
            store: Store | None = None) -> tuple[int, dict]:
    """(HTTP status, JSON answer) for a teacher's command: 403 without the passphrase."""
    store = store or shared()
    attempts = _bounded(_ATTEMPTS, peer, passphrase.Attempts)
    if (wait := attempts.wait_s()) > 0:
        return 429, {"ok": False, "message": f"Wait {max(1, round(wait))} s before trying again."}
    typed = authorization[len("Bearer "):] if authorization.startswith("Bearer ") else ""
    try:
        right = passphrase.matches(typed, store)
    except StoreError:
        log.exception("reading the teacher passphrase")
        return 503, {"ok": False, "message": "The class database cannot be opened."}
    if not right:
        if typed:  # (a guess: the next waits longer; a page with no passphrase is only refused)
            attempts.failed()
        return 403, {"ok": False, "message": "Only the teacher can do that."}
    attempts.succeeded()
    status_, data = _read(body, MAX_COMMAND)
    if status_ != 200 or not isinstance(data, dict):
        return status_ if status_ != 200 else 400, {"ok": False, "message": "That command could not be read."}
    try:
        state = class_state.command(store, nodes, data.get("command"), _text(data.get("node")),
                                    _text(data.get("query")))
    except ValueError as e:
        return 400, {"ok": False, "message": str(e)}
    except StoreError:
        log.exception("a teacher's command")
        return 503, {"ok": False, "message": "The class database cannot be written just now."}
    MEMO.forget()
    return 200, {"ok": True, "state": json.loads(state.to_json())}


def _text(value) -> str:
    return value if isinstance(value, str) else ""


class _JSON(RequestHandler):
    def initialize(self, nodes: tuple[str, ...]) -> None:
        self.nodes = nodes

    def answer(self, status_: int, data: dict, cache: str = "no-store") -> None:
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", cache)
        self.set_status(status_)
        self.write(json.dumps(data, separators=(",", ":")))

    def json_only(self) -> bool:
        """(a plain cross-site form cannot send JSON without the browser asking first)"""
        if self.request.headers.get("Content-Type", "").startswith("application/json"):
            return True
        self.answer(415, {"ok": False, "message": "Sent as JSON only."})
        return False


class ReportHandler(_JSON):
    def post(self) -> None:
        if self.json_only():
            self.answer(*report(self.request.body, self.nodes))


class ClassHandler(_JSON):
    async def get(self) -> None:
        # (revalidated on every poll: Tornado answers 304 when its ETag is the browser's)
        state, since = status(), self.get_query_argument("since", "")[:MAX_TAG]
        if since and since == state["tag"]:
            self._gone = False
            self._waiting = asyncio.ensure_future(HELD.changed(since, HOLD_S))
            state = await self._waiting or status()
            if self._gone:  # (the page went away meanwhile)
                return
        self.answer(200, state, cache="no-cache")

    def on_connection_close(self) -> None:
        waiting = getattr(self, "_waiting", None)
        if waiting is not None:
            self._gone = True
            waiting.cancel()

    def post(self) -> None:
        if self.json_only():
            self.answer(*command(self.request.body, self.request.headers.get("Authorization", ""),
                                 self.request.remote_ip or "", self.nodes))
