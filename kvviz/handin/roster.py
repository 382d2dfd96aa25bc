"""The live roster in the class database: where each student's page is, every backend's students
in one table (schema.roster), so the teacher sees the whole class however many processes and
machines serve it.

    save(store, report, now, owner)   a page's report; 'created', 'updated', 'taken' or 'full'
    seen(store, now)                  the students heard from within SEEN_S, in arrival order
    token(store, student_id)          the page's proof that the id is its own (`owns`)

A page's first report claims its student id and is answered with a token (an HMAC of the id
under a secret kept in the database, the same on every backend); a later report for that id
must carry it (`owner`), so a page cannot move another student on the roster. A new student
beyond MAX_ROSTER is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from kvviz.handin.classroom import MAX_ROSTER, SEEN_S, Report
from kvviz.handin.schema import roster
from kvviz.handin.storage import Store

_SECRETS: dict[str, bytes] = {}
_SECRETS_LOCK = threading.Lock()


@dataclass(frozen=True)
class Seen:
    student_id: str
    name: str
    node: str
    predicted: tuple[str, ...]
    query: str  # the state the page showed at its last report
    first_at: float
    updated_at: float


def _secret(store: Store) -> bytes:
    with _SECRETS_LOCK:
        if store.where not in _SECRETS:
            _SECRETS[store.where] = store.meta("roster_secret", lambda: secrets.token_hex(32)).encode()
        return _SECRETS[store.where]


def token(store: Store, student_id: str) -> str:
    return hmac.new(_secret(store), student_id.encode(), hashlib.sha256).hexdigest()


def owns(store: Store, student_id: str, given) -> bool:
    return isinstance(given, str) and hmac.compare_digest(given.encode(), token(store, student_id).encode())


def save(store: Store, r: Report, now: float, owner: bool) -> str:
    """Store a page's report: 'updated' (its row, when `owner`), 'created' (a new student),
    'taken' (the id is on the roster and the page did not prove it is its own: nothing changed),
    'full' (MAX_ROSTER students already)."""
    values = {"node": r.node, "predicted": ",".join(r.predicted), "query": r.query, "updated_at": now}
    if r.name:  # (an empty name never erases one)
        values["name"] = r.name

    def body(c: Connection) -> str:
        mine = roster.c.student_id == r.student_id
        if c.execute(sa.select(roster.c.student_id).where(mine)).first() is not None:
            if not owner:
                return "taken"
            c.execute(sa.update(roster).where(mine).values(values))
            return "updated"
        if c.execute(sa.select(sa.func.count()).select_from(roster)).scalar_one() >= MAX_ROSTER:
            return "full"
        c.execute(sa.insert(roster).values(student_id=r.student_id, first_at=now, **{"name": "", **values}))
        return "created"

    return store.write(body)


def seen(store: Store, now: float) -> list[Seen]:
    """Every student heard from within SEEN_S of `now`, in the order they first reported."""
    def body(c: Connection) -> list[Seen]:
        rows = c.execute(sa.select(roster.c.student_id, roster.c.name, roster.c.node, roster.c.predicted,
                                   roster.c.query, roster.c.first_at, roster.c.updated_at)
                         .where(roster.c.updated_at >= now - SEEN_S)
                         .order_by(roster.c.first_at, roster.c.student_id))
        return [Seen(sid, name, node, tuple(p for p in predicted.split(",") if p), query, first, updated)
                for sid, name, node, predicted, query, first, updated in rows]

    return store.read(body, missing=[])


def clear(store: Store, now: float) -> int:
    """Forget every student heard from at or before `now` (a new class)."""
    return store.write(lambda c: c.execute(sa.delete(roster).where(roster.c.updated_at <= now)).rowcount,
                       create=False, missing=0)
