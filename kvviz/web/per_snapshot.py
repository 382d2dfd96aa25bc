"""Figure data computed once per snapshot, for every session that shows it.

Snapshots are immutable, and the timeline memo (kvviz/timeline.py) hands the same snapshot object
to every session that reaches the same state: forty students playing the same request show the
same snapshots. `per_snapshot(fn)` remembers `fn(snapshot, ...)` by the snapshot's identity
(holding a reference, so an identity is never reused while remembered), in a small bounded LRU
per function. Whatever it returns is shared: callers must not change it (`sources.assign` copies
the arrays it hands to Bokeh).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict

CAPACITY = 256  # per function: the states a class is looking at now


def per_snapshot(fn):
    cache: OrderedDict[tuple, tuple] = OrderedDict()
    lock = threading.Lock()

    @functools.wraps(fn)
    def wrapper(snapshot, *args, **kwargs):
        key = (id(snapshot), args, tuple(sorted(kwargs.items())))
        with lock:
            hit = cache.get(key)
            if hit is not None and hit[0] is snapshot:
                cache.move_to_end(key)
                return hit[1]
        value = fn(snapshot, *args, **kwargs)
        with lock:
            cache[key] = (snapshot, value)
            while len(cache) > CAPACITY:
                cache.popitem(last=False)
        return value

    wrapper.cache = cache
    return wrapper
