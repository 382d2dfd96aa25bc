"""The recording's walks on every core (kvviz/export/walk.py): a node's branches walked in
pieces, in worker processes, and joined, are the same states as one walk of them all."""

from __future__ import annotations

import re

import pytest

from kvviz.export import walk
from kvviz.export.record import Recording

# (node 03's prefill time, "25.5 ms" or, on a busy machine, "1.12 s" (kvviz/formatting.py
# `seconds`): this machine's clock, not the same twice)
MEASURED = re.compile(r"\d+(?:\.\d+)? ms|\d+\.\d\d s\b")


def states(rec: Recording, places: list[list]) -> dict[str, list[dict]]:
    """Each branch's states as {(place, property): value}: what the page plays, whatever the order
    of the properties and values (a wall time measured in the walk left out)."""
    def same(value):
        return MEASURED.sub("…", value) if isinstance(value, str) else value

    return {name: [{tuple(p): same(rec.values[i]) for p, i in zip(places, row, strict=True)} for row in rows]
            for name, rows in rec.branches.items()}


def test_pieces_cut_each_nodes_branches_in_order():
    cut = walk.pieces({"fragmentation": [f"b{i}" for i in range(10)], "radix": ["s0", "s1"],
                       "other": list("abc")})
    assert [(p.key, p.branches) for p in cut] == [
        ("fragmentation", ["b0", "b1", "b2", "b3"]), ("fragmentation", ["b4", "b5", "b6", "b7"]),
        ("fragmentation", ["b8", "b9"]), ("radix", ["s0", "s1"]), ("other", ["a", "b"]), ("other", ["c"])]


def test_join_fills_a_property_a_piece_never_changed_with_its_value_before():
    one = {"props": [[0, "text"]], "values": ["before", "after"], "branches": {"x": [[1]]},
           "steps": {"x": [3]}, "links": {"x": "q=1"}, "before": {"2.data": "old"}}
    other = {"props": [[2, "data"]], "values": ["new"], "branches": {"y": [[0]]}, "steps": {"y": [5]},
             "links": {"y": ""}, "before": {"0.text": "its own"}}
    rec, places = walk.join([one, other])
    assert states(rec, places) == {"x": [{(0, "text"): "after", (2, "data"): "old"}],
                                   "y": [{(0, "text"): "its own", (2, "data"): "new"}]}
    assert rec.steps == {"x": [3], "y": [5]} and rec.links == {"x": "q=1", "y": ""}


@pytest.mark.slow
def test_a_branch_that_continues_another_copies_its_states_and_reads_the_same(monkeypatch):
    """Node 01's "R2 freed" branch continues its length's branch (a key action at its end): walked
    in one piece with it, its states before the free are that branch's, copied, not drawn again;
    walked apart, every one is drawn. Both read the same, state by state."""
    from kvviz.export.record import Rows

    drawn: list[int] = []
    visit = Rows.visit
    monkeypatch.setattr(Rows, "visit", lambda self, step: (drawn.append(step), visit(self, step))[1])
    # (node 02's second branch continues its first: its states before its Add request are copied)
    branches = {"fragmentation": ["r5f0", "r5f1", "r12f0", "r12f1"], "paging": ["a0", "a1"]}
    monkeypatch.setitem(walk.PIECE, "fragmentation", 4)
    monkeypatch.setitem(walk.PIECE, "paging", 2)
    joined = walk.walk_all(branches, workers=1)
    drawn_joined, drawn[:] = len(drawn), []
    monkeypatch.setitem(walk.PIECE, "fragmentation", 1)
    monkeypatch.setitem(walk.PIECE, "paging", 1)
    apart = walk.walk_all(branches, workers=1)
    for key in branches:
        assert states(*joined[key]) == states(*apart[key]), key
        assert joined[key][0].steps == apart[key][0].steps and joined[key][0].links == apart[key][0].links
    total = sum(len(rows) for key in branches for rows in apart[key][0].branches.values())
    assert len(drawn) == total and drawn_joined < total - 50, (drawn_joined, total)


@pytest.mark.slow
def test_a_node_walked_in_pieces_on_two_workers_is_the_same_as_one_walk(monkeypatch):
    branches = {"radix": ["s0", "s1"]}
    monkeypatch.setitem(walk.PIECE, "radix", 2)
    whole = walk.walk_all(branches, workers=1)["radix"]
    monkeypatch.setitem(walk.PIECE, "radix", 1)
    seen = []
    apart = walk.walk_all(branches, workers=2,
                          on_done=lambda done, total: seen.append((done, total)))["radix"]
    assert seen == [(1, 2), (2, 2)]
    # (a walk holds the properties it saw changed; one that the other does not hold kept one value
    # throughout: the value it had before, which the page has too)
    one, other = states(*whole), states(*apart)
    both = {tuple(p) for p in whole[1]} & {tuple(p) for p in apart[1]}
    assert {n: [{p: v for p, v in s.items() if p in both} for s in ss] for n, ss in one.items()} == \
           {n: [{p: v for p, v in s.items() if p in both} for s in ss] for n, ss in other.items()}
    for walked in (one, other):
        for prop in {p for ss in walked.values() for s in ss for p in s} - both:
            assert len({repr(s[prop]) for ss in walked.values() for s in ss}) == 1, prop
    assert apart[0].steps == whole[0].steps and apart[0].links == whole[0].links
    assert len(whole[0].branches["s0"]) > 10  # (a real walk: a state per engine step)



@pytest.mark.slow
def test_a_walk_without_bokeh_s_validation_records_what_one_with_it_records(monkeypatch):
    """record() turns Bokeh's property validation off while the views redraw (a check only: it
    converts none of their values): the same states as with it on, and it is on again after."""
    import contextlib

    from bokeh.core.property.bases import validation_on

    from kvviz.export import record

    branches = {"radix": ["s0", "s1"]}
    without = walk.walk_all(branches, workers=1)["radix"]
    assert validation_on()
    monkeypatch.setattr(record, "validate", lambda _on: contextlib.nullcontext())
    checked = walk.walk_all(branches, workers=1)["radix"]
    # (the same properties; the order lists each where it first changed, and node 03's measured
    # prefill time may first change at another state in another walk: `states` compares by place)
    assert states(*without) == states(*checked)
    assert sorted(map(tuple, without[1])) == sorted(map(tuple, checked[1]))
    assert without[0].steps == checked[0].steps and without[0].links == checked[0].links


def test_equal_values_are_stored_once_whether_or_not_they_share_objects():
    """A recording keeps each distinct value once: two equal values, one whose columns repeat one
    string object (a figure's cached cell looks) and one with equal strings made apart, are one."""
    from kvviz.export.record import Values

    shared = "2 / " + str(16)
    made_apart = ["2 / " + str(16) for _ in range(3)]
    assert made_apart[0] is not made_apart[1] and made_apart[0] is not shared
    stored = Values()
    one = stored.intern({"map": {"tokens": [shared] * 3, "label": [shared]}})
    other = stored.intern({"map": {"tokens": made_apart, "label": [made_apart[0]]}})
    assert one == other and len(stored.values) == 1
    assert stored.intern({"map": {"tokens": made_apart, "label": ["3 / 16"]}}) == 1


def without(walked: dict[str, list[dict]], props: set) -> dict[str, list[dict]]:
    return {name: [{p: v for p, v in row.items() if p not in props} for row in rows]
            for name, rows in walked.items()}


@pytest.mark.slow
def test_a_branch_set_up_with_its_figures_drawn_once_records_what_drawing_each_change_records(monkeypatch):
    """A branch is set up (Reset, its settings, its actions) with the figures drawn once at the end
    (kvviz/web/redraw.py's `held`): the states recorded are those of a walk that draws them at
    every change (a property that that walk alone records aside: a text changed and back)."""
    import contextlib

    from kvviz.export import record

    branches = {"radix": ["s0", "s1"], "paging": ["a0", "a1"]}
    once = walk.walk_all(branches, workers=1)
    monkeypatch.setattr(record, "held", contextlib.nullcontext)
    every = walk.walk_all(branches, workers=1)
    for key in branches:
        a, b = states(*once[key]), states(*every[key])
        # (a pane whose text a set-up changed and changed back, written at every change, is
        # recorded by that walk alone, holding one value, the page's, in every state)
        only = {p for rows in (*a.values(), *b.values()) for row in rows for p in row} - (
            {p for rows in a.values() for row in rows for p in row}
            & {p for rows in b.values() for row in rows for p in row})
        for p in only:
            assert len({repr(row[p]) for rows in (*a.values(), *b.values()) for row in rows if p in row}) == 1
        assert without(a, only) == without(b, only)


@pytest.mark.slow
def test_a_walk_under_a_served_sessions_document_records_what_a_plain_walk_records():
    """Under a served session's document a view's figures redraw on the session's next tick
    (kvviz/web/redraw.py). A walk must not inherit that from its caller (a test process, a served
    process): it walks under a document of its own with no session, and records the same states
    and the same order of first changes as a walk with no current document."""
    from types import SimpleNamespace

    from bokeh.document import Document
    from panel.io.state import set_curdoc

    class Session:  # (as Bokeh's session context looks to a view: a session that is not gone)
        session = object()
        destroyed = False
        request = SimpleNamespace(arguments={})

    served = Document()
    context = Session()
    served._session_context = lambda: context  # (how Bokeh keeps it: a weak reference)
    branches = {"radix": ["s0", "s1"]}
    plain = walk.walk_all(branches, workers=1)["radix"]
    with set_curdoc(served):
        under = walk.walk_all(branches, workers=1)["radix"]
    assert states(*plain) == states(*under)

    def unmeasured(walked):  # (node 03's prefill time may first change at another state)
        measured = {i for i, p in enumerate(walked[1])
                    if any(MEASURED.search(str(walked[0].values[row[i]]))
                           for rows in walked[0].branches.values() for row in rows)}
        return [p for i, p in enumerate(walked[1]) if i not in measured]
    assert unmeasured(plain) == unmeasured(under)


def test_stuck_workers_are_replaced_once_and_the_pieces_left_walked_again(tmp_path, monkeypatch):
    """A recording started by a server once stopped for good, its workers using no CPU: a piece
    not done in STALL_S has its workers killed and the pieces left walked by new ones."""
    from walk_stand_ins import stuck_once

    monkeypatch.setattr(walk, "STALL_S", 3.0)
    branches = [str(tmp_path / "a-stuck"), str(tmp_path / "b"), str(tmp_path / "c")]  # (pieces [a, b], [c])
    seen = []
    out = walk.walk_all({"x": branches}, workers=2, on_done=lambda done, total: seen.append(done),
                        work=stuck_once)
    assert sorted(out["x"][0].branches) == sorted(branches)
    assert (tmp_path / "a-stuck.was-stuck").exists() and seen == [1, 2]


def test_workers_stuck_twice_fail_the_walk_with_a_sentence(monkeypatch):
    from walk_stand_ins import always_stuck

    monkeypatch.setattr(walk, "STALL_S", 2.0)
    with pytest.raises(RuntimeError, match="stopped twice with 2 of 2 pieces left"):
        walk.walk_all({"x": ["a", "b", "c"]}, workers=2, work=always_stuck)


@pytest.mark.slow
def test_workers_forked_from_a_process_with_one_thread_walk_the_same_states():
    """`walk.forked` (the recording's workers forked, not started by a fork server) in a process of
    its own (tests/export/forked_walk.py), as `python -m kvviz.export.cache` runs: never from
    another thread or beside an unknown one (a fork there can deadlock the child); its workers'
    walk is the same as one walk here, and so are the facts each made of the nodes it walks.
    (Linux only: elsewhere `forked` gives None.)"""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    if sys.platform != "linux":
        pytest.skip("workers are forked only on Linux")
    root = Path(__file__).resolve().parents[2]
    script = str(Path(__file__).with_name("forked_walk.py"))
    run = subprocess.run([sys.executable, script], cwd=root, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(root)})
    assert run.returncode == 0, run.stderr[-3000:]
    said = json.loads(run.stdout.strip().splitlines()[-1])
    assert said["from a thread"] and said["beside another"], said
    assert said["forked"] and said["same states"] and said["same steps"] and said["states"] > 10, said
    # (each node's facts made first in the worker that walks it, every step's snapshot kept: its walk
    # then runs no engine step)
    assert said["same facts"] and said["engine steps making facts"] > 0, said
    assert said["engine steps walking"] == 0, said

