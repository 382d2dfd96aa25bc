"""What the teacher set for every student page, kept in the class database (its `meta` table), so
a command given on any backend reaches the students of every backend.

    current(store)                       the ClassState (the default: nothing set)
    command(store, nodes, name, ...)     the teacher's command applied; the new ClassState
    Memo                                 a process's copy, read again at most every MEMO_S

Only the teacher gives commands: the teacher page calls `command` in its unlocked session, the
class endpoint (class_endpoint.py) after the passphrase. Each is a read and a write under the
store's write lock, so two commands at once from two backends lose neither.
"""

from __future__ import annotations

import dataclasses
import threading
import time

from kvviz.handin.classroom import ClassState, Follow, follow_query
from kvviz.handin.storage import Store

NAME = "class_state"
MEMO_S = 0.25  # a process reads the class state at most this often for its students' polls
COMMANDS = ("pause", "resume", "pace", "follow")


def current(store: Store) -> ClassState:
    return ClassState.from_json(store.meta_value(NAME))


def command(store: Store, nodes: tuple[str, ...], name: str, node: str = "", query: str = "") -> ClassState:
    """Apply one command: 'pause', 'resume', 'pace' (students may go up to `node`; '' for all),
    'follow' (every page to `node`, at the state `query` names, or as each left it). ValueError,
    with a sentence, for a command or node that is not one."""
    if name not in COMMANDS:
        raise ValueError(f"There is no command {str(name)[:40]!r}.")
    if name in ("pace", "follow") and node not in (*nodes, *([""] if name == "pace" else [])):
        raise ValueError("That is not a node of this lesson.")
    query = follow_query(query) if name == "follow" else ""

    def change(old: str | None) -> str:
        now = ClassState.from_json(old)
        if name in ("pause", "resume"):
            return dataclasses.replace(now, paused=name == "pause").to_json()
        if name == "pace":
            return dataclasses.replace(now, pace=node).to_json()
        return dataclasses.replace(now, follow=Follow(now.follow.seq + 1, node, query)).to_json()

    return ClassState.from_json(store.update_meta(NAME, change))


class Memo:
    """This process's class state, read from the store at most every MEMO_S (a class's polls
    cost one small read per process and MEMO_S, however many students)."""

    def __init__(self, clock=time.monotonic):
        self.clock, self._lock = clock, threading.Lock()
        self._at, self._state = -1e18, ClassState()

    def get(self, store: Store) -> ClassState:
        with self._lock:
            if self.clock() - self._at >= MEMO_S:
                self._state, self._at = current(store), self.clock()
            return self._state

    def forget(self) -> None:
        with self._lock:
            self._at = -1e18
