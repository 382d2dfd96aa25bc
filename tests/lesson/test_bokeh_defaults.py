"""Bokeh's constant property defaults, computed once per class (kvviz/process/private_api.py),
read exactly as Bokeh computes them, for every property of every model of a whole lesson page."""

from __future__ import annotations

import pytest
from bokeh.document import Document
from bokeh.models import ColumnDataSource, Range1d
from panel.io.state import set_curdoc

from kvviz.process import private_api as bokeh_defaults


@pytest.fixture
def installed():
    bokeh_defaults.cache_bokeh_defaults()
    yield
    bokeh_defaults.uncache_bokeh_defaults()


def lesson_models() -> list:
    from kvviz.lesson import Lesson

    doc = Document()
    with set_curdoc(doc):
        lesson = Lesson({})
        lesson.full_page().server_doc(doc)
        for slot in lesson._slots.values():
            slot.reveal()
    return list(doc.models)


def same(a, b) -> bool:
    return a == b or (a != a and b != b)  # (NaN, a range's "not yet known")


def test_every_unset_property_of_a_lesson_page_reads_as_bokeh_computes_it(installed):
    models = lesson_models()
    assert len(models) > 500
    checked = cached = 0
    for model in models:
        for name in model.properties():
            descriptor = model.lookup(name)
            if name in model._property_values or not hasattr(descriptor, "_get_default"):
                continue
            ours, bokehs = descriptor._get(model), bokeh_defaults._original(descriptor, model)
            assert type(ours) is type(bokehs) and same(ours, bokehs), (type(model).__name__, name)
            checked += 1
            cached += (type(model), name) in bokeh_defaults._CACHE
    assert checked > 10_000 and cached > checked // 2  # (most unset properties are constants)


def test_mutable_and_per_object_defaults_are_never_shared(installed):
    a, b = ColumnDataSource(), ColumnDataSource()
    assert a.data is not b.data and a.tags is not b.tags  # containers: one per object, as Bokeh makes them
    a.tags.append("x")
    assert b.tags == [] and (ColumnDataSource, "tags") not in bokeh_defaults._CACHE
    assert a.name is None and (ColumnDataSource, "name") in bokeh_defaults._CACHE


def test_a_set_value_wins_over_the_cached_default(installed):
    first, second = Range1d(), Range1d(bounds=(0, 5))
    assert (first.bounds, second.bounds) == (None, (0, 5))
    second.bounds = (1, 7)
    assert (Range1d().bounds, second.bounds) == (None, (1, 7))
    assert (Range1d, "bounds") in bokeh_defaults._CACHE


@pytest.mark.parametrize("value, expected", [(None, True), ("auto", True), (1.5, True), ((1, "a"), True),
                                              ([1], False), ({}, False), ((1, [2]), False),
                                              (object(), False)])
def test_only_immutable_values_are_kept(value, expected):
    assert bokeh_defaults.immutable(value) is expected


def test_an_untested_bokeh_keeps_bokehs_own_code():
    from bokeh.core.property.descriptors import PropertyDescriptor

    before = PropertyDescriptor._get_default
    try:
        bokeh_defaults.uncache_bokeh_defaults()
        with pytest.warns(RuntimeWarning, match="bokeh 4.0.0 is not the tested 3.9.x"):
            assert bokeh_defaults.cache_bokeh_defaults("4.0.0") is False
        assert PropertyDescriptor._get_default is bokeh_defaults._original
    finally:
        PropertyDescriptor._get_default = before
