"""Reading a node's fields from a link: the shared parsers (kvviz/urlstate.py has the whole URL).

A link is typed by hand, copied and shared: every value is parsed here, never executed or
rendered as HTML; a malformed value falls back to its default and adds a notice in words.
Defaults and bounds come from the state's own `param` declarations.
"""

from __future__ import annotations

import param

from kvviz import formatting as fmt

MAX_OPS = 24  # per node, so a link cannot make the server run for long
MAX_GAP = 4096  # engine steps between two requests of a link


def flag(name: str, value: str, notices: list[str]) -> bool:
    """1 or 0 (what the lesson writes); any other value is read as one of them with a notice
    saying which, so `free_r2=yes` and `sharing=2` are treated alike."""
    if value in ("1", "0"):
        return value == "1"
    if value.lower() in ("true", "on", "yes"):
        notices.append(f"{name}={fmt.excerpt(value, 12)!r} read as 1 (links use 1 or 0).")
        return True
    notices.append(f"{name}={fmt.excerpt(value, 12)!r} should be 1 or 0: using 0.")
    return False


def bounded(name: str, value: str, p: param.Integer, notices: list[str]) -> int:
    """`value` as a whole number within `p`'s bounds, else `p`'s default (with a notice)."""
    lo, hi = p.bounds
    n = fmt.whole_number(value, len(str(hi)))
    if n is not None and lo <= n <= hi:
        return n
    notices.append(f"{name}={value!r} is not a whole number from {lo} to {hi}: using {p.default}.")
    return p.default


def prompts(name: str, values: list[str], notices: list[str]) -> list[str]:
    kept = []
    for v in values[:MAX_OPS]:
        if why := fmt.check_prompt(v):
            notices.append(f"Skipped one {name} from the link: {why}")
        else:
            kept.append(v)
    if len(values) > MAX_OPS:
        notices.append(f"The link has {len(values)} {name} entries; only the first {MAX_OPS} are used.")
    return kept


def gaps(name: str, values: list[str], count: int, pools: int,
         notices: list[str]) -> list[tuple[int, ...]] | None:
    """`values` as step counts (`pools` whole numbers joined by '.'), if there is one for each
    of the `count` requests kept; else None (each request then runs to the end), with a notice."""
    if not values:
        return None
    out = []
    for v in values[:MAX_OPS]:
        parts = [fmt.whole_number(p, 5) for p in v.split(".")]
        if len(parts) != pools or not all(p is not None and 0 <= p <= MAX_GAP for p in parts):
            break
        out.append(tuple(parts))
    if len(out) != len(values[:MAX_OPS]) or len(out) != count:
        notices.append(f"Ignored {name} from the link (it should be one step count per request): "
                       "each request runs to the end before the next.")
        return None
    return out
