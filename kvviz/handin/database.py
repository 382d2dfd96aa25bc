"""Where the class database is, and one SQLAlchemy engine for it: a SQLite file or PostgreSQL.

    target = location()            # KVVIZ_DB: a file path (default ./kvviz-class.db) or a postgresql:// URL
    engine = make_engine(target)   # SQLAlchemy Core engine, set up for many processes at once
    describe(target)               # what to print: the path, or the URL without its password

One machine: a SQLite file (no set-up), in WAL mode (readers never block the writer), every
connection waiting up to BUSY_TIMEOUT_MS for the write lock, commits synchronous=FULL; a write
transaction starts with `BEGIN IMMEDIATE` (the write lock at once), a read with a plain `BEGIN`.
Several machines: `KVVIZ_DB=postgresql://user:password@host:5432/database` (psycopg 3), waiting
up to BUSY_TIMEOUT_MS for a lock, each connection tested before use (a restarted server is
reconnected to), few connections per process (a class of many backends stays under the server's
`max_connections`). The storage (storage.py) writes the same statements to both.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Engine

DEFAULT_DB = "kvviz-class.db"
ENV = "KVVIZ_DB"
BUSY_TIMEOUT_MS = 10_000
CONNECT_TIMEOUT_S = 10
POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


class StoreError(Exception):
    """The class database cannot be reached, read or written (a sentence to log or show)."""


def location(environ=os.environ) -> Path | str:
    """KVVIZ_DB as given: a postgresql:// URL (a str), else a file path made absolute (a Path;
    default ./kvviz-class.db). Never from a request."""
    value = (environ.get(ENV) or "").strip() or DEFAULT_DB
    return value if "://" in value else Path(value).expanduser().resolve()


def sqlite_file(target: str | os.PathLike) -> Path | None:
    """The file for a path (or a sqlite:/// URL); None for a server URL."""
    if isinstance(target, os.PathLike) or "://" not in str(target):
        return Path(target).expanduser().resolve()
    if str(target).startswith("sqlite:///") and len(str(target)) > len("sqlite:///"):
        return Path(str(target)[len("sqlite:///"):]).expanduser().resolve()
    return None


def server_url(target: str) -> URL:
    """The psycopg URL for a postgresql:// (or postgres://) URL; StoreError for anything else."""
    try:
        url = sa.make_url(target)
    except (sa.exc.ArgumentError, ValueError) as e:
        raise StoreError(f"{ENV} is not a database URL ({e}): give a file path, or "
                         "postgresql://USER:PASSWORD@HOST:5432/DATABASE") from None
    if url.drivername not in POSTGRES_SCHEMES or not url.database:
        raise StoreError(f"{ENV} must be a file path or postgresql://USER:PASSWORD@HOST:5432/DATABASE, "
                         f"not {describe(target)!r}")
    return url.set(drivername="postgresql+psycopg")


def describe(target: str | os.PathLike) -> str:
    """The database, to print: the file's path, or the URL with its password hidden."""
    path = sqlite_file(target)
    if path is not None:
        return str(path)
    try:
        return sa.make_url(str(target)).render_as_string(hide_password=True)
    except (sa.exc.ArgumentError, ValueError):
        return "(an unreadable URL)"


def make_engine(target: str | os.PathLike) -> Engine:
    path = sqlite_file(target)
    if path is not None:
        return _sqlite_engine(path)
    return sa.create_engine(
        server_url(str(target)), pool_size=1, max_overflow=4, pool_timeout=BUSY_TIMEOUT_MS / 1000,
        pool_pre_ping=True,
        connect_args={"connect_timeout": CONNECT_TIMEOUT_S, "application_name": "kvviz",
                      "options": f"-c lock_timeout={BUSY_TIMEOUT_MS}"})


def _sqlite_engine(path: Path) -> Engine:
    engine = sa.create_engine(f"sqlite:///{path}", connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn, _record) -> None:
        dbapi_conn.isolation_level = None  # the transactions are begun below, not by sqlite3
        dbapi_conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _retry_locked(lambda: dbapi_conn.execute("PRAGMA journal_mode = WAL"))
        dbapi_conn.execute("PRAGMA synchronous = FULL")

    @event.listens_for(engine, "begin")
    def _begin(conn) -> None:
        write = conn.get_execution_options().get("kvviz_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def _retry_locked(action, seconds: float = BUSY_TIMEOUT_MS / 1000):
    """`action()`, again while the file is locked (only setting up a new file can be)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return action()
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)
