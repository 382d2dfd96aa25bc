"""Worker processes with affinity: each runs the tasks given to it, one at a time, in order.

A recording's work on a node is cheapest in one process: its self-checks run the node's engine
through every branch (kept in the process's memo: kvviz/timeline_memo.py), and its walk then finds
every state made and draws each in the node's view, built once in that process. So each node has
a lane (`assign`: the nodes by weight, each to the least loaded), and a lane's tasks go to its own
process. A process pool sends a task to whichever worker is free, losing both.

`Lanes(n, context)` starts n processes (forked, when the caller may fork: kvviz/export/walk.py
`forked`). `put(lane, tag, fn, arg)` queues `fn(arg)` on a lane; `results(timeout)` waits for what
is done: (tag, value) each, the worker's error raised here. One task is in a process at a time
(the next is sent when it answers): a pipe never holds more than one task and one answer each way.
A lane may run at a lower priority (`nice`): the recording's lighter lanes yield to its heaviest,
whose end is the recording's end while the page writer also wants a core (`LIGHTER_NICE`: none
while the lanes are even). A process that must
stop (`kill`) is ended whatever it is doing. (A lane with nothing left does not take another
lane's tasks: tried, a piece of another node cost it that node's views and the engine runs its
own lane had made, ~0.9 s of a core for a piece of 0.1 s, and the recording ended no sooner.)
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any


def assign(weights: dict[str, float], lanes: int) -> dict[str, int]:
    """Each key's lane: the heaviest first, each to the lane least loaded so far (ties: the first).
    Lane 0 is then the most loaded."""
    load = [0.0] * max(1, lanes)
    out: dict[str, int] = {}
    for key in sorted(weights, key=lambda k: -weights[k]):
        lane = min(range(len(load)), key=load.__getitem__)
        out[key] = lane
        load[lane] += weights[key]
    heaviest = sorted(range(len(load)), key=lambda i: (-load[i], i))  # (renumbered: the most loaded 0)
    return {key: heaviest.index(lane) for key, lane in out.items()}


# How much lower the priority of every lane but the first (the most loaded: `assign`) is. Measured
# (2026-12-07, 2 cores, the first recording, side by side): while node 02 alone was the heaviest
# lane, 0 → 11.5 s median, 5 → 11.0 s; with the lanes even (node 02's joins), 5 → 8.2 s, 0 → 7.8 s
# (6 rounds).
LIGHTER_NICE = 0


def exit_with_parent(name: str, parent: int | None = None) -> None:
    """This process ends (`os._exit(1)`) when its parent is no longer `parent` (default: its parent
    now), checked each second by a daemon thread called `name`: at once where it is another already
    (the one that forked it ended before this began)."""
    parent = os.getppid() if parent is None else parent

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=watch, name=name, daemon=True).start()


def _serve(conn: Connection, nice: int = 0, parent: int | None = None) -> None:
    """A lane's process: run each task it is sent, answer (True, value) or (False, the error);
    `nice`: its priority lowered by that much first. It ends with the process that started it: a
    recording stopped with its server ends at once (`os._exit`: kvviz/export/cache.py), and its pipe
    would not tell this one (a forked worker holds copies of its parent's ends of the pipes, so no
    end of file comes), which then waited for good, holding the recording's lock file: every later
    start of the same code waited for it, at 1 of 14. `parent`: the pid of the process that forked
    it (None: a fork server's or a spawned worker, whose parent is the one it has now)."""
    exit_with_parent("kvviz-lane-watch", parent)
    if nice > 0:
        os.nice(nice)
    while True:
        task = conn.recv()
        if task is None:
            return
        fn, arg = task
        try:
            answer: tuple[bool, Any] = (True, fn(arg))
        except BaseException as e:  # (sent back, raised in the caller)
            answer = (False, e)
        conn.send(answer)


class Lanes:
    """`n` worker processes, each with its own queue of tasks (`nice`: each one's lowered priority)."""

    def __init__(self, n: int, context: Any, nice: Sequence[int] = ()):
        """`context`: a multiprocessing context (its `Pipe` and `Process`)."""
        self.conns: list[Connection] = []
        self.procs: list[Any] = []
        forker = os.getpid() if context.get_start_method() == "fork" else None
        for i in range(n):
            mine, theirs = context.Pipe()
            lower = nice[i] if i < len(nice) else 0
            proc = context.Process(target=_serve, args=(theirs, lower, forker), name=f"kvviz-lane-{i}",
                                   daemon=True)
            proc.start()
            theirs.close()
            self.conns.append(mine)
            self.procs.append(proc)
        self.queued: list[deque[tuple[Any, Callable[[Any], Any], Any]]] = [deque() for _ in range(n)]
        self.busy: list[Any] = [None] * n  # the tag of the task each process runs (None: idle)

    def __len__(self) -> int:
        return len(self.conns)

    def put(self, lane: int, tag: Any, fn: Callable[[Any], Any], arg: Any) -> None:
        """Queue `fn(arg)` (both picklable by reference) on `lane`, known as `tag`."""
        self.queued[lane].append((tag, fn, arg))
        self._feed(lane)

    def _feed(self, lane: int) -> None:
        if self.busy[lane] is None and self.queued[lane]:
            tag, fn, arg = self.queued[lane].popleft()
            self.conns[lane].send((fn, arg))
            self.busy[lane] = tag

    def pending(self) -> list[Any]:
        """The tags of the tasks not answered yet: running, then queued, lane by lane."""
        out = []
        for lane in range(len(self)):
            running = [self.busy[lane]] if self.busy[lane] is not None else []
            out += running + [task[0] for task in self.queued[lane]]
        return out

    def results(self, timeout: float) -> list[tuple[Any, Any]]:
        """(tag, value) of each task answered within `timeout` seconds (none: []); each lane's next
        task is sent at once. A task's error is raised here; a process that died is an error."""
        running = [c for lane, c in enumerate(self.conns) if self.busy[lane] is not None]
        out = []
        for ready in wait(running, timeout=timeout) if running else []:
            lane = self.conns.index(ready)  # type: ignore[arg-type]
            conn = self.conns[lane]
            try:
                ok, value = conn.recv()
            except EOFError:
                self.procs[lane].join(timeout=5)
                raise RuntimeError(f"a recording's worker process ended (exit code "
                                   f"{self.procs[lane].exitcode}) during {self.busy[lane]!r}") from None
            if not ok:
                raise value if isinstance(value, BaseException) else RuntimeError(str(value))
            out.append((self.busy[lane], value))
            self.busy[lane] = None
            self._feed(lane)
        return out

    def close(self) -> None:
        """Let each process end, once its task is done."""
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.send(None)
        for proc in self.procs:
            proc.join(timeout=10)
        self.kill()

    def kill(self) -> None:
        """End every process now (those ended already: nothing)."""
        for proc in self.procs:
            if proc.is_alive():
                proc.kill()
            proc.join(timeout=10)
        for conn in self.conns:
            conn.close()

