"""The timeline memo: what each state of a scenario gave, kept once per process.

A state is named by its engine config and its operations (kvviz/timeline.py). Reaching it gave
a result (the last operation's), whether work remained, and a snapshot: the same for every
session that reaches it. `MEMO` keeps them in a bounded LRU so forty students pressing the same
buttons compute each state once.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass

from engine import Snapshot


@dataclass
class Outcome:
    """What reaching a state by one operation gave: the operation's result, whether a step
    would do anything there, and (once asked for) the state's snapshot."""

    result: object
    has_work: bool
    snapshot: Snapshot | None = None


class Memo:
    """A process-wide, bounded map from (config, ops) to the Outcome of the last op."""

    def __init__(self, capacity: int):
        self.capacity, self.hits, self.misses = capacity, 0, 0
        self._items: OrderedDict[tuple, Outcome] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Outcome | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple, outcome: Outcome) -> None:
        if self.capacity == 0:
            return
        with self._lock:
            self._items[key] = outcome
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


def memo_capacity(environ=os.environ) -> int:
    """KVVIZ_TIMELINE_MEMO: how many states a process keeps (0 turns the memo off); default 3000,
    a few tens of MB of snapshots at most."""
    text = environ.get("KVVIZ_TIMELINE_MEMO", "")
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 6 else 3000


MEMO = Memo(capacity=memo_capacity())
