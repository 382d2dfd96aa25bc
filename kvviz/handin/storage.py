"""The class's hand-ins in one database that every server process, on every machine, writes to.

    store = Store(db_path())          # KVVIZ_DB: a file (default ./kvviz-class.db) or postgresql://...
    store.save(HandIn.make(...))      # insert, or merge into the same student's earlier hand-ins
    store.revision()                  # bumped by every write: what the teacher page polls
    store.handins()                   # newest first
    store.clear(up_to=revision)       # delete what the teacher had seen

One code path (SQLAlchemy Core, the statements in this file) for both databases (database.py
makes the engine; schema.py has the tables): a SQLite file on one machine, PostgreSQL when the
class runs on several. Every write is one short transaction that first takes the write lock (on
SQLite `BEGIN IMMEDIATE`; on PostgreSQL the row lock of the revision counter, which every write
updates first), so writes from any number of processes and machines are serialized: none is
lost, none doubled, and the count of a class is checked against MAX_HANDINS under the lock. A
hand-in is validated again (`model.validate`) before every write, and every value is a bound
parameter. A student's later hand-in merges into their row under that same lock (`model.merge`:
predictions and self-checks by question, the newest answer to each winning; an empty answer or
name never erases one), so a hand-in from the recorded page and one from the live page add up
whatever order, process or machine they come through. Committed is durable (SQLite synchronous=FULL,
PostgreSQL's own commit).

Each process has its own engine (made on first use; a forked child makes its own, leaving the
parent's connections alone). A SQLite file is created on first write, readable by its owner
only; reading a missing file finds nothing and creates nothing. Every database error comes out
as StoreError (a sentence naming the database, never its password).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sqlite3
import threading
import time

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from kvviz.handin import schema
from kvviz.handin.database import (
    BUSY_TIMEOUT_MS,  # noqa: F401  (re-exported)
    DEFAULT_DB,  # noqa: F401  (re-exported)
    StoreError,
    describe,
    location,
    make_engine,
    server_url,
    sqlite_file,
)
from kvviz.handin.model import (
    MAX_HANDINS,
    HandIn,
    HandInCheck,
    HandInPrediction,
    compact,
    items,
    merge,
    validate,
)
from kvviz.handin.schema import FIELDS, REVISION, handins, meta

db_path = location  # KVVIZ_DB: a postgresql:// URL (str), else an absolute file path (Path)

_SHARED: dict[object, Store] = {}
_SHARED_LOCK = threading.Lock()


def shared(environ=os.environ) -> Store:
    """This process's Store for the class database (`db_path()`), one per database."""
    target = db_path(environ)
    with _SHARED_LOCK:
        if target not in _SHARED:
            _SHARED[target] = Store(target)
        return _SHARED[target]


class StoreFull(ValueError):
    """The class already has MAX_HANDINS students."""


class Store:
    """The hand-ins in the SQLite file at `target` (a path), or in the PostgreSQL database at
    `target` (a postgresql:// URL). `path` is the file, or None; `where` is what to print."""

    def __init__(self, target: str | os.PathLike):
        self.path = sqlite_file(target)
        self.target = self.path if self.path is not None else str(target)
        if self.path is None:
            server_url(self.target)  # a malformed URL is refused now, with a sentence saying why
        self.where = describe(self.target)
        self._lock = threading.Lock()
        self._engine: Engine | None = None
        self._pid: int | None = None
        self._ready = False

    # -- the engine ------------------------------------------------------------------------------
    def _engine_for(self, create: bool) -> Engine | None:
        """This process's engine, the tables made (None: a missing file and not `create`)."""
        if self.path is not None and not self.path.exists():
            if not create:
                return None
            if not self.path.parent.is_dir():
                raise StoreError(f"no directory {self.path.parent} for the class database")
            with contextlib.suppress(FileExistsError):  # owner-only; the -wal and -shm files follow it
                os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        with self._lock:
            if self._pid != os.getpid():
                if self._engine is not None:  # a forked child: the pooled connections are the parent's
                    self._engine.dispose(close=False)
                self._engine, self._pid, self._ready = make_engine(self.target), os.getpid(), False
            engine = self._engine
            if not self._ready:
                self._transaction(engine, _create_tables, write=True)
                self._ready = True
        return engine

    @contextlib.contextmanager
    def _errors(self):
        try:
            yield
        except (sa.exc.SQLAlchemyError, sqlite3.Error) as e:
            cause = getattr(e, "orig", None) or e
            first = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
            raise StoreError(f"the class database {self.where}: {first}") from e

    def _transaction(self, engine: Engine, body, write: bool):
        """`body(conn)` in one transaction, committed (or rolled back on any exception)."""
        with self._errors(), engine.connect() as conn:
            conn.execution_options(kvviz_write=write)  # (SQLite: BEGIN IMMEDIATE, database.py)
            with conn.begin():
                return body(conn)

    def _write(self, body, create: bool = True, missing=None):
        engine = self._engine_for(create)
        return missing if engine is None else self._transaction(engine, body, write=True)

    def _read(self, body, missing):
        engine = self._engine_for(create=False)
        return missing if engine is None else self._transaction(engine, body, write=False)

    def close(self) -> None:
        """Close this process's connections (a later call opens new ones)."""
        with self._lock:
            if self._engine is not None and self._pid == os.getpid():
                self._engine.dispose()
            self._engine, self._pid, self._ready = None, None, False

    # -- writes ----------------------------------------------------------------------------------
    def save(self, h: HandIn, now: float | None = None) -> HandIn:
        """Add `h` to what its student handed in before (`model.merge`: nothing is lost, the newest
        answer to each question wins), or store it as their first; returns what is stored now
        (merged, with its times and submissions). ValueError for an invalid hand-in, StoreFull
        when the class is full."""
        h = validate(h)
        now = time.time() if now is None else now

        def body(c: Connection) -> HandIn:
            rev = _bump(c)  # first: the write lock, held until the commit (the read below included)
            mine = handins.c.student_id == h.student_id
            found = c.execute(sa.select(*_columns()).where(mine)).first()
            old = _handin(found) if found is not None else None
            if (old is None
                and c.execute(sa.select(sa.func.count()).select_from(handins)).scalar_one() >= MAX_HANDINS):
                raise StoreFull(f"The class already has {MAX_HANDINS} hand-ins: ask the teacher.")
            m = merge(old or HandIn(h.student_id, h.name), h)  # (one item per question from the first)
            merged = HandIn.make(m.student_id, m.name, m.answer, m.checks, m.predictions, m.query, m.metrics)
            created, count = (old.created_at, old.submissions + 1) if old else (now, 1)
            fields = (merged.name, merged.answer, compact([i.to_json() for i in merged.checks]),
                      compact([p.to_json() for p in merged.predictions]), merged.query,
                      compact(merged.metrics))
            row = {**dict(zip(FIELDS, (h.student_id, *fields, created, now, count), strict=True)), "rev": rev}
            c.execute(sa.insert(handins).values(row) if old is None
                      else sa.update(handins).where(mine).values(row))
            return dataclasses.replace(merged, created_at=created, updated_at=now, submissions=count)

        return self._write(body)

    def clear(self, up_to: int | None = None) -> int:
        """Delete every hand-in (only those written at or before revision `up_to`, when given:
        one handed in after the teacher confirmed stays). Returns how many were deleted."""
        def body(c: Connection) -> int:
            _bump(c)
            return c.execute(sa.delete(handins).where(handins.c.rev <= (2**62 if up_to is None
                                                                        else up_to))).rowcount

        return self._write(body, create=False, missing=0)

    def meta(self, name: str, make, replace: bool = False) -> str:
        """The stored value `name`; on first use (or with `replace`) `make()`'s, stored once for
        every process."""
        def body(c: Connection) -> str:
            _lock(c)
            old = c.execute(sa.select(meta.c.value).where(meta.c.name == name)).scalar_one_or_none()
            if old is not None and not replace:
                return old
            value = make()
            c.execute(sa.insert(meta).values(name=name, value=value) if old is None
                      else sa.update(meta).where(meta.c.name == name).values(value=value))
            return value

        return self._write(body)

    def update_meta(self, name: str, change) -> str:
        """Store `change(old)` as `name` (`old`: its value, or None), read and written under the
        write lock (two processes updating at once lose neither); returns the new value."""
        def body(c: Connection) -> str:
            _lock(c)
            old = c.execute(sa.select(meta.c.value).where(meta.c.name == name)).scalar_one_or_none()
            value = change(old)
            c.execute(sa.insert(meta).values(name=name, value=value) if old is None
                      else sa.update(meta).where(meta.c.name == name).values(value=value))
            return value

        return self._write(body)

    def write(self, body, create: bool = True, missing=None):
        """`body(connection)` in one write transaction (kvviz/handin/roster.py's statements)."""
        return self._write(body, create, missing)

    def read(self, body, missing):
        """`body(connection)` in one read transaction (`missing` if there is no database yet)."""
        return self._read(body, missing)

    # -- reads -----------------------------------------------------------------------------------
    def meta_value(self, name: str) -> str | None:
        """The stored value `name`, or None (nothing is created)."""
        return self._read(
            lambda c: c.execute(sa.select(meta.c.value).where(meta.c.name == name)).scalar_one_or_none(),
            missing=None)

    def revision(self) -> int:
        return self._read(_revision, missing=0)

    def get(self, student_id: str) -> HandIn | None:
        def body(c: Connection) -> HandIn | None:
            row = c.execute(sa.select(*_columns()).where(handins.c.student_id == student_id)).first()
            return _handin(row) if row else None

        return self._read(body, missing=None)

    def handins(self) -> list[HandIn]:
        """Every hand-in, the most recently updated first."""
        def body(c: Connection) -> list[HandIn]:
            order = (handins.c.updated_at.desc(), handins.c.student_id)
            return [_handin(r) for r in c.execute(sa.select(*_columns()).order_by(*order))]

        return self._read(body, missing=[])

    def count(self) -> int:
        return self._read(lambda c: c.execute(sa.select(sa.func.count()).select_from(handins)).scalar_one(),
                          missing=0)


def _columns():
    return [handins.c[f] for f in FIELDS]


_COUNTER = sa.select(meta.c.value).where(meta.c.name == REVISION)  # the revision counter's row


def _create_tables(c: Connection) -> None:
    """The tables and the revision counter, if missing (one process at a time). On PostgreSQL a
    process that finds them made, before the schema lock or once it has it, goes on at once: forty
    backends starting together hold the lock one query each, not a `create_all` each (its checks,
    one after another under load, outlasted `lock_timeout` for the last of them)."""
    if c.dialect.name == "postgresql":
        if _made(c):
            return
        c.execute(sa.select(sa.func.pg_advisory_xact_lock(schema.SCHEMA_LOCK)))
        if _made(c):
            return
    schema.metadata.create_all(c)
    if c.execute(_COUNTER).first() is None:
        c.execute(sa.insert(meta).values(name=REVISION, value="0"))


def _made(c: Connection) -> bool:
    """Every table there, and the revision counter in it (as a committed `_create_tables` leaves them)."""
    there = set(sa.inspect(c).get_table_names())
    return (all(t.name in there for t in schema.metadata.sorted_tables)
            and c.execute(_COUNTER).first() is not None)


def _revision(c: Connection) -> int:
    return int(c.execute(_COUNTER).scalar_one())


def _lock(c: Connection) -> None:
    """The write lock: the revision counter's row (SQLite holds its lock from BEGIN IMMEDIATE)."""
    c.execute(_COUNTER.with_for_update())


def _bump(c: Connection) -> int:
    """The revision + 1, returned: every write's first statement, so it also takes the write lock."""
    value = sa.cast(sa.cast(meta.c.value, sa.BigInteger) + 1, sa.Text)
    c.execute(sa.update(meta).where(meta.c.name == REVISION).values(value=value))
    return _revision(c)


def _handin(row) -> HandIn:
    """A stored row as a hand-in: its self-checks and predictions read from their JSON (the same
    format since the first hand-in; an item missing a field reads it as '')."""
    sid, name, answer, checks, predictions, query, metrics, created, updated, count = row
    return HandIn(student_id=sid, name=name, answer=answer, checks=items(json.loads(checks), HandInCheck),
                  predictions=items(json.loads(predictions), HandInPrediction), query=query,
                  metrics=json.loads(metrics), created_at=created, updated_at=updated, submissions=count)
