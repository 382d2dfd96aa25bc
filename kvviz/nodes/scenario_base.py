"""What every node's scenario shares: the pool's block size, the model, and copying.

A scenario is plain Python on top of the engine (no UI): one or more `Timeline`s, set up with
the lesson's requests. Every figure a node shows is read from these engines' snapshots.
"""

from __future__ import annotations

import copy
import threading

from engine import Snapshot
from kvviz.timeline import Timeline

BLOCK_SIZE = 16
WEIGHTS = "trained"  # the tiny model in assets/, trained so its continuations are readable


def max_new_for(prompt: str, kv_tokens: int) -> int:
    """max_new_tokens that leaves exactly `kv_tokens` tokens of KV (the last token gets none)."""
    return kv_tokens + 1 - len(prompt.encode())


def copy_scenario(scenario):
    """An independent copy of a scenario (its timelines cloned with `Timeline.clone`, which
    shares only the read-only model); it behaves exactly as the original would from here on."""
    return copy.deepcopy(scenario, {id(t): t.clone() for t in scenario.timelines})


_PROTOTYPES: dict[tuple, object] = {}
_PROTOTYPES_LOCK = threading.Lock()


def new_scenario(factory, *args):
    """A new scenario `factory(*args)`: built once per process, then copied for each session
    (same engines, same tokens, same block ids; only the model weights are shared)."""
    key = (factory, args)
    with _PROTOTYPES_LOCK:
        if key not in _PROTOTYPES:
            _PROTOTYPES[key] = factory(*args)
        prototype = _PROTOTYPES[key]
        # (its engines are never run again, only copied: each copy copies one when it first runs it)
        return copy.deepcopy(prototype, {id(t): t.fork() for t in prototype.timelines})


class OnePool:
    """A scenario with a single pool (`self.timeline`)."""

    timeline: Timeline

    def snapshot(self) -> Snapshot:
        return self.timeline.snapshot()

    @property
    def timelines(self) -> tuple[Timeline, ...]:
        return (self.timeline,)
