"""Node 03 in a link: ?sharing=1&op=ask:What%20is%20a%20block%3F&op=release&op_gap=3&op_gap=0.

`op` repeats, in the order the questions were asked and the releases made; `op_gap` (one per
`op`) as node 02's `add_gap`, with one step count (one pool).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvviz import formatting as fmt
from kvviz.nodes.radix.state import RadixState
from kvviz.nodes.url_fields import MAX_OPS, flag, gaps

PARAMS = ("sharing", "op", "op_gap")
WATCH = ("sharing", "ops")


@dataclass
class Link:
    sharing: bool = False
    ops: list[tuple[str, str]] = field(default_factory=list)
    op_gap: list[tuple[int, ...]] | None = None


def parse(one: dict[str, str], many: dict[str, list[str]], notices: list[str]) -> Link:
    link = Link()
    if "sharing" in one:
        link.sharing = flag("sharing", one["sharing"], notices)
    for v in many.get("op", [])[:MAX_OPS]:
        if v == "release":
            link.ops.append(("release", ""))
        elif v.startswith("ask:") and not fmt.check_prompt(v[4:]):
            link.ops.append(("ask", v[4:]))
        else:
            notices.append(f"Skipped op={fmt.excerpt(v, 40)!r} from the link: it should be ask:<question> or "
                           "release.")
    skipped = len(many.get("op", [])[:MAX_OPS]) != len(link.ops)
    link.op_gap = gaps("op_gap", [] if skipped else many.get("op_gap", []), len(link.ops), 1, notices)
    return link


def start(link: Link) -> dict:
    """What `RadixState.reset` takes from the link: a branch built with sharing as the link has it
    starts so (rather than built without, then again with)."""
    return {"sharing": link.sharing}


def restore(state: RadixState, link: Link, notices: list[str]) -> None:
    if link.sharing:
        state.sharing = True
    for k, (kind, text) in enumerate(link.ops):
        after = link.op_gap[k] if link.op_gap else None
        ok = (state.add_request(text, settle=after is None, after=after) if kind == "ask"
              else state.release_oldest(after))
        if not ok:
            notices.append(state.notice)
    if link.op_gap:
        state.settle()


def query(state: RadixState) -> list[tuple[str, str]]:
    q = [("sharing", "1")] if state.sharing else []
    q += [("op", "release" if kind == "release" else f"ask:{text}") for kind, text in state.ops]
    return q + [("op_gap", g) for g in state.op_gaps]
