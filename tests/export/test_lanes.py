"""kvviz/export/lanes.py: the recording's worker processes, each node's work in one of them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.export import lanes, walk


@given(st.dictionaries(st.text(min_size=1, max_size=3), st.floats(0.1, 10.0), min_size=1, max_size=8),
       st.integers(1, 4))
@settings(max_examples=200, deadline=None)
def test_each_key_goes_to_one_lane_and_lane_0_is_the_most_loaded(weights, n):
    lane = lanes.assign(weights, n)
    assert set(lane) == set(weights) and all(0 <= lane[k] < n for k in weights)
    load = [sum(w for k, w in weights.items() if lane[k] == i) for i in range(n)]
    assert load[0] == max(load)
    # (the greedy order's bound: no lane more than the heaviest key above the least loaded)
    assert max(load) - min(load) <= max(weights.values()) + 1e-9


def test_the_recording_s_nodes_share_two_lanes_as_measured():
    """Node 01 (the heaviest, since node 02's branches copy what they share) alone; nodes 02 and 03
    together."""
    lane = lanes.assign(walk.WEIGHT, 2)
    assert lane["fragmentation"] == 0 and lane["paging"] == lane["radix"] == 1


def _all(pool: lanes.Lanes) -> list:
    out = []
    while pool.pending():
        got = pool.results(60)
        assert got, "no task done in 60 s"
        out += got
    return out


def test_a_lane_s_tasks_run_in_its_own_process_in_order_at_its_own_priority():
    from walk_stand_ins import whose

    pool = lanes.Lanes(2, walk._context(), [0, 5])
    try:
        for i in range(6):
            pool.put(i % 2, ("task", i), whose, i)
        done = _all(pool)
    finally:
        pool.close()
    by_lane = {lane: [(tag, value) for tag, value in done if tag[1] % 2 == lane] for lane in (0, 1)}
    for lane, got in by_lane.items():
        assert [tag[1] for tag, _value in got] == [lane, lane + 2, lane + 4]  # (in the order put)
        assert len({value[0] for _tag, value in got}) == 1  # (one process)
    pid0, pid1 = by_lane[0][0][1][0], by_lane[1][0][1][0]
    assert pid0 != pid1
    assert by_lane[1][0][1][2] - by_lane[0][0][1][2] == 5
    assert not any(p.is_alive() for p in pool.procs)


def test_a_task_s_error_is_raised_here_and_a_process_that_dies_is_said():
    from walk_stand_ins import dies, fails

    pool = lanes.Lanes(1, walk._context())
    try:
        pool.put(0, "bad", fails, "x")
        with pytest.raises(ValueError, match="no such thing as x"):
            _all(pool)
    finally:
        pool.kill()
    pool = lanes.Lanes(1, walk._context())
    try:
        pool.put(0, "gone", dies, None)
        with pytest.raises(RuntimeError, match=r"worker process ended \(exit code 3\) during 'gone'"):
            _all(pool)
    finally:
        pool.kill()


ORPHANED = """
import multiprocessing, os
from kvviz.export.lanes import Lanes
pool = Lanes(2, multiprocessing.get_context("fork"))
print(" ".join(str(p.pid) for p in pool.procs), flush=True)
os._exit(1)  # (as a recording stopped with its server ends: kvviz/export/cache.py, no clean-up)
"""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked lanes are Linux's (walk.forks)")
def test_the_workers_end_when_the_process_that_started_them_ends_without_closing_them():
    """A recording ended with its server (`os._exit`, no `close`) left its forked workers waiting
    on their pipes for good: each holds a copy of its parent's ends, so no end of file comes, and
    the recording's lock file with them, so every later start of the same code waited at 1 of 14."""
    proc = subprocess.Popen([sys.executable, "-c", ORPHANED], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[2])
    pids = [int(p) for p in proc.stdout.readline().split()]  # (its workers hold its stdout too: no EOF)
    proc.wait(timeout=60)
    proc.stdout.close()
    assert len(pids) == 2
    deadline = time.monotonic() + 10
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in pids if _running(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert left == []
