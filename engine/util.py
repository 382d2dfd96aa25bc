"""Small arithmetic shared by the engine and the lesson, and a quicker deep copy of its state."""

from __future__ import annotations

import copy
from typing import Any, TypeVar

T = TypeVar("T")


def ceil_div(a: int, b: int) -> int:
    """a / b rounded up, for b > 0: e.g. the blocks of `b` tokens that `a` tokens need."""
    return -(-a // b)


def deepcopy_int_lists(obj: T, memo: dict[int, Any], names: tuple[str, ...],
                       nested: tuple[str, ...] = ()) -> T:
    """A deep copy of `obj` (for its `__deepcopy__`) whose attributes `names` are lists of ints and
    `nested` lists of such lists: those copied as lists, where `copy.deepcopy` visits every int (most
    of an engine's clone: a pool's blocks' tokens, each request's prompt and reply); every other
    attribute deep-copied as usual."""
    cls: type[T] = type(obj)
    twin = cls.__new__(cls)
    memo[id(obj)] = twin
    state = vars(obj)
    quick = {*names, *nested}
    vars(twin).update(copy.deepcopy({k: v for k, v in state.items() if k not in quick}, memo))
    for name in names:
        setattr(twin, name, list(state[name]))
    for name in nested:
        setattr(twin, name, [list(inner) for inner in state[name]])
    return twin
