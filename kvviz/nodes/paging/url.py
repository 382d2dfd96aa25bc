"""Node 02 in a link: ?add=Pages%20fit&add=my%20prompt&add_gap=0.0&add_gap=3.3&show=R5.

`add` repeats, in the order the requests were added. `add_gap` (one per `add`) says how many
engine steps each pool (contiguous.paged) had taken since the previous request when it came,
so a request added while another was still generating is replayed at the same step and gets
the same blocks. Without them (a hand-written link) every request runs to the end before the
next. A link restores the state once every request has finished, even if copied mid-run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvviz import formatting as fmt
from kvviz.nodes.paging.state import PagingState
from kvviz.nodes.url_fields import MAX_OPS, gaps, prompts

PARAMS = ("add", "add_gap", "show")
WATCH = ("added", "request")


@dataclass
class Link:
    add: list[str] = field(default_factory=list)
    add_gap: list[tuple[int, ...]] | None = None  # None: each request runs to the end first
    show: str | None = None


def parse(one: dict[str, str], many: dict[str, list[str]], notices: list[str]) -> Link:
    link = Link(add=prompts("add", many.get("add", []), notices))
    if "show" in one:
        v = one["show"]
        if v.startswith("R") and (fmt.whole_number(v[1:], 4) or 0) > 0:
            link.show = v
        else:
            notices.append(f"show={v!r} is not a request name like R3: showing R1.")
    skipped = len(many.get("add", [])[:MAX_OPS]) != len(link.add)
    link.add_gap = gaps("add_gap", [] if skipped else many.get("add_gap", []), len(link.add), 2, notices)
    return link


def start(link: Link) -> dict:
    """What `PagingState.reset` takes from the link: nothing (its pool is the same for every link)."""
    return {}


def restore(state: PagingState, link: Link, notices: list[str]) -> None:
    if link.add_gap:  # (the gaps count the steps from the start: replayed from there, not the settled end)
        for t in state.timelines:
            t.rewind()
    for k, prompt in enumerate(link.add):
        after = link.add_gap[k] if link.add_gap else None
        if not state.add_request(prompt, settle=after is None, after=after):
            notices.append(state.notice)
    if link.add_gap:
        state.settle()
    if link.show is not None:
        if link.show in state.param.request.objects:
            state.request = link.show
        else:
            notices.append(f"There is no request {link.show} in node 02: showing {state.request}.")


def query(state: PagingState) -> list[tuple[str, str]]:
    q = [("add", p) for p in state.added] + [("add_gap", g) for g in state.added_gaps]
    if state.request and state.request != "R1":
        q.append(("show", state.request))
    return q
