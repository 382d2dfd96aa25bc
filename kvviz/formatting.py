"""How numbers and text from a snapshot are written on screen: formatting only, no cache figures.

Every metric text the lesson shows is built here, from `snapshot.metrics`, so the views and the
tests agree on the exact strings (docs/architecture.md, "Metrics": the value formats are exact).
"""

from __future__ import annotations

import functools
import math
import unicodedata

from engine import Metrics, Snapshot

PROMPT_MAX_CHARS = 200


def percent(fraction: float) -> int:
    """A fraction as a whole percentage, halves rounded up (0.375 -> 38)."""
    return int(math.floor(100 * fraction + 0.5))


def blocks(n: int) -> str:
    return f"{n} blk"


def in_use(m: Metrics) -> str:
    """IN USE: blocks holding tokens / blocks in the pool · that share in percent."""
    return f"{m.blocks_with_tokens} / {m.blocks_total} · {percent(m.in_use_fraction)}%"


def reserved_empty(m: Metrics) -> str:
    return blocks(m.blocks_reserved_empty)


def slabs_filled(m: Metrics) -> str:
    """SLABS FILLED: tokens held / token slots in the reserved slabs ('–' when none is held)."""
    return f"{percent(m.utilisation)}%" if m.slots_locked else "–"


def largest_gap(m: Metrics) -> str:
    return f"{m.largest_free_run} / {m.blocks_free} free"


def stopped_by_slab(snap: Snapshot, r) -> bool:
    """Whether request view `r` finished because its reserved slab was full (the engine says
    so: `RequestView.stop`)."""
    return r.status == "finished" and r.stop == "slab_full"


def cut_off(m: Metrics) -> str:
    """CUT OFF: replies the engine stopped because their slab was full, of the requests holding
    blocks (running or finished)."""
    return f"{m.cut_off} of {m.num_running + m.num_finished}"


def full(m: Metrics) -> str:
    """CONTIGUOUS / PAGED: the pool's utilisation (tokens held / slots locked)."""
    return f"{percent(m.utilisation)}% full"


def plural(n: int, one: str, many: str | None = None) -> str:
    """'1 block', '2 blocks' (`many` when the plural is not `one` + 's')."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def page_tails(m: Metrics) -> str:
    """Where a paged pool's unused slots are: the unfilled end of each request's last page."""
    holding = m.num_running + m.num_finished
    empty = m.slots_locked - m.tokens_held
    return (f"Where the rest goes: {empty} of the paged pool's {m.slots_locked} token slots are empty, "
            f"the unfilled end of the last page of its {plural(holding, 'request')}: "
            "never more than one part-filled page for each request.")


def stored_sum(snap: Snapshot) -> str:
    """BLOCKS STORED as the engine counts it: the blocks two or more live requests share, once,
    plus each live request's own ('6 shared + 4 × 3 own = 18')."""
    tables = [set(r.block_table) for r in snap.requests if r.block_table]
    holders: dict[int, int] = {}
    for t in tables:
        for b in t:
            holders[b] = holders.get(b, 0) + 1
    shared = sum(1 for n in holders.values() if n > 1)
    own = [sum(1 for b in t if holders[b] == 1) for t in tables]
    own_text = f"{len(own)} × {own[0]} own" if len(set(own)) == 1 else " + ".join(map(str, own)) + " own"
    return f"{shared} shared + {own_text} = {shared + sum(own)}"


def rejects(m: Metrics) -> str:
    return str(m.rejected)


def blocks_stored(m: Metrics) -> str:
    return blocks(m.blocks_stored)


def without_sharing(m: Metrics) -> str:
    return blocks(m.blocks_without_sharing)


def saved(m: Metrics) -> str:
    return f"{percent(m.saved)}%"


def seconds(s: float) -> str:
    return f"{1000 * s:.1f} ms" if s < 1 else f"{s:.2f} s"


def backend_badge(snap: Snapshot) -> str:
    """Which engine backend and device are live, e.g. 'native · CPU'."""
    return f"{snap.backend} · {snap.device.upper()}"


@functools.lru_cache(maxsize=8192)  # (a block's text is drawn again at every state it stays the same)
def printable(text: str) -> str:
    """Text as a person can read it: control, unassigned and combining characters and the
    replacement character (bytes that are not valid UTF-8) become '·', newlines '⏎'.

    The engine decodes bytes with replacement characters, so its text is any Unicode; this only
    makes invisible characters visible. It does not escape HTML: callers show the result as plain
    text (Bokeh glyphs, tooltips, widget values) or pass it through `html.escape`.
    """
    out = []
    for ch in text:
        if ch == "\n":
            out.append("⏎")
        elif ch == " " or (unicodedata.category(ch)[0] not in "CZM" and ch != "\ufffd"):
            out.append(ch)
        elif unicodedata.category(ch) == "Zs":
            out.append(" ")
        else:
            out.append("·")
    return "".join(out)


def excerpt(text: str, max_chars: int) -> str:
    text = printable(text)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def check_prompt(text: str, max_chars: int = PROMPT_MAX_CHARS) -> str | None:
    """Why a typed prompt cannot be sent, in words, or None when it can."""
    if not text or not text.strip():
        return "Type a prompt first: the box is empty."
    if len(text) > max_chars:
        return (
            f"That prompt is {len(text)} characters; the limit here is {max_chars}. Shorten it and try "
            "again.")
    return None


def whole_number(text: str, max_digits: int = 6) -> int | None:
    """`text` as a whole number if it is one written in ASCII digits (an optional leading '-'),
    at most `max_digits` long; else None. (`str.isdigit` also accepts '²', which `int` rejects,
    and `int` refuses numbers of thousands of digits: typed or linked text must never raise.)"""
    digits = text[1:] if text.startswith("-") else text
    if not digits or len(digits) > max_digits or not (digits.isascii() and digits.isdigit()):
        return None
    return int(text)


def block_ranges(block_ids) -> str:
    """Block ids as short ranges: (0, 1, 2, 5, 7, 8) -> '0–2, 5, 7–8'."""
    ids, parts, i = list(block_ids), [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}–{ids[j]}")
        i = j + 1
    return ", ".join(parts)
