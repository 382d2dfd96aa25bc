"""Bokeh's unchanging property defaults, computed once per class instead of on every read.

Reading a Bokeh property that was never set computes its default each time: the class's
overrides, a copy, then `prepare_value` (validation and transforms), even when the default is
a constant such as `None`, `"auto"` or `0`. Building a node's ~300 models, Bokeh's document
bookkeeping (`doc.models.recompute()`, which visits every reference of every model after each
layout change) and Panel's model updates read such defaults tens of thousands of times: a third
to a half of a node's build, measured with cProfile.

`install()` wraps `PropertyDescriptor._get_default` so that, for a default Bokeh itself calls
stable (not made by a function, not a container) and not themed for that object, the value is
computed once per (class, property) and reused, but only when it is immutable (None, a bool,
number or string, or a tuple of those): the very object Bokeh would have returned, as `copy()`
of an immutable value is the value itself. Everything else (containers, models, functions,
themed values, the unstable defaults Bokeh already keeps per object) goes through Bokeh's own
code unchanged. `tests/test_bokeh_defaults.py` checks the two agree on every property of every
model of a lesson page.
"""

from __future__ import annotations

import threading
import warnings

import bokeh
from bokeh.core.property.descriptors import PropertyDescriptor

TESTED = "3.9."  # the Bokeh minor version whose private `_get_default` this wraps (requirements.txt pins it)

_IMMUTABLE = (type(None), bool, int, float, str)
_CACHE: dict[tuple[type, str], object] = {}
_LOCK = threading.Lock()
_original = PropertyDescriptor._get_default


def immutable(value) -> bool:
    if isinstance(value, tuple):
        return all(immutable(v) for v in value)
    return type(value) in _IMMUTABLE or (isinstance(value, str | int | float) and not isinstance(value, bool | type))


def _get_default(self: PropertyDescriptor, obj):
    themed = obj.themed_values()
    if (themed is not None and self.name in themed) or self.name in obj._unstable_default_values:
        return _original(self, obj)
    key = (type(obj), self.name)
    try:
        return _CACHE[key]
    except KeyError:
        pass
    value = _original(self, obj)
    if not self.has_unstable_default(obj) and immutable(value):
        with _LOCK:
            _CACHE[key] = value
    return value


def install(version: str = bokeh.__version__) -> bool:
    """Use the cache from now on in this process (idempotent); on a Bokeh other than the tested
    minor version, refuse with a warning and keep Bokeh's own code (slower, never wrong).
    Returns whether it is installed."""
    if not version.startswith(TESTED):
        warnings.warn(f"kvviz: Bokeh {version} is not the tested {TESTED}x: its property defaults are "
                      "computed by Bokeh on every read (correct, slower)", RuntimeWarning, stacklevel=2)
        return False
    PropertyDescriptor._get_default = _get_default
    return True


def uninstall() -> None:
    PropertyDescriptor._get_default = _original
    _CACHE.clear()
