"""A class server process's memory housekeeping (kvviz/process/memory.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_the_collector_is_tuned_once_per_process_and_still_collects_cycles():
    """In a fresh interpreter (freezing objects would reach into the test process): the first
    call freezes what exists and sets the thresholds, a second does nothing, a full collection
    (not a younger one) hands memory back, and a reference cycle made afterwards is still freed."""
    code = textwrap.dedent("""
        import gc, weakref
        from kvviz.process import memory
        assert memory.tune_gc() and not memory.tune_gc()
        assert gc.get_threshold() == memory.GC_THRESHOLDS and gc.get_freeze_count() > 1000
        trims = []
        memory.give_back = lambda: trims.append(1)
        gc.collect(1)
        assert not trims
        gc.collect()
        assert trims == [1]
        class Node: pass
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
