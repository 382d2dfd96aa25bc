"""The class the teacher runs, as data: what a student's page reports, what the teacher commands,
and the sentences a student's page shows. Declared once here; the server checks against it and
the played page (kvviz/export/classroom.js) is handed it as JSON (`browser_config`).

    Report      what a student's page says of itself: where it is (a node key, or '' for the page's
                opening), on which nodes a prediction is made (never what it predicted), an
                optional display name, and the state it shows as the lesson's link (carried
                by a report, never the reason for one: the teacher's "Show"); checked and capped
                (`Report.from_json`)
    ClassState  what the teacher set for every page: paused; how far students may go (`pace`: a
                node key, '' for all); the last "follow me" (a node, a recorded state's link, a
                sequence number the pages apply once each)
    SAY         the words a student's page shows for them

Standard library only. Which node keys exist is handed in by what composes this (the registry
lives above the hand-ins: kvviz/serve/routes.py and teacher.py hand down its keys).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field

from kvviz.handin.model import MAX_NAME, QUERY, STUDENT_ID, clean

POLL_MS = 1000  # a page asks for the class state again this long after an answer the server did not hold
HEARTBEAT_S = 30  # a page reports at least this often while open, changed or not
AWAY_S = 90  # a student not heard from for this long shows as away on the roster
SEEN_S = 3 * 3600  # the roster lists students heard from within this
REPORT_GAP_S = 0.5  # a student's reports, at most one per this sustained (per server process) ...
REPORT_BURST = 3  # ... and this many at once: reports held up on the way (a busy machine) arrive together
# a page sends at most one report per this: more than twice the server's gap, so that a report
# delayed on its way (a busy machine) does not make the next one arrive too soon
PAGE_REPORT_GAP_MS = 1200
MAX_REPORT = 2000  # bytes of a report's body
MAX_FOLLOW_QUERY = 2000  # characters of a "follow me" state's link
MAX_ROSTER = 2000  # students on one roster (as many as a class database holds hand-ins)
TOKEN = re.compile(r"[0-9a-f]{64}")

# The sentences of a student's page (classroom.js shows them as text; `{node}` is a node's number).
SAY = {
    "paused_title": "Eyes on the teacher",
    "paused_line": "Your teacher has paused the class. The lesson comes back when they resume.",
    "paced": "Your teacher opens node {node} and what follows later: the class is not there yet.",
    "followed": "Your teacher brought the class here (node {node}).",
    "followed_state": "Your teacher brought the class here (node {node}), to the state they are showing.",
}


class ReportError(ValueError):
    """A report that is refused (its sentence says why)."""


@dataclass(frozen=True)
class Report:
    student_id: str
    node: str = ""
    predicted: tuple[str, ...] = ()
    name: str = ""
    query: str = ""  # the page's state as the lesson's link (sent with a report, never the reason for one)

    @classmethod
    def from_json(cls, data, nodes: tuple[str, ...]) -> Report:
        """A report from untrusted JSON: the id checked, the node one of `nodes` (or ''), the
        predicted nodes among `nodes` (each once), the name cleaned and capped. Anything else is
        refused (ReportError), nothing silently kept."""
        if not isinstance(data, dict):
            raise ReportError("A report is a JSON object.")
        unknown = set(data) - {"student_id", "token", "node", "predicted", "name", "query"}
        if unknown:
            raise ReportError(f"A report has no field {sorted(unknown)[0][:40]!r}.")
        sid = data.get("student_id")
        if not isinstance(sid, str) or not STUDENT_ID.fullmatch(sid):
            raise ReportError("A report needs the page's student id.")
        node = data.get("node", "")
        if node != "" and node not in nodes:
            raise ReportError("A report names no node of this lesson.")
        predicted = data.get("predicted", [])
        if not isinstance(predicted, list) or len(predicted) > len(nodes) or \
                any(p not in nodes for p in predicted) or len(set(predicted)) != len(predicted):
            raise ReportError("A report's predictions name nodes of this lesson, each once.")
        name = data.get("name", "")
        if not isinstance(name, str):
            raise ReportError("A report's name is text.")
        query = data.get("query", "")
        if not isinstance(query, str) or len(query) > MAX_FOLLOW_QUERY or not QUERY.fullmatch(query):
            raise ReportError("A report's state is the lesson's own link.")
        ordered = tuple(n for n in nodes if n in predicted)
        return cls(sid, node, ordered, clean(name, MAX_NAME), query)


@dataclass(frozen=True)
class Follow:
    seq: int = 0  # 0: never; each "follow me" one more
    node: str = ""
    query: str = ""  # a recorded state's link ('' for the node as the student left it)


@dataclass(frozen=True)
class ClassState:
    paused: bool = False
    pace: str = ""  # students may go up to this node ('' for all)
    follow: Follow = field(default_factory=Follow)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> ClassState:
        """The stored state (anything unreadable reads as the default: a class running freely)."""
        try:
            data = json.loads(text or "{}")
            f = data.get("follow") or {}
            return cls(paused=bool(data.get("paused", False)), pace=str(data.get("pace", "")),
                       follow=Follow(int(f.get("seq", 0)), str(f.get("node", "")), str(f.get("query", ""))))
        except (ValueError, TypeError, AttributeError):
            return cls()


def follow_query(text) -> str:
    """A "follow me" state's link: only its query (what follows '?'), as the lesson writes one
    (urlencode's characters); anything else is refused (ValueError)."""
    if not isinstance(text, str):
        raise ValueError("A state is given by its link.")
    text = text.strip()
    query = text[text.index("?"):] if "?" in text else ("?" + text if text else "")
    if len(query) > MAX_FOLLOW_QUERY or not QUERY.fullmatch(query):
        raise ValueError("That is not a link to a state of the lesson: copy it from the lesson's address "
                         "bar.")
    return query


def browser_config(report: str, status: str, outline: tuple[tuple[str, str, str], ...]) -> dict:
    """What the played page's classroom.js is handed: where to report and poll, how often, the
    caps it keeps to, the nodes' numbers, and the sentences it shows."""
    return {"report": report, "status": status, "poll_ms": POLL_MS, "heartbeat_s": HEARTBEAT_S,
            "gap_ms": PAGE_REPORT_GAP_MS,
            "max_name": MAX_NAME, "max_query": MAX_FOLLOW_QUERY,
            "numbers": {key: number for key, number, _title in outline}, "say": SAY}
