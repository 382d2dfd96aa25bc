"""The class's hand-ins in one SQLite file, shared by every server process (standard library only).

    store = Store(db_path())          # KVVIZ_DB, else ./kvviz-class.db; never from a request
    store.save(HandIn.make(...))      # insert, or update the same student's hand-in
    store.revision()                  # bumped by every write: what the teacher page polls
    store.handins()                   # newest first
    store.clear(up_to=revision)       # delete what the teacher had seen

Many processes write at once (`make class` runs one `panel serve` per core): the file is in WAL
mode (readers never block the writer), every connection waits up to BUSY_TIMEOUT_MS for the
write lock, and each write is one short `BEGIN IMMEDIATE` transaction. Each thread of each
process has its own connection (made on first use; a forked child makes its own). Commits are
synchronous=FULL: a hand-in the page confirmed survives a crash of the server or the machine.
The file is created on first write, readable by its owner only; reading a missing file finds
nothing and creates nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sqlite3
import threading
import time
from pathlib import Path

from kvviz.handin.model import MAX_HANDINS, HandIn, compact, validate

DEFAULT_DB = "kvviz-class.db"
BUSY_TIMEOUT_MS = 10_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS handins (
    student_id  TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    answer      TEXT NOT NULL,
    checks      TEXT NOT NULL,
    predictions TEXT NOT NULL,
    query       TEXT NOT NULL,
    metrics     TEXT NOT NULL,
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL,
    submissions INTEGER NOT NULL,
    rev         INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta (name, value) VALUES ('revision', '0');
"""
COLUMNS = "student_id, name, answer, checks, predictions, query, metrics, created_at, updated_at, submissions"


def db_path(environ=os.environ) -> Path:
    """The class database: KVVIZ_DB, else kvviz-class.db in the working directory (absolute)."""
    return Path(environ.get("KVVIZ_DB") or DEFAULT_DB).expanduser().resolve()


_SHARED: dict[Path, Store] = {}
_SHARED_LOCK = threading.Lock()


def shared(environ=os.environ) -> Store:
    """This process's Store for the class database (`db_path()`), one per path."""
    path = db_path(environ)
    with _SHARED_LOCK:
        if path not in _SHARED:
            _SHARED[path] = Store(path)
        return _SHARED[path]


class StoreFull(ValueError):
    """The class already has MAX_HANDINS students."""


class Store:
    """The hand-ins in the SQLite file at `path`."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path).expanduser().resolve()
        self._local = threading.local()
        self._ready = False

    # -- connections ---------------------------------------------------------------------------
    def _connect(self, create: bool) -> sqlite3.Connection | None:
        """This thread's connection (None when the file is missing and `create` is False)."""
        local = self._local
        if getattr(local, "pid", None) == os.getpid() and local.conn is not None:
            return local.conn
        if not self.path.exists():
            if not create:
                return None
            if not self.path.parent.is_dir():
                raise sqlite3.OperationalError(f"no directory {self.path.parent} for the class database")
            with contextlib.suppress(FileExistsError):  # owner-only; the -wal and -shm files follow it
                os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._retry(lambda: conn.execute("PRAGMA journal_mode = WAL"))
        conn.execute("PRAGMA synchronous = FULL")
        if not self._ready:
            statements = [s for s in SCHEMA.split(";") if s.strip()]
            self._retry(lambda: self._write(conn, lambda c: [c.execute(s) for s in statements]))
            self._ready = True
        local.pid, local.conn = os.getpid(), conn
        return conn

    @staticmethod
    def _retry(action, seconds: float = BUSY_TIMEOUT_MS / 1000):
        """`action()`, again while the database is locked (only setting up a new file can be)."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                return action()
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    @staticmethod
    def _write(conn: sqlite3.Connection, body):
        """`body(conn)` in one short write transaction, committed or rolled back."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            out = body(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return out

    def close(self) -> None:
        """Close this thread's connection (others close when their thread or process ends)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            conn.close()
        self._local.conn = None

    # -- writes ----------------------------------------------------------------------------------
    @staticmethod
    def _bump(conn: sqlite3.Connection) -> int:
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE name = 'revision'")
        return int(conn.execute("SELECT value FROM meta WHERE name = 'revision'").fetchone()[0])

    def save(self, h: HandIn, now: float | None = None) -> HandIn:
        """Insert or update `h` (by student id); returns it as stored (times, submissions).
        ValueError for an invalid hand-in, StoreFull when the class is full."""
        h = validate(h)
        now = time.time() if now is None else now
        fields = (h.name, h.answer, compact(list(h.checks)), compact(list(h.predictions)), h.query,
                  compact(h.metrics))

        def body(c: sqlite3.Connection) -> HandIn:
            old = c.execute("SELECT created_at, submissions FROM handins WHERE student_id = ?",
                            (h.student_id,)).fetchone()
            if old is None and c.execute("SELECT count(*) FROM handins").fetchone()[0] >= MAX_HANDINS:
                raise StoreFull(f"The class already has {MAX_HANDINS} hand-ins: ask the teacher.")
            rev = self._bump(c)
            created, count = (old[0], old[1] + 1) if old else (now, 1)
            c.execute(f"INSERT OR REPLACE INTO handins ({COLUMNS}, rev) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                      (h.student_id, *fields, created, now, count, rev))
            return dataclasses.replace(h, created_at=created, updated_at=now, submissions=count)

        return self._write(self._connect(create=True), body)

    def clear(self, up_to: int | None = None) -> int:
        """Delete every hand-in (only those written at or before revision `up_to`, when given:
        one handed in after the teacher confirmed stays). Returns how many were deleted."""
        conn = self._connect(create=False)
        if conn is None:
            return 0

        def body(c: sqlite3.Connection) -> int:
            cur = c.execute("DELETE FROM handins WHERE rev <= ?", (up_to if up_to is not None else 2**62,))
            self._bump(c)
            return cur.rowcount

        return self._write(conn, body)

    def meta(self, name: str, make, replace: bool = False) -> str:
        """The stored value `name`; on first use (or with `replace`) `make()`'s, stored once for
        every process."""
        def body(c: sqlite3.Connection) -> str:
            verb = "REPLACE" if replace else "IGNORE"
            c.execute(f"INSERT OR {verb} INTO meta (name, value) VALUES (?, ?)", (name, make()))
            return c.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()[0]

        return self._write(self._connect(create=True), body)

    # -- reads -----------------------------------------------------------------------------------
    def revision(self) -> int:
        conn = self._connect(create=False)
        if conn is None:
            return 0
        return int(conn.execute("SELECT value FROM meta WHERE name = 'revision'").fetchone()[0])

    def get(self, student_id: str) -> HandIn | None:
        conn = self._connect(create=False)
        row = conn and conn.execute(f"SELECT {COLUMNS} FROM handins WHERE student_id = ?", (student_id,)).fetchone()
        return _handin(row) if row else None

    def handins(self) -> list[HandIn]:
        """Every hand-in, the most recently updated first."""
        conn = self._connect(create=False)
        if conn is None:
            return []
        rows = conn.execute(f"SELECT {COLUMNS} FROM handins ORDER BY updated_at DESC, student_id").fetchall()
        return [_handin(r) for r in rows]

    def count(self) -> int:
        conn = self._connect(create=False)
        return conn.execute("SELECT count(*) FROM handins").fetchone()[0] if conn else 0


def _handin(row) -> HandIn:
    sid, name, answer, checks, predictions, query, metrics, created, updated, count = row
    return HandIn(student_id=sid, name=name, answer=answer, checks=tuple(json.loads(checks)),
                  predictions=tuple(json.loads(predictions)), query=query, metrics=json.loads(metrics),
                  created_at=created, updated_at=updated, submissions=count)
