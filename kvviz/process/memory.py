"""Give a destroyed session's memory back to the system.

A session holds a few MB (its engines' KV tensors, its Bokeh models). When it is destroyed,
Python frees it, but glibc's allocator keeps the freed pages in its heaps: measured with 300
open/close cycles, a backend's RSS grew by about 4 MB a session although no session object
stayed alive (`kvviz_lessons_alive` fell to 0). `malloc_trim(0)` hands the free pages back. It
runs on the next tick after a session is destroyed (a few milliseconds); elsewhere than glibc
it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    _trim = _libc.malloc_trim
except (OSError, AttributeError):  # (not glibc: nothing to do)
    _trim = None


def give_back() -> bool:
    """Return the allocator's free memory to the system; True when it could."""
    if _trim is None:
        return False
    _trim(0)
    return True


# -- the garbage collector in a class server ------------------------------------------------------
# Python's full (generation 2) collection walks every tracked object: with twenty students'
# pages in a process (over a million objects) each one stopped the event loop for 0.4-0.8 s, and
# with the default thresholds one ran every few seconds while the class built its nodes: every
# click in the process waited (the class benchmark's live /app mode, logged with gc.callbacks). Here the
# objects the process starts with (modules, the model, Bokeh's and Panel's classes) are frozen out
# of collections, and the younger generations are collected less often, so a full collection is
# rarer. Garbage is still collected: generation 0 every GC_THRESHOLDS[0] allocations, and Panel
# runs a full collection a few seconds after sessions are destroyed, after which the freed pages
# are handed back (memory after a class is measured by the same benchmark).
GC_THRESHOLDS = (5_000, 10, 80)
_tuned = False


def tune_gc() -> bool:
    """Once per process, before its first page: collect, freeze what is there, set the
    thresholds. True the first time."""
    global _tuned
    if _tuned:
        return False
    _tuned = True
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.callbacks.append(_after_full_collection)
    return True


def _after_full_collection(phase: str, info: dict) -> None:
    """A full collection freed the cycles of destroyed sessions (Panel runs one a few seconds
    after a session ends, later than the session's own `give_back`): hand those pages back too."""
    if phase == "stop" and info.get("generation") == 2:
        give_back()
