"""Run as a script (tests/export/test_walk.py): in a process whose main thread is its only thread,
as `python -m kvviz.export.cache` is, `walk.forked` refuses to fork from another thread or beside
an unknown thread. Then, as the recording does, Explain it back's self-checks are made first,
keeping every step's snapshot, and two workers are forked: their walk of node 03's two branches,
in two pieces, prints the same states as one walk of them here, and neither walk runs the engine
(the steps counted in this process, and in the workers, forked with the count)."""

from __future__ import annotations

import json
import multiprocessing
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from test_walk import states  # noqa: E402

from engine.engine import Engine  # noqa: E402
from kvviz.export import checks, walk  # noqa: E402
from kvviz.export.recipes import recipes  # noqa: E402
from kvviz.lesson import Lesson  # noqa: E402
from kvviz.timeline import eager_snapshots  # noqa: E402

# Engine steps taken here and in the workers (forked: they share it), counted by Engine.step.
STEPS = multiprocessing.Value("i", 0)


def _counting(step):
    def counted(self):
        with STEPS.get_lock():
            STEPS.value += 1
        return step(self)
    return counted


def beside(name: str) -> object:
    """What `forked(2)` gives while a thread called `name` waits."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, name=name)
    other.start()
    try:
        return walk.forked(2)
    finally:
        stop.set()
        other.join()


def main() -> None:
    assert threading.active_count() == 1, threading.enumerate()
    from_thread: list[object] = []
    t = threading.Thread(target=lambda: from_thread.append(walk.forked(2)))
    t.start()
    t.join()
    refused = {"from a thread": from_thread[0] is None, "beside another": beside("other") is None}
    kept = beside("kvviz-parent-watch")  # (the cache's watch on its server: safe to fork beside)
    assert kept is not None
    kept.shutdown()
    with eager_snapshots():  # (kvviz/export/site.py: before the workers are forked)
        checks.meta(Lesson({}).states, recipes())
    Engine.step = _counting(Engine.step)  # type: ignore[method-assign]
    branches = {"radix": ["s0", "s1"]}
    walk.PIECE["radix"] = 2
    whole = walk.walk_all(branches, workers=1)["radix"]
    walk.PIECE["radix"] = 1
    pool = walk.forked(2)
    apart = walk.walk_all(branches, workers=2, pool=pool)["radix"]
    both = {tuple(p) for p in whole[1]} & {tuple(p) for p in apart[1]}
    same = all([{p: v for p, v in s.items() if p in both} for s in a] ==
               [{p: v for p, v in s.items() if p in both} for s in b]
               for a, b in zip(states(*whole).values(), states(*apart).values(), strict=True))
    print(json.dumps({**refused, "forked": pool is not None, "same states": same,
                      "same steps": apart[0].steps == whole[0].steps,
                      "engine steps walking": STEPS.value,
                      "states": sum(len(r) for r in apart[0].branches.values())}))


if __name__ == "__main__":
    main()
