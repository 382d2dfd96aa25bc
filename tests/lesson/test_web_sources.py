"""Updating Bokeh sources (kvviz/web/sources.py): only the changed rows travel."""

from __future__ import annotations

import numpy as np
from bokeh.document import Document
from bokeh.document.events import ColumnDataChangedEvent, ColumnsPatchedEvent
from bokeh.models import ColumnDataSource

from kvviz.web.sources import assign, assign_columns, binary


class _Session:
    """Stands for a served session's context (a document in one sends its changes to a browser)."""


_SESSION = _Session()


def events_of(source, data, served: bool = True) -> list:
    doc = Document()
    if served:
        doc._session_context = lambda: _SESSION
    doc.add_root(source)
    seen = []
    doc.on_change(lambda event: seen.append(event))
    assign(source, data)
    return seen


def test_a_few_changed_rows_are_sent_as_a_patch_of_those_rows():
    source = ColumnDataSource({"fill": ["a"] * 8, "x": np.arange(8.0)})
    new_x = np.arange(8.0)
    new_x[3] = 30.0
    (event,) = events_of(source, {"fill": ["a"] * 7 + ["b"], "x": new_x})
    assert isinstance(event, ColumnsPatchedEvent)
    assert event.patches == {"fill": [(7, "b")], "x": [(3, 30.0)]}
    assert list(source.data["fill"]) == ["a"] * 7 + ["b"] and source.data["x"][3] == 30.0


def test_nan_equals_nan_and_nothing_changed_sends_nothing():
    x = np.array([1.0, np.nan, 3.0])
    source = ColumnDataSource({"x": x.copy()})
    assert events_of(source, {"x": x.copy()}) == []


def test_a_mostly_changed_column_or_a_new_dtype_is_sent_whole():
    source = ColumnDataSource({"x": np.arange(8, dtype=np.int32), "y": np.zeros(8)})
    (event,) = events_of(source, {"x": np.arange(8, dtype=np.int32), "y": np.ones(8)})
    assert isinstance(event, ColumnDataChangedEvent) and event.cols == ["y"]
    source = ColumnDataSource({"x": np.arange(8, dtype=np.int32)})
    changed = np.arange(8, dtype=np.float64)
    changed[0] = 0.5
    (event,) = events_of(source, {"x": changed})
    assert isinstance(event, ColumnDataChangedEvent)  # (a patch would cast 0.5 into an int column)
    assert source.data["x"][0] == 0.5


def test_outside_a_served_session_changed_columns_go_whole():
    source = ColumnDataSource({"fill": ["a"] * 8, "x": np.arange(8.0), "y": np.zeros(8)})
    new_x = np.arange(8.0)
    new_x[3] = 30.0
    (event,) = events_of(source, {"fill": ["a"] * 7 + ["b"], "x": new_x, "y": np.zeros(8)}, served=False)
    assert isinstance(event, ColumnDataChangedEvent) and sorted(event.cols) == ["fill", "x"]
    assert list(source.data["fill"]) == ["a"] * 7 + ["b"] and source.data["x"][3] == 30.0


def test_assign_columns_converts_only_what_changed_and_ends_as_assign_would(monkeypatch):
    """Columns given again unchanged are neither converted nor compared; the source ends holding what
    `assign(source, binary(columns))` gives it, served (a patch) or not; NaN in a list is converted."""
    from kvviz.web import sources

    converted = []
    real = sources.binary
    monkeypatch.setattr(sources, "binary", lambda cols: converted.append(sorted(cols)) or real(cols))
    for served in (True, False):
        source = ColumnDataSource(binary({"x": [0.0] * 8, "fill": ["a"] * 8, "n": [float("nan")] * 8}))
        doc = Document()
        if served:
            doc._session_context = lambda: _SESSION
        doc.add_root(source)
        seen = []
        doc.on_change(lambda event, seen=seen: seen.append(event))
        first = {"x": [0.0] * 8, "fill": ["a"] * 8, "n": [float("nan")] * 8}
        assign_columns(source, first)  # (nothing known yet: all converted; nothing changed: nothing sent)
        assert seen == [] and converted.pop() == ["fill", "n", "x"]
        second = {"x": [0.0] * 7 + [5.0], "fill": first["fill"], "n": [float("nan")] * 8}
        assign_columns(source, second)
        assert converted.pop() == ["n", "x"]  # (fill is the same list; n is NaN, never equal in a list)
        kind = ColumnsPatchedEvent if served else ColumnDataChangedEvent
        assert len(seen) == 1 and isinstance(seen[0], kind)
        assert list(source.data["x"]) == second["x"] and list(source.data["fill"]) == ["a"] * 8
        assert np.isnan(source.data["n"]).all()
        assign_columns(source, {"x": list(second["x"]), "fill": ["b"] * 8, "n": second["n"]})
        assert converted.pop() == ["fill"] and list(source.data["fill"]) == ["b"] * 8
        assert list(source.data["x"]) == second["x"]


def test_binary_hands_out_new_columns_so_shared_data_is_never_changed_in_place():
    from kvviz.web.sources import binary

    shared = {"x": np.arange(3.0), "label": ["a", "b", "c"], "n": [1, 2, 3]}
    out = binary(shared)
    assert out["x"] is not shared["x"] and out["label"] is not shared["label"]
    out["x"][0], out["label"][0] = 9.0, "z"
    assert shared["x"][0] == 0.0 and shared["label"][0] == "a" and out["n"].dtype == np.int32


def test_per_snapshot_computes_once_per_snapshot_object_and_is_bounded(monkeypatch):
    from kvviz.web import per_snapshot as module

    monkeypatch.setattr(module, "CAPACITY", 2)
    calls = []

    @module.per_snapshot
    def draw(snap, width):
        calls.append((snap, width))
        return {"width": width}

    a, b, c = object(), object(), object()
    assert draw(a, 1) is draw(a, 1) and len(calls) == 1
    draw(a, 2), draw(b, 1), draw(c, 1)
    assert len(calls) == 4 and len(draw.cache) == 2
    draw(a, 1)  # (dropped, the oldest: computed again)
    assert len(calls) == 5


def test_a_destroyed_sessions_memory_is_handed_back_and_lessons_are_counted_until_collected():
    import gc

    from kvviz.lesson import Lesson
    from kvviz.process import memory, metrics

    assert memory.give_back() in (True, False)  # (True on glibc: this machine)
    before = len(metrics._lessons)
    lesson = Lesson({})
    metrics.track(lesson)
    assert len(metrics._lessons) == before + 1
    del lesson
    gc.collect()
    assert len(metrics._lessons) == before  # nothing keeps a lesson alive once its session is gone
