"""Helpers shared by the lesson-state tests (tests/test_kvviz_*.py): a hostile prompt, snapshot
comparison without wall-clock time, and what the play timer does."""

from __future__ import annotations

import dataclasses

HOSTILE = "<img src=x onerror=alert(1)>"


def same_state(a, b) -> bool:
    """Two snapshots equal but for wall-clock time."""
    def strip(s):
        return dataclasses.replace(s, metrics=dataclasses.replace(s.metrics, prefill_seconds=0.0))
    return strip(a) == strip(b)


def play_until_idle(state) -> int:
    """What the play timer does after Add request: tick until playing stops; the ticks taken."""
    n = 0
    while state.playing:
        state.tick()
        n += 1
        assert n < 500, "still playing after 500 ticks"
    return n
