"""kvviz/export/lanes.py: the recording's worker processes, each node's work in one of them."""

from __future__ import annotations

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
