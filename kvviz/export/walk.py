"""Walking the lesson's nodes on every core: a recording's walks (kvviz/export/record.py) made in
worker processes, a few branches each, and put together.

A node's walk is the slow part of a recording (each state is drawn by the node's real view: a few
milliseconds each, some two thousand states in all). Branches are independent: each starts from
the node's default state and goes back to it. So the walks are cut into pieces (`pieces`: a node
and some of its branches), each piece is walked by a worker process in a document of its own
holding only that node's view, and the pieces of a node are joined (`join`). A worker names each
property by its model's place in the node's `model_order` (the same in every process, as the live
frames use it) and says the value each property had before its walk: a property that one piece
never changes held that value in every state of that piece (its own process's: a measured time,
such as node 03's prefill time, is the walking process's).

Each node's work is done in one worker (its lane: kvviz/export/lanes.py), which first makes the
node's `Facts` (what its pages need besides the walk: Explain it back's self-checks about it and
its predictions), running the node's engine through every branch with every step's snapshot kept:
its walk then draws each state without running the engine again, and builds the node's view once.

`walk_all` returns each node's `Walked`, which the page writer reuses as it reuses a served
recording's walks (kvviz/export/site.py).
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from typing import Any

from bokeh.document import Document

from kvviz.export.lanes import LIGHTER_NICE, Lanes, assign
from kvviz.export.page_models import classes, model_order, node_column, page_config, state_link
from kvviz.export.record import Reader, Recording, Values, record

# Branches per piece, by node: a piece is a few seconds of one core (node 01's 32 branches are
# short). Node 02's nine in one piece: each Add request's branch continues the one before, whose
# states before that add it copies (`Rows.walk_back`'s joins) rather than draw them again.
PIECE = {"fragmentation": 4, "paging": 9, "radix": 2}
# A node's work in a recording, in CPU seconds of one process (its self-checks, its predictions and
# its walk, measured 2026-12-07 on this project's 2-core machine): how the nodes are shared out
# between the workers (`lanes.assign`), each node's work in one of them.
WEIGHT = {"fragmentation": 3.4, "paging": 2.6, "radix": 0.7}


@dataclass
class Piece:
    key: str  # the node
    branches: list[str]  # some of its recipe's branches, in the recipe's order


def pieces(branches_of: dict[str, list[str]]) -> list[Piece]:
    """Every node's branches cut into pieces of `PIECE[key]` (default 2), in the nodes' and the
    branches' order."""
    out = []
    for key, names in branches_of.items():
        size = PIECE.get(key, 2)
        out += [Piece(key, names[i:i + size]) for i in range(0, len(names), size)]
    return out


@dataclass
class Facts:
    """What the pages need of a node besides its walk, made in the process that walks it."""

    key: str  # the node
    checks: bool  # Explain it back's self-checks about it (kvviz/export/checks.py `node_meta`)
    predict: bool  # its predictions (a served page's: kvviz/export/player.py `predictions`)


class _Worker:
    """A worker process's node views: one document per node, built on the node's first piece."""

    def __init__(self) -> None:
        # key -> (state, document, places, its properties kept current from one piece to the next)
        self.views: dict[str, tuple[Any, Document, dict[str, int], Reader]] = {}

    def walk(self, piece: Piece) -> dict[str, Any]:
        """One piece's walk, under the page's settings (`page_config`: the same models, in the same
        order, as the page is built; drawn at once, whatever document the caller has current)."""
        with page_config():
            return self._walk(piece)

    def _walk(self, piece: Piece) -> dict[str, Any]:
        from kvviz.export.recipes import recipes
        from kvviz.lesson import Lesson

        recipe = recipes()[piece.key]
        if piece.key not in self.views:
            import panel as pn

            lesson = Lesson({})
            doc = Document()
            column = node_column(lesson, piece.key)
            doc.add_root(pn.Column(column, sizing_mode="stretch_width", margin=0).get_root(doc))
            view = next(m for m in doc.models
                        if f"kv-recorded-{piece.key}" in classes(m))
            place: dict[str, int] = {m.id: i for i, m in enumerate(model_order(view))}
            self.views[piece.key] = (lesson.states[piece.key], doc, place, Reader(doc))
        state, doc, place, kept = self.views[piece.key]

        def reset() -> None:
            recipe.branches[recipe.default](state)

        # every property of the node's models before this piece's walk: a state of the piece that
        # did not change one had this value (measured ones, such as node 03's prefill time, are
        # this process's own: each piece is true to the process that walked it)
        # (every model's: the recording's reader starts from them. Read once per node and process,
        # then kept current by the document's change events: reading every property of every
        # model again for each piece was a tenth of a walk)
        kept.read()
        kept.follow(doc.models)
        now = dict(kept.now)
        before = {f"{place[mid]}.{attr}": v for (mid, attr), v in now.items() if mid in place}
        rec = record(doc, state, {name: recipe.branches[name] for name in piece.branches}, reset,
                     state_link(piece.key), now,
                     continues={b: a for b, (a, _act) in recipe.key_actions.items()})
        changed = {f"{place[mid]}.{attr}" for mid, attr in rec.props}
        return {"props": [[place[mid], attr] for mid, attr in rec.props], "values": rec.values,
                "branches": rec.branches, "steps": rec.steps, "links": rec.links,
                "before": {k: v for k, v in before.items() if k not in changed}}


_WORKER: _Worker | None = None


def _worker() -> _Worker:
    """This process's views (a worker's: its torch on one thread, as the server's)."""
    global _WORKER
    if _WORKER is None:
        import torch

        torch.set_num_threads(1)
        _WORKER = _Worker()
    return _WORKER


def walk_piece(piece: Piece) -> dict[str, Any]:
    """Walk one piece in this process (a worker's task)."""
    return _worker().walk(piece)


def node_facts(task: Facts) -> dict[str, Any]:
    """A node's `Facts` made in this process (a worker's task, before the node's pieces): they run
    the node's engine through every branch, keeping each step's snapshot (`eager_snapshots`), which
    the node's walk in this process then finds made (kvviz/timeline_memo.py): no engine step twice."""
    from kvviz.export import checks
    from kvviz.export.player import predictions
    from kvviz.export.recipes import recipes
    from kvviz.lesson import Lesson
    from kvviz.timeline import eager_snapshots

    _worker()
    recipe = recipes()[task.key]
    out: dict[str, Any] = {}
    with eager_snapshots():  # (from the lesson's start: its nodes' first states are run as it is made)
        states = Lesson({}).states  # (with no view)
        if task.checks:
            out["checks"] = checks.node_meta(states, task.key, recipe)
        if task.predict:
            out["predict"] = predictions(states[task.key], recipe)
    return out


def join(walks: list[dict[str, Any]]) -> tuple[Recording, list[list[Any]]]:
    """The pieces of one node's walk (in their branches' order) as one recording, its properties
    named by place: (recording with `props` as [place, name], those places). A property one piece
    changed and another did not holds, in the other's states, the value it had there before."""
    stored = Values()
    order: list[tuple[int, str]] = []
    seen: set[tuple[int, str]] = set()
    for w in walks:  # every property any piece changed, in the order first changed
        for place, attr in w["props"]:
            if (place, attr) not in seen:
                seen.add((place, attr))
                order.append((place, attr))
    rec = Recording(props=[list(p) for p in order], values=stored.values)
    for w in walks:
        mine = {(place, attr): i for i, (place, attr) in enumerate(w["props"])}
        held = {p: stored.intern(w["before"][f"{p[0]}.{p[1]}"]) for p in order if p not in mine}
        for name, rows in w["branches"].items():
            rec.branches[name] = [[stored.intern(w["values"][row[mine[p]]]) if p in mine else held[p]
                                   for p in order]
                                  for row in rows]
            rec.steps[name] = w["steps"][name]
            rec.links[name] = w["links"][name]
    return rec, [list(p) for p in order]


def _context() -> BaseContext:
    """How worker processes start: from a fork server where there is one (a clean process that has
    imported the lesson once, then forks each worker: quick, and safe whatever threads this
    process runs; a plain fork of a process with threads can deadlock its child), else spawned."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["torch", "panel", "kvviz.export.walk", "kvviz.export.recipes",
                                        "kvviz.lesson"])
        return context
    return multiprocessing.get_context("spawn")


# Threads that may run while `forked` forks: each only sleeps and reads its parent's pid, holding no
# lock a child could inherit held (kvviz/export/cache.py's watch on the server that started it).
FORK_SAFE_THREADS = {"kvviz-parent-watch"}


def forks(workers: int | None = None) -> bool:
    """Whether `forked(workers)` would fork workers here and now (see there)."""
    others = {t.name for t in threading.enumerate()} - {threading.main_thread().name}
    return ((workers or procs()) > 1 and sys.platform == "linux" and others <= FORK_SAFE_THREADS
            and threading.current_thread() is threading.main_thread())


def forked(workers: int | None = None) -> Lanes | None:
    """`workers` (default `procs()`) worker processes forked now from this process, which has
    imported the lesson already: they start walking at once, with nothing to import (a fork
    server imports it all again first: two seconds of a core, on the recording's critical path).
    Only on Linux, from the main thread, before any other thread starts (FORK_SAFE_THREADS aside):
    else None, and `walk_all` starts its own (`_context`). The objects made so far are frozen
    out of the collector while forking, so that a child's collections do not copy every page it
    shares with this process. What this process computed before (the engine runs its timelines
    remember: kvviz/timeline_memo.py) each worker has too."""
    import gc

    workers = workers or procs()
    if not forks(workers):
        return None
    gc.collect()
    gc.freeze()
    try:  # (each a plain fork, started here and now: a pipe each, no thread in this process)
        return Lanes(workers, multiprocessing.get_context("fork"), _nice(workers))
    finally:
        gc.unfreeze()  # (this process's; each child keeps its own frozen)


def _nice(workers: int) -> list[int]:
    """Each lane's lowered priority: lane 0, the most loaded, yields to no other (`lanes.assign`)."""
    return [0] + [LIGHTER_NICE] * (workers - 1)


def procs() -> int:
    """Worker processes: one per core (KVVIZ_RECORD_PROCS overrides; 1: walk here, no workers)."""
    wanted = os.environ.get("KVVIZ_RECORD_PROCS", "")
    return max(1, int(wanted)) if wanted.isdigit() else max(1, os.cpu_count() or 1)


Walk = tuple[Recording, list[list[Any]]]  # a node's walk: the recording, its properties' places


# No task done for this long: the workers are stuck (a recording started by a server stopped once
# at 13 of 22 pieces, using no CPU, for good). A piece takes a few seconds; the tasks left are then
# done again by new workers, once.
STALL_S = 120.0

Task = tuple[int, Callable[[Any], Any], Any]  # (lane, the function a worker runs, its argument)


def _in_workers(tasks: dict[Any, Task], left: list[Any], lanes: Lanes,
                finished: Callable[[Any, Any], None]) -> list[Any]:
    """Do the tasks `left` (keys of `tasks`, each on its lane, in this order) on `lanes`; returns
    the keys of those left undone because no task was done for STALL_S (the workers are killed)."""
    for tag in left:
        lane, fn, arg = tasks[tag]
        lanes.put(lane % len(lanes), tag, fn, arg)
    try:
        while lanes.pending():
            done = lanes.results(STALL_S)
            if not done:
                return lanes.pending()
            for tag, value in done:
                finished(tag, value)
        lanes.close()
        return []
    finally:
        lanes.kill()


def walk_all(branches_of: dict[str, list[str]], on_done: Callable[[int, int], None] = lambda d, t: None,
             workers: int | None = None,
             on_node: Callable[[str, Walk], None] = lambda key, w: None,
             work: Callable[[Piece], dict[str, Any]] = walk_piece,
             pool: Lanes | None = None, facts: Sequence[Facts] = (),
             on_facts: Callable[[str, dict[str, Any]], None] = lambda key, made: None) -> dict[str, Walk]:
    """Every node's walk (`branches_of`: node -> its branches, in order), made by `workers`
    processes (default `procs()`; started by `_context()`), and the `facts` of some nodes; each
    node's in one process, its facts first (`lanes.assign` by WEIGHT). `on_done(done, total)`
    after each piece, `on_facts(node, made)` as soon as a node's facts are made, `on_node(node,
    its walk)` as soon as a node's pieces are all done (a caller in another thread can use them
    meanwhile). Returns node -> (recording, its places), as `join` makes them. `work`: what a
    worker process runs for a piece (`walk_piece`; a test's stand-in). `pool`: workers already
    started (`forked`), used instead of new ones, and ended at the end. Stuck workers (STALL_S)
    are replaced once, by new ones; stuck again, the walk fails with a sentence."""
    todo = pieces(branches_of)
    keys = list(dict.fromkeys([*(f.key for f in facts), *branches_of]))
    workers = min(pool and len(pool) or workers or procs(), len(todo) + len(facts))
    lane = assign({k: WEIGHT.get(k, 1.0) for k in keys}, max(1, workers))
    done: dict[int, dict[str, Any]] = {}
    out: dict[str, Walk] = {}
    # every task by its tag, each node's facts first, then its pieces (the last first: a node's later
    # branches are its longer ones)
    tasks: dict[Any, Task] = {}
    for key in keys:
        for f in (f for f in facts if f.key == key):
            tasks[("facts", key)] = (lane[key], node_facts, f)
        tasks.update({("piece", i): (lane[key], work, todo[i])
                      for i in reversed(range(len(todo))) if todo[i].key == key})

    def finished(tag: Any, made: Any) -> None:
        if tag[0] == "facts":
            on_facts(tag[1], made)
            return
        i = tag[1]
        done[i] = made
        on_done(len(done), len(todo))
        key = todo[i].key
        mine = [j for j, p in enumerate(todo) if p.key == key]
        if all(j in done for j in mine):
            out[key] = join([done[j] for j in mine])
            on_node(key, out[key])

    if workers <= 1:
        if pool is not None:  # (not needed after all)
            pool.close()
        here = _Worker()  # (views of this call's own, not those an earlier walk here left)
        for tag, (_lane, fn, arg) in tasks.items():
            finished(tag, here.walk(arg) if fn is walk_piece else fn(arg))
    else:
        left = _in_workers(tasks, list(tasks), pool or Lanes(workers, _context(), _nice(workers)), finished)
        if left:  # (stuck: once more, on new workers)
            left = _in_workers(tasks, left, Lanes(workers, _context(), _nice(workers)), finished)
        if left:
            pieces_left = sum(tag[0] == "piece" for tag in left)
            raise RuntimeError(f"The recording's workers stopped twice with {pieces_left} of {len(todo)} "
                               f"pieces left (no piece done in {STALL_S:.0f} s).")
    return {key: out[key] for key in branches_of}


def as_walked(nodes: list[Any], ready: queue.Queue[tuple[str, Walk]],
              walking: Future[dict[str, Walk]]) -> Iterator[tuple[Any, Walk]]:
    """Each of `nodes` (anything with a `key`) with its walk, as soon as `ready` has it (`walk_all`'s
    `on_node` puts them there, from the thread `walking` runs it in); a walk's error is raised here."""
    waited = list(nodes)
    while waited:
        try:
            key, made = ready.get(timeout=1)
        except queue.Empty:
            if walking.done():
                walking.result()  # (a worker's error)
                raise RuntimeError("the walks ended without every node") from None
            continue
        yield from ((n, made) for n in waited if n.key == key)
        waited = [n for n in waited if n.key != key]
