"""The teacher's passphrase, and `python -m kvviz.handin.key`, which prints it.

KVVIZ_TEACHER_KEY, when set, is the passphrase. Otherwise one is generated the first time any
process needs it and stored in the class database (its `meta` table), so every server process,
however it was started (`make lesson PROCS=4`, `make class`, a bare `panel serve`), and a
restarted one, agrees on it; `make lesson` and `make class` print it at start by running this
module. `--new` replaces the stored one; deleting the database file also forgets it.

A typed passphrase is compared in constant time (hmac.compare_digest) and a session that types
wrong ones waits longer after each (`Attempts`). It is typed into a password field and travels
over the page's websocket: never in a URL, so never in an access log.
"""

from __future__ import annotations

import argparse
import hmac
import os
import secrets
import sys
import time

from kvviz.handin.storage import Store, StoreError, db_path

ENV = "KVVIZ_TEACHER_KEY"
ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: read off a projector or a terminal
MAX_TYPED = 200


def generate() -> str:
    """Three groups of four characters (59 bits), e.g. 'k7qm-x2rt-9wpa'."""
    return "-".join("".join(secrets.choice(ALPHABET) for _ in range(4)) for _ in range(3))


def from_env(environ=os.environ) -> str | None:
    key = (environ.get(ENV) or "").strip()
    return key or None


def teacher_key(store: Store, environ=os.environ) -> str:
    return from_env(environ) or store.meta("teacher_key", generate)


def matches(typed, store: Store, environ=os.environ) -> bool:
    """Whether `typed` is the passphrase (constant-time comparison of the UTF-8 bytes)."""
    if not isinstance(typed, str) or not typed.strip() or len(typed) > MAX_TYPED:
        return False
    return hmac.compare_digest(typed.strip().encode("utf-8"), teacher_key(store, environ).encode("utf-8"))


class Attempts:
    """One session's wrong passphrases: after the n-th, the next try waits 2**(n-1) s (at most a minute)."""

    def __init__(self, clock=time.monotonic):
        self.clock, self.failures, self.until = clock, 0, 0.0

    def wait_s(self) -> float:
        return max(0.0, self.until - self.clock())

    def failed(self) -> None:
        self.failures += 1
        self.until = self.clock() + min(60.0, 2.0 ** (self.failures - 1))

    def succeeded(self) -> None:
        self.failures, self.until = 0, 0.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Print the teacher page's passphrase (creating it if needed).")
    p.add_argument("--db", help="the class database (default: KVVIZ_DB, else ./kvviz-class.db)")
    p.add_argument("--url", default="http://localhost:5006/teacher",
                   help="the teacher page's address, to print")
    p.add_argument("--new", action="store_true", help="replace the stored passphrase with a new one")
    args = p.parse_args(argv)
    try:
        store = Store(args.db or db_path())
        store.revision()  # (reached, and its tables made, before anything is printed)
        if from_env():
            print(f"Teacher page: {args.url} (passphrase: the one in {ENV}). Hand-ins: {store.where}",
                  flush=True)
            return 0
        key = store.meta("teacher_key", generate, replace=args.new)
    except StoreError as e:
        print(f"Teacher page: {args.url}, but {e}. Hand-ins cannot be stored until it can be reached "
              "(KVVIZ_DB: a file path, or postgresql://USER:PASSWORD@HOST:5432/DATABASE).", file=sys.stderr,
              flush=True)
        return 1
    print(f"Teacher page: {args.url}  passphrase: {key}  (stored in {store.where}; "
          f"`python -m kvviz.handin.key --new` changes it, {ENV} sets your own)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
