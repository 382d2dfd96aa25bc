"""A hand-in in one request, with no Panel session: `POST /lesson-handin` (kvviz/serve/routes.py).

The recorded lesson (played in the browser) sends what the student did there as JSON:
`{"student_id", "name", "predictions": [...], "query": "?..."}`, and optionally `"answer"` and
`"checks": [...]` (Explain it back's written answer and self-checks). Every field is cleaned and
capped by `HandIn.make` (as the live boxes' hand-ins are), the same per-student rate limit
applies (one every 3 s, 30 in all, per process; and per address, kvviz/process/throttle.py, for a
script that invents a new student id each time), and the same store takes it, merging it with
what the same student id handed in before, here or from the live page (`model.merge`: a hand-in
without an answer or self-checks keeps the earlier ones). The answer is
JSON: `{"ok": bool, "message": a sentence for the student}`; nothing is ever rendered as HTML.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict

from tornado.web import RequestHandler

from kvviz.handin.model import HandIn, RateLimit
from kvviz.handin.session import confirmation
from kvviz.handin.storage import StoreError, shared
from kvviz.process import throttle

log = logging.getLogger("kvviz.handin")
MAX_BODY = 64_000  # bytes of a request: far more than the capped fields need
_LIMITS: OrderedDict[str, RateLimit] = OrderedDict()  # student id -> their limit (bounded)
MAX_TRACKED = 5000


def _limit(student_id: str) -> RateLimit:
    limit = _LIMITS.pop(student_id, None) or RateLimit()
    _LIMITS[student_id] = limit
    while len(_LIMITS) > MAX_TRACKED:
        _LIMITS.popitem(last=False)
    return limit


def hand_in(body: bytes) -> tuple[int, dict]:
    """(HTTP status, JSON answer) for a request body."""
    if len(body) > MAX_BODY:
        return 413, {"ok": False, "message": "That hand-in is too large to send."}
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return 400, {"ok": False, "message": "That hand-in could not be read: reload the page and try again."}
    if not isinstance(data, dict):
        return 400, {"ok": False, "message": "That hand-in could not be read: reload the page and try again."}
    predictions, checks = data.get("predictions"), data.get("checks")
    try:
        h = HandIn.make(data.get("student_id"), data.get("name"), answer=data.get("answer", ""),
                        checks=checks if isinstance(checks, list) else [],
                        predictions=predictions if isinstance(predictions, list) else [],
                        query=data.get("query", ""))
    except ValueError as e:
        return 400, {"ok": False, "message": str(e)}
    if (why := _limit(h.student_id).refusal()) is not None:
        return 429, {"ok": False, "message": why}
    try:
        stored = shared().save(h)
    except StoreError:
        log.exception("saving a hand-in")
        return 503, {"ok": False,
                     "message": "Your hand-in could not be saved just now: try again in a moment."}
    except ValueError as e:  # (the class is full)
        return 409, {"ok": False, "message": str(e)}
    return 200, {"ok": True, "message": confirmation(stored)}


class HandInHandler(RequestHandler):
    def post(self) -> None:
        if throttle.refused(self, throttle.HANDIN, throttle.SLOW_DOWN_HANDIN):
            return  # (one address sending many: a script inventing student ids)
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        if not self.request.headers.get("Content-Type", "").startswith("application/json"):
            # (a plain cross-site form cannot send JSON without the browser asking first)
            self.set_status(415)
            self.write(json.dumps({"ok": False, "message": "A hand-in is sent as JSON."}))
            return
        status, answer = hand_in(self.request.body)
        self.set_status(status)
        self.write(json.dumps(answer))
