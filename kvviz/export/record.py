"""Recording a node's page: every value its Bokeh models take in every state a recipe reaches.

The live view is built once into a Bokeh document; the recipe then drives the node's real state
(the real engine) through each branch (a set-up, e.g. "reserved length 12, R2 freed") and, from
its settled end, back one engine step at a time to its start. At every state the value of every
model property that any state changes is read off the document. The page replays those values
in the browser (kvviz/export/player.py): the same figures, fed by the same code, so every number
equals what the live engine shows for that state.

One walk: a property is read when the document says it changed (every change is an event), and
one first changed at some state held its earlier value in every state before. Values are stored
once each (`values`), states as rows of indices into it. kvviz/export/walk.py runs the walks of a
whole recording on every core, a few branches per worker process.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from bokeh.core.property.descriptors import AliasPropertyDescriptor, UnsetValueError
from bokeh.document import Document
from bokeh.document.events import (
    ColumnDataChangedEvent,
    ColumnsPatchedEvent,
    ColumnsStreamedEvent,
    ModelChangedEvent,
)

from kvviz.timeline import eager_snapshots

Setup = Callable[[object], None]  # puts a node state at a branch's settled end


@dataclass
class Recording:
    props: list[tuple[str, str]] = field(default_factory=list)  # (model id, property)
    values: list = field(default_factory=list)  # each distinct value once (JSON-able)
    branches: dict[str, list[list[int]]] = field(default_factory=dict)  # key -> states -> value index per prop
    steps: dict[str, list[int]] = field(default_factory=dict)  # key -> the engine step count of each state
    links: dict[str, str] = field(default_factory=dict)  # key -> the live link's query for its settled end
    # prop -> the index of its value before the walk (a state that never changed it has that); not written
    first: dict[tuple[str, str], int] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"props": self.props, "values": self.values, "branches": self.branches, "steps": self.steps,
                "links": self.links}


class Values:
    """Each distinct value once (`values`), by its JSON text: `intern(value)` is its index.

    A property's encoded value is one object until the property changes, and a walk interns it
    at every state: the same object is looked up by identity, not written as JSON again."""

    def __init__(self) -> None:
        self.values: list = []
        self._index: dict[str, int] = {}
        self._seen: dict[int, tuple[object, int]] = {}  # id -> (the object, kept alive; its index)

    def intern(self, value) -> int:
        seen = self._seen.get(id(value))
        if seen is not None and seen[0] is value:
            return seen[1]
        text = json.dumps(value, sort_keys=True, separators=(",", ":"))
        if text not in self._index:
            self._index[text] = len(self.values)
            self.values.append(value)
        self._seen[id(value)] = (value, self._index[text])
        return self._index[text]


def encode(value):
    """A property value as JSON the player can decode: arrays as {"nd": kind, "v": [...]} with
    NaN as null, floats that are not finite as {"f": "nan"|"inf"|"-inf"}."""
    if isinstance(value, np.ndarray):
        items = value.tolist()
        if value.dtype.kind == "f":
            items = [None if math.isnan(x) else x for x in items]
        return {"nd": value.dtype.kind, "v": items}
    if isinstance(value, float) and not math.isfinite(value):
        return {"f": str(value)}
    if isinstance(value, dict):
        return {"map": {str(k): encode(v) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, np.generic):
        return encode(value.item())
    raise TypeError(f"cannot record a {type(value).__name__} property value")


def initial_values(models) -> dict[tuple[str, str], object]:
    """Every recordable property of each of `models`, encoded, before anything changes."""
    out = {}
    for model in models:
        for attr in model.properties():
            if isinstance(getattr(type(model), attr, None), AliasPropertyDescriptor):
                continue  # (another name for a property read under its own: e.g. a tool's `toggleable`)
            # (references to other models and unset read-only values are never recorded)
            with contextlib.suppress(TypeError, UnsetValueError):
                out[(model.id, attr)] = encode(getattr(model, attr))
    return out


def _walk(state, branches: dict[str, Setup], visit: Callable[[str, int], None],
          settled: Callable[[str], None]) -> None:
    """Every branch's states, from its settled end back to its start: `visit(key, step_count)`;
    `settled(key)` at each settled end first."""
    for key, setup in branches.items():
        with eager_snapshots():  # (so that stepping back reads each state's snapshot, kept on the way)
            setup(state)
        settled(key)
        visit(key, state.step_count)
        while state.step_back():
            visit(key, state.step_count)


def record(doc: Document, state, branches: dict[str, Setup], reset: Callable[[], None],
           link: Callable[[object], str] = lambda _state: "") -> Recording:
    """Record `state`'s `branches` as seen in `doc` (which holds the node's view); `reset()`
    puts the page back at its default state afterwards (the page is saved from there).
    `link(state)`: the live lesson's query for a state, kept for each branch's settled end (the
    player writes it into the address bar, and a live session continues from it).

    One walk: a property is read again only when the document says it changed; a property first
    changed at some state held its initial value in every state before (any change is an event)."""
    models = {m.id: m for m in doc.models}
    initial = initial_values(doc.models)
    touched: set[tuple[str, str]] = set()

    def collect(event) -> None:
        if isinstance(event, ModelChangedEvent):
            touched.add((event.model.id, event.attr))
        elif isinstance(event, ColumnDataChangedEvent | ColumnsPatchedEvent | ColumnsStreamedEvent):
            touched.add((event.model.id, "data"))

    current: dict[tuple[str, str], int] = {}  # prop -> value index now
    order: list[tuple[str, str]] = []  # props in the order first changed
    stored = Values()
    intern = stored.intern
    visited: list[tuple[str, int, dict]] = []

    def visit(key: str, step: int) -> None:
        for prop in sorted(touched):
            if prop not in current:
                if prop not in initial:
                    raise TypeError(f"property {prop[1]!r} of {type(models[prop[0]]).__name__} cannot be recorded")
                order.append(prop)
            current[prop] = intern(encode(getattr(models[prop[0]], prop[1])))
        touched.clear()
        visited.append((key, step, dict(current)))

    links: dict[str, str] = {}

    def settled(key: str) -> None:
        links[key] = link(state)

    doc.on_change(collect)
    try:
        _walk(state, branches, visit, settled)
    finally:
        doc.remove_on_change(collect)
    first = {prop: intern(initial[prop]) for prop in order}
    rec = Recording(props=[list(p) for p in order], values=stored.values, links=links, first=first)
    for key in branches:
        mine = [(step, now) for k, step, now in visited if k == key][::-1]  # start to end
        rec.branches[key] = [[now.get(prop, first[prop]) for prop in order] for _, now in mine]
        rec.steps[key] = [step for step, _ in mine]
    reset()
    return rec
