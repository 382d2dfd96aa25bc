"""Node 01 in a link: ?reserve=12&free_r2=1."""

from __future__ import annotations

from dataclasses import dataclass

from kvviz.nodes.fragmentation.state import FragmentationState
from kvviz.nodes.url_fields import bounded, flag

PARAMS = ("reserve", "free_r2")  # the URL parameters this node reads
WATCH = ("reserve", "freed_r2")  # the state parameters that change its query
_RESERVE = FragmentationState.param.reserve


@dataclass
class Link:
    reserve: int = _RESERVE.default
    free_r2: bool = False


def parse(one: dict[str, str], many: dict[str, list[str]], notices: list[str]) -> Link:
    link = Link()
    if "reserve" in one:
        link.reserve = bounded("reserve", one["reserve"], _RESERVE, notices)
    if "free_r2" in one:
        link.free_r2 = flag("free_r2", one["free_r2"], notices)
    return link


def start(link: Link) -> dict:
    """What `FragmentationState.reset` takes from the link: its slab length, built once."""
    return {"reserve": link.reserve}


def restore(state: FragmentationState, link: Link, notices: list[str]) -> None:
    if link.reserve != state.reserve:
        state.reserve = link.reserve
    if link.free_r2:
        state.free_r2()


def query(state: FragmentationState) -> list[tuple[str, str]]:
    q = []
    if state.reserve != _RESERVE.default:
        q.append(("reserve", str(state.reserve)))
    if state.freed_r2:
        q.append(("free_r2", "1"))
    return q
