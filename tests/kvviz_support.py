"""Helpers shared by the lesson-state tests (tests/test_kvviz_*.py): what the play timer does.
(Snapshots compare without their wall-clock figure, `Metrics.prefill_seconds`: plain `==` works.)"""

from __future__ import annotations


def play_until_idle(state) -> int:
    """What the play timer does after Add request: tick until playing stops; the ticks taken."""
    n = 0
    while state.playing:
        state.tick()
        n += 1
        assert n < 500, "still playing after 500 ticks"
    return n
