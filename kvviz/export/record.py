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
import io
import math
import pickle
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from bokeh.core.property.descriptors import AliasPropertyDescriptor, UnsetValueError
from bokeh.core.property.validation import validate
from bokeh.document import Document
from bokeh.document.events import (
    ColumnDataChangedEvent,
    ColumnsPatchedEvent,
    ColumnsStreamedEvent,
    DocumentChangedEvent,
    ModelChangedEvent,
)
from bokeh.model import Model

from kvviz.timeline import eager_snapshots
from kvviz.web.redraw import held

Setup = Callable[[Any], None]  # puts a node state at a branch's settled end
Prop = tuple[str, str]  # (model id, property name)


@dataclass
class Recording:
    props: list[list[Any]] = field(default_factory=list)  # [model id, property] (a walk's: [place, property])
    values: list[Any] = field(default_factory=list)  # each distinct value once (JSON-able)
    # key -> states -> value index per prop
    branches: dict[str, list[list[int]]] = field(default_factory=dict)
    steps: dict[str, list[int]] = field(default_factory=dict)  # key -> the engine step count of each state
    links: dict[str, str] = field(default_factory=dict)  # key -> the live link's query for its settled end

    def to_json(self) -> dict[str, Any]:
        return {"props": self.props, "values": self.values, "branches": self.branches, "steps": self.steps,
                "links": self.links}


class Values:
    """Each distinct value once (`values`), by its pickled bytes: `intern(value)` is its index.

    A property's encoded value is one object until the property changes, and a walk interns it
    at every state: the same object is looked up by identity, not pickled again. (Pickled, not
    written as JSON: the same key for the same value, built from its encoding's plain lists, dicts,
    strings and numbers, about eight times faster; a value two ways that would read alike, such as
    a dict in another order, is merely stored twice.)"""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._index: dict[bytes, int] = {}
        self._seen: dict[int, tuple[object, int]] = {}  # id -> (the object, kept alive; its index)

    def intern(self, value: Any) -> int:
        seen = self._seen.get(id(value))
        if seen is not None and seen[0] is value:
            return seen[1]
        text = _pickled(value)
        if text not in self._index:
            self._index[text] = len(self.values)
            self.values.append(value)
        self._seen[id(value)] = (value, self._index[text])
        return self._index[text]


def _pickled(value: Any) -> bytes:
    """`value`'s pickle without the memo: an object met twice is written twice, so that equal values
    pickle alike whether or not they share objects (a figure's cached cell looks share their strings)."""
    out = io.BytesIO()
    pickler = pickle.Pickler(out, 5)
    pickler.fast = True  # (no memo: a value is a tree of plain lists, dicts, strings and numbers)
    pickler.dump(value)
    return out.getvalue()


_AS_IS = {str, int, bool, type(None)}  # (encoded as themselves; a float may not be finite)
# Read-only arrays (kvviz/figures/cells.py `grid`: a pool's fixed positions), encoded once each. The
# encoding is shared by every value that holds it: no one changes it (a recording's values are
# interned by their pickled bytes, then written out).
_FIXED: dict[int, tuple[np.ndarray, dict[str, Any]]] = {}
FIXED_KEPT = 256


def encode(value: Any) -> Any:
    """A property value as JSON the player can decode: arrays as {"nd": kind, "v": [...]} with
    NaN as null, floats that are not finite as {"f": "nan"|"inf"|"-inf"}."""
    if isinstance(value, np.ndarray):
        if not value.flags.writeable:  # (a column no one changes, set again and again: encoded once)
            known = _FIXED.get(id(value))
            if known is not None and known[0] is value:
                return known[1]
        items = value.tolist()
        if value.dtype.kind == "f" and np.isnan(value).any():
            items = [None if math.isnan(x) else x for x in items]
        encoded = {"nd": value.dtype.kind, "v": items}
        if not value.flags.writeable:
            if len(_FIXED) >= FIXED_KEPT:
                _FIXED.clear()
            _FIXED[id(value)] = (value, encoded)  # (the array kept: its id is not reused meanwhile)
        return encoded
    if isinstance(value, float) and not math.isfinite(value):
        return {"f": str(value)}
    if isinstance(value, dict):
        return {"map": {str(k): encode(v) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        if _AS_IS.issuperset(map(type, value)):  # (a column of strings or whole numbers: as it is)
            return list(value)
        return [encode(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, np.generic):
        return encode(value.item())
    raise TypeError(f"cannot record a {type(value).__name__} property value")


def initial_values(models: Iterable[Model]) -> dict[Prop, Any]:
    """Every recordable property of each of `models`, encoded, before anything changes."""
    out: dict[Prop, Any] = {}
    for model in models:
        for attr in model.properties():
            if isinstance(getattr(type(model), attr, None), AliasPropertyDescriptor):
                continue  # (another name for a property read under its own: e.g. a tool's `toggleable`)
            # (references to other models and unset read-only values are never recorded)
            with contextlib.suppress(TypeError, UnsetValueError):
                out[(model.id, attr)] = encode(getattr(model, attr))
    return out


class Reader:
    """The properties of some models of a document (all of them by default), kept current: a
    property that a change event names is read again and encoded (every change is an event); the
    others keep their value. `strict`: a changed property that cannot be recorded is an error
    (else it is dropped: a reference to another model, never recorded)."""

    def __init__(self, doc: Document, models: Iterable[Model] | None = None, strict: bool = False,
                 now: dict[Prop, Any] | None = None):
        """`now`: `initial_values` of the models, when the caller has just read them."""
        self.doc, self.strict = doc, strict
        self.models: dict[str, Model] = {m.id: m for m in (doc.models if models is None else models)}
        # (model id, property) -> encoded value
        self.now = dict(now) if now is not None else initial_values(self.models.values())
        self.touched: set[Prop] = set()
        doc.on_change(self._collect)

    def follow(self, models: Iterable[Model]) -> None:
        """Keep `models` current too (those not followed yet: their `initial_values` read now)."""
        new = [m for m in models if m.id not in self.models]
        self.models.update((m.id, m) for m in new)
        self.now.update(initial_values(new))

    def _collect(self, event: DocumentChangedEvent) -> None:
        model = getattr(event, "model", None)
        if model is None or model.id not in self.models:
            return  # (not one of ours)
        if isinstance(event, ModelChangedEvent):
            self.touched.add((model.id, event.attr))
        elif isinstance(event, ColumnDataChangedEvent | ColumnsPatchedEvent | ColumnsStreamedEvent):
            self.touched.add((model.id, "data"))

    def read(self) -> dict[Prop, Any]:
        """Bring `now` up to date with every change since the last read; returns each changed
        property's value before it changed."""
        changed, self.touched = self.touched, set()
        before: dict[Prop, Any] = {}
        for prop in sorted(changed):
            mid, attr = prop
            try:
                if self.strict and prop not in self.now:
                    raise TypeError
                value = encode(getattr(self.models[mid], attr))
            except (TypeError, UnsetValueError):
                if self.strict:
                    raise TypeError(f"property {attr!r} of {type(self.models[mid]).__name__} cannot be "
                                    "recorded") from None
                self.now.pop(prop, None)
                continue
            before[prop] = self.now.get(prop)
            self.now[prop] = value
        return before

    def close(self) -> None:
        self.doc.remove_on_change(self._collect)


class Rows:
    """States read off a `Reader`, one row each: the value index (in `stored`) of every property
    of `order`, which begins with `always` and grows by each property as it first changes. Such a
    property held, in every state read before, its value before that change (`first`)."""

    def __init__(self, reader: Reader, stored: Values, always: Sequence[Prop] = ()):
        self.reader, self.intern = reader, stored.intern
        self.order: list[Prop] = list(always)
        self.known = set(self.order)
        self.first: dict[Prop, int] = {}
        self.rows: list[list[int]] = []
        self.steps: list[int] = []

    def visit(self, step: int) -> None:
        for prop, before in self.reader.read().items():
            if prop not in self.known:
                self.known.add(prop)
                self.order.append(prop)
                self.first[prop] = held = self.intern(before)
                for row in self.rows:
                    row.append(held)
        now = self.reader.now
        self.rows.append([self.intern(now[p]) for p in self.order])
        self.steps.append(step)

    def walk_back(self, state: Any, start: int = 0, joins: tuple[int, int] | None = None) -> int:
        """Read `state` now and at every engine step back to `start`; returns the first row's index.
        (The states' snapshots that the memo lacks are made first, in one run forward: see
        `Timeline.keep_snapshots`.)

        `joins`: the rows (first, end) of a branch read before, whose history this one continues (a
        key action taken at its end). From the first step back at which this state reads exactly
        as that branch's did at the same step, the states before are that branch's: its rows are
        copied rather than drawn again."""
        for timeline in getattr(state, "timelines", ()):
            timeline.keep_snapshots(start)
        at = len(self.rows)
        earlier = {self.steps[i]: i for i in range(*joins)} if joins is not None else {}
        self.visit(state.step_count)
        while state.step_count > start:
            same = earlier.get(self.steps[-1])
            if same is not None and self.rows[same] == self.rows[-1]:
                for i in range(same + 1, joins[1] if joins else 0):  # (its states before, going back)
                    self.rows.append(list(self.rows[i]))
                    self.steps.append(self.steps[i])
                break
            if not state.step_back():
                break
            self.visit(state.step_count)
        return at


def record(doc: Document, state: Any, branches: dict[str, Setup], reset: Callable[[], None],
           link: Callable[[Any], str] = lambda _state: "", now: dict[Prop, Any] | None = None,
           continues: dict[str, str] | None = None) -> Recording:
    """Record `state`'s `branches` as seen in `doc` (which holds the node's view); `reset()`
    puts the page back at its default state afterwards (the page is saved from there).
    `link(state)`: the live lesson's query for a state, kept for each branch's settled end (the
    player writes it into the address bar, and a live session continues from it).

    Each branch is put at its settled end (`setup`), then read back one engine step at a time to
    its start (`Rows.walk_back`: the same reading as a live answer's, kvviz/serve/live.py).
    `now`: `initial_values` of every model of `doc`, when the caller has just read them.
    `continues`: branch -> the branch whose history it continues (the recipe's key actions): where
    its states read as that one's, read before, they are that one's (`Rows.walk_back`'s `joins`).

    Bokeh does not validate the values the views set meanwhile (`validate(False)`: a check
    only, which converts none of the views' values; the same values are checked wherever the
    live lesson sets them). It is a switch of the whole process: record in a process that only
    records (kvviz/export/walk.py's workers), or one at a time (a server's live answers,
    kvviz/serve/live.py)."""
    reader = Reader(doc, strict=True, now=now)
    stored = Values()
    rows = Rows(reader, stored)
    links: dict[str, str] = {}
    spans: dict[str, tuple[int, int]] = {}
    try:
        with validate(False):
            _walk(state, branches, link, rows, links, spans, continues or {})
    finally:
        reader.close()
    rec = Recording(props=[list(p) for p in rows.order], values=stored.values, links=links)
    for key, (a, b) in spans.items():
        rec.branches[key] = rows.rows[a:b][::-1]  # (start to end)
        rec.steps[key] = rows.steps[a:b][::-1]
    reset()
    return rec


def _walk(state: Any, branches: dict[str, Setup], link: Callable[[Any], str], rows: Rows,
          links: dict[str, str], spans: dict[str, tuple[int, int]], continues: dict[str, str]) -> None:
    for key, setup in branches.items():
        # (stepping back reads each state's snapshot, kept on the way; the figures drawn once, at the end)
        with eager_snapshots(), held():
            setup(state)
        links[key] = link(state)
        at = rows.walk_back(state, joins=spans.get(continues.get(key, "")))
        spans[key] = (at, len(rows.rows))
