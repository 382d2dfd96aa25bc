"""Updating Bokeh sources in place: only what changed, and never a change of length mid-way.

`assign` sends only what changed: nothing when nothing changed; the changed rows alone
(`ColumnDataSource.patch`) when a few rows of a column changed, as when a Play step fills one
more block; the whole column when most of it changed. A click re-sent a figure's unchanged
positions, ids and hover texts otherwise. (A source in no served session's document, as a walk's
and a live answer's are, takes its changed columns whole: there is nothing to send, and Bokeh's
patch costs twice as much in Python.)

Bokeh's text glyphs lay their labels out asynchronously; when a source's length changes, the
renderer's several updates can interleave and a label is styled from an array of the old
length (`RangeError: Offset is outside the bounds of the DataView` in `set_visuals`). So a
figure whose row count varies with every action (the radix tree) gets sources of a fixed
capacity: the real rows first, then rows that draw nothing (NaN positions, skipped by every
glyph and by hover). Position columns are NumPy arrays: Bokeh sends them as binary buffers,
where a NaN in a list would be written out as a JSON object per value.
"""

from __future__ import annotations

import weakref

import numpy as np


def padded(columns: dict[str, list], capacity: int, positions: tuple[str, ...],
           blank: dict[str, object] | None = None) -> dict[str, list]:
    """`columns` (equal lengths, at most `capacity` rows) grown to `capacity` rows: the
    `positions` columns as float arrays ending in NaN, the others repeating their first value
    (or, when there are no rows at all, their value in `blank`)."""
    lengths = {len(v) for v in columns.values()}
    if len(lengths) != 1:
        raise ValueError(f"columns of unequal lengths {sorted(lengths)}: {sorted(columns)}")
    n = lengths.pop()
    if n > capacity:
        raise ValueError(f"{n} rows do not fit a source of {capacity}")
    out = {}
    for name, values in columns.items():
        if name in positions:
            out[name] = np.full(capacity, np.nan)
            out[name][:n] = values
        elif n:
            out[name] = list(values) + [values[0]] * (capacity - n)
        elif blank is not None and name in blank:
            out[name] = [blank[name]] * capacity
        else:
            raise ValueError(f"column {name!r} is empty: nothing to repeat")
    return out


def assign(source, data: dict[str, list]) -> None:
    """Make `source.data` equal `data`, sending only the columns that differ (NaN equals NaN)."""
    old = source.data
    if set(old) != set(data) or len({len(v) for v in (*old.values(), *data.values())}) > 1:
        source.data = data  # new columns or a new length: replace everything at once
        return
    changed = {k: v for k, v in data.items() if not _same(old[k], v)}
    patches, whole = {}, {}
    document = source.document
    if document is None or document.session_context is None:
        whole = changed  # (no browser to send it to: a walk, a live answer; a patch costs twice as much here)
    for k, v in changed.items() if not whole else ():
        rows = _changed_rows(old[k], v)
        if rows is not None and len(rows) <= len(v) // PATCH_SHARE:
            patches[k] = [(i, _plain(v[i])) for i in rows]
        else:
            whole[k] = v
    if whole:
        source.data.update(whole)
    if patches:
        source.patch(patches)  # (ColumnDataSource.patch: only the changed rows travel)


def assign_columns(source, columns: dict[str, list]) -> None:
    """`assign(source, binary(columns))`, converting only the columns that differ from those this
    source was last given here (kept per source): an unchanged column is taken as the source
    holds it, so that neither its conversion nor `assign`'s comparison runs again (most of a
    figure's columns are unchanged from one engine step to the next)."""
    last = _LAST.get(source)
    data = source.data
    if last is None or set(last) != set(columns) or set(data) != set(columns):
        assign(source, binary(columns))
    else:
        new = binary({k: v for k, v in columns.items() if not _unchanged(last[k], v)})
        assign(source, {k: new[k] if k in new else data[k] for k in columns})  # (in the columns' order)
    _LAST[source] = columns


# source -> the columns last given to `assign_columns` (a figure's data per snapshot are shared and
# never changed: kvviz/web/per_snapshot.py)
_LAST: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _unchanged(last, now) -> bool:
    if last is now:
        return True
    if isinstance(last, np.ndarray) or isinstance(now, np.ndarray):
        return isinstance(last, np.ndarray) and isinstance(now, np.ndarray) and _same(last, now)
    return type(last) is type(now) and last == now  # (lists: NaN never equals NaN here, so it is converted)


PATCH_SHARE = 4  # patch a column when at most a quarter of its rows changed, else send it whole


def _changed_rows(a, b) -> list[int] | None:
    """The rows where `b` differs from `a` (NaN equals NaN), or None when the two cannot be
    patched one into the other (different lengths or kinds of values)."""
    if isinstance(a, np.ndarray) != isinstance(b, np.ndarray) or len(a) != len(b):
        return None
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype:
            return None
        differs = a != b
        if a.dtype.kind == "f":
            differs &= ~(np.isnan(a) & np.isnan(b))
        return [int(i) for i in np.flatnonzero(differs)]
    return [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _same(a, b) -> bool:
    if a is b:
        return True  # (a read-only column, set again: kvviz/figures/cells.py `grid`)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes():
            return True  # (the same bytes: the quick answer for most columns, which did not change)
        if a.dtype.kind == "f" and b.dtype.kind == "f":
            return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
        return a.shape == b.shape and bool(np.all(a == b))
    return list(a) == list(b)


def binary(columns: dict[str, list]) -> dict:
    """`columns` with every all-number column as a NumPy array (float64, or int32 for whole
    numbers): Bokeh sends an array as one binary buffer, a list number by number, which is most
    of the time it takes to serialise a page's figures. Every column is a new object: the data
    may be shared by many sessions (kvviz/web/per_snapshot.py), and a patch changes a source's
    columns in place; but a read-only array, which no one changes, is kept as it is."""
    out = {}
    for name, values in columns.items():
        if isinstance(values, np.ndarray):
            # (a read-only array is shared as it is: no one changes it, a patch included, which
            # only ever changes a column that changed: kvviz/figures/cells.py `grid`)
            out[name] = values if not values.flags.writeable else values.copy()
            continue
        kinds = set(map(type, values))  # (the few types of a column, not every value's)
        if not kinds or not all(issubclass(k, int | float) and not issubclass(k, bool) for k in kinds):
            out[name] = list(values)
        elif all(issubclass(k, int) for k in kinds):
            out[name] = np.asarray(values, dtype=np.int32)
        else:
            out[name] = np.asarray(values, dtype=np.float64)
    return out
