"""Every use of Bokeh's and Panel's private API, in one place, each only where it was tested.

requirements.txt pins Bokeh and Panel to the minor versions tested (`TESTED`). Each patch below
checks, when it is applied, that the library is that minor version and that the private names it
touches are there; if not, it refuses with one RuntimeWarning saying what is left to the
library's own code, and changes nothing: the page is then correct, only slower (or, for the
fonts, asks for a web font a classroom may not reach). `tests/lesson/test_private_api.py` checks each
patch and each refusal; `tests/lesson/test_bokeh_defaults.py` checks the cached defaults against
Bokeh's own on every property of every model of a whole lesson page.

1. `cache_bokeh_defaults()`: Bokeh's constant property defaults computed once per class
   (`PropertyDescriptor._get_default`), not on every read.
2. `text_only`: `LiveHTML` (kvviz/web/live_html.py) sends only its text on an update (Panel's
   `PaneBase._update` and `_process_param_change`).
3. `no_debounce`: a checkbox or slider hands its change to Python at once (Panel's widget
   `_debounce`; kvviz/web/widgets.py).
4. `drop_web_fonts()`: the Fast template without its web-font link (`Fast._resources`).

Reading a Bokeh property that was never set computes its default each time: the class's
overrides, a copy, then `prepare_value` (validation and transforms), even when the default is a
constant such as `None`, `"auto"` or `0`. Building a node's ~300 models, Bokeh's document
bookkeeping (`doc.models.recompute()`, which visits every reference of every model after each
layout change) and Panel's model updates read such defaults tens of thousands of times: a third
to a half of a node's build, measured with cProfile. The cache wraps `_get_default` so that, for
a default Bokeh itself calls stable (not made by a function, not a container) and not themed for
that object, the value is computed once per (class, property) and reused, but only when it is
immutable (None, a bool, number or string, or a tuple of those): the very object Bokeh would
have returned, as `copy()` of an immutable value is the value itself. Everything else
(containers, models, functions, themed values, the unstable defaults Bokeh already keeps per
object) goes through Bokeh's own code unchanged.
"""

from __future__ import annotations

import threading
import warnings

import bokeh
import panel
from bokeh.core.property.descriptors import PropertyDescriptor
from panel.theme.fast import Fast

TESTED = {"bokeh": "3.9.", "panel": "1.9."}  # the minor versions whose private names these use
VERSIONS = {"bokeh": bokeh.__version__, "panel": panel.__version__}


def refusal(library: str, what: str, version: str | None = None, *names: tuple[object, str]) -> str | None:
    """Why `what` cannot be patched (a sentence), or None: `library` at `version` (default: the
    one installed) is not the tested minor version, or one of `names` ((owner, attribute)) is
    missing."""
    version = VERSIONS[library] if version is None else version
    if not version.startswith(TESTED[library]):
        return (f"kvviz: {library} {version} is not the tested {TESTED[library]}x (requirements.txt): "
                f"{what} left to {library}'s own code")
    for owner, attribute in names:
        if not hasattr(owner, attribute):
            return (f"kvviz: {library} {version} has no {getattr(owner, '__name__', owner)}.{attribute}: "
                    f"{what} left to {library}'s own code")
    return None


def _allowed(library: str, what: str, version: str | None, *names: tuple[object, str]) -> bool:
    why = refusal(library, what, version, *names)
    if why is not None:
        warnings.warn(why, RuntimeWarning, stacklevel=3)
    return why is None


# -- 1. Bokeh's constant property defaults, once per class -----------------------------------------
_IMMUTABLE = (type(None), bool, int, float, str)
_CACHE: dict[tuple[type, str], object] = {}
_LOCK = threading.Lock()
_original = PropertyDescriptor._get_default


def immutable(value) -> bool:
    if isinstance(value, tuple):
        return all(immutable(v) for v in value)
    return (type(value) in _IMMUTABLE
            or (isinstance(value, str | int | float) and not isinstance(value, bool | type)))


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


def cache_bokeh_defaults(version: str | None = None) -> bool:
    """Use the cache from now on in this process (idempotent; app.py calls it). Returns whether
    it is in use."""
    if not _allowed("bokeh", "its property defaults (computed on every read: correct, slower)", version,
                    (PropertyDescriptor, "_get_default"), (PropertyDescriptor, "has_unstable_default")):
        return False
    PropertyDescriptor._get_default = _get_default
    return True


def uncache_bokeh_defaults() -> None:
    PropertyDescriptor._get_default = _original
    _CACHE.clear()


# -- 2. an HTML pane whose updates send its text alone ----------------------------------------------
def _text_only_update(self, ref, model) -> None:
    model.update(**self._process_param_change({"object": self.object}))  # (it escapes, as Panel does)


def text_only(cls: type, version: str | None = None) -> type:
    """A class decorator for a `pn.pane.HTML` subclass: an update of its object sets only the
    model's text (Panel's HTML pane recomputes every property of its model, stylesheets
    included, on each change). On an untested Panel, the class as Panel makes it."""
    if _allowed("panel", f"{cls.__name__}'s updates (every property recomputed: correct, slower)", version,
                (cls, "_update"), (cls, "_process_param_change")):
        cls._update = _text_only_update
    return cls


# -- 3. widgets without the 50 ms debounce ------------------------------------------------------------
def no_debounce(cls: type, version: str | None = None) -> type:
    """A class decorator for a Panel widget: a browser change reaches Python at once, not after
    Panel's 50 ms debounce. On an untested Panel, the widget as Panel makes it."""
    if _allowed("panel", f"{cls.__name__}'s 50 ms debounce (kept: correct, slower)", version,
                (cls, "_debounce")):
        cls._debounce = 0
    return cls


# -- 4. the Fast template without its web font ----------------------------------------------------------
def drop_web_fonts(version: str | None = None) -> bool:
    """Drop the Fast design's web-font link (fonts.googleapis.com): a classroom may have no
    internet, and a failed font request is a console error. The page uses system fonts instead.
    Returns whether it was dropped."""
    if not _allowed("panel", "the Fast template's web-font link (kept)", version, (Fast, "_resources")):
        return False
    Fast._resources = {**Fast._resources, "font": {}}
    return True
