"""Run as a script (tests/export/test_walk.py): in a process whose main thread is its only thread,
as `python -m kvviz.export.cache` is, `walk.forked` refuses to fork from another thread or beside
an unknown thread. Then, as the recording does, two workers are forked and walk nodes 01 and 03,
each node in one worker, which first makes the node's facts (its self-checks and predictions,
keeping every step's snapshot): their walk prints the same states as one walk of them here, the
facts equal those made here, and the walks run no engine step (the steps counted in the workers,
forked with the count, while they walk a piece)."""

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
from kvviz.export.player import predictions  # noqa: E402
from kvviz.export.recipes import recipes  # noqa: E402
from kvviz.lesson import Lesson  # noqa: E402

# Engine steps taken here and in the workers (forked: they share it), counted by Engine.step; and
# those a process took while it walked a piece (MINE: each process's own count).
STEPS = multiprocessing.Value("i", 0)
WALKING = multiprocessing.Value("i", 0)
MINE = [0]


def _counting(step):
    def counted(self):
        MINE[0] += 1
        with STEPS.get_lock():
            STEPS.value += 1
        return step(self)
    return counted


def _counting_walks(walk_piece):
    def counted(self, piece):
        before = MINE[0]
        try:
            return walk_piece(self, piece)
        finally:
            with WALKING.get_lock():
                WALKING.value += MINE[0] - before
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
    kept.close()
    Engine.step = _counting(Engine.step)  # type: ignore[method-assign]
    walk._Worker.walk = _counting_walks(walk._Worker.walk)  # type: ignore[method-assign]
    branches = {"fragmentation": ["r1f0", "r2f0", "r3f0", "r4f0", "r5f0"], "radix": ["s0", "s1"]}
    walk.PIECE.update(radix=1, fragmentation=2)
    facts = [walk.Facts(k, True, True) for k in branches]
    got: dict[str, dict] = {}
    pool = walk.forked(2)  # (before any engine ran here: the workers' memos are their own)
    apart = walk.walk_all(branches, workers=2, pool=pool, facts=facts,
                          on_facts=lambda key, made: got.__setitem__(key, made))
    facts_steps, walking_steps = STEPS.value, WALKING.value
    states_here = Lesson({}).states
    plan = recipes()
    same_facts = all(got[k] == {"checks": checks.node_meta(states_here, k, plan[k]),
                                "predict": predictions(Lesson({}).states[k], plan[k])} for k in branches)
    whole = walk.walk_all(branches, workers=1)
    same = True
    for key in branches:
        both = {tuple(p) for p in whole[key][1]} & {tuple(p) for p in apart[key][1]}
        same = same and all([{p: v for p, v in s.items() if p in both} for s in a] ==
                            [{p: v for p, v in s.items() if p in both} for s in b]
                            for a, b in zip(states(*whole[key]).values(), states(*apart[key]).values(),
                                            strict=True))
    print(json.dumps({**refused, "forked": pool is not None, "same states": same,
                      "same steps": all(apart[k][0].steps == whole[k][0].steps for k in branches),
                      "same facts": same_facts, "engine steps making facts": facts_steps,
                      "engine steps walking": walking_steps,
                      "states": sum(len(r) for k in branches for r in apart[k][0].branches.values())}))


if __name__ == "__main__":
    main()
