"""Small arithmetic shared by the engine and the lesson."""

from __future__ import annotations


def ceil_div(a: int, b: int) -> int:
    """a / b rounded up, for b > 0: e.g. the blocks of `b` tokens that `a` tokens need."""
    return -(-a // b)
