"""The whole lesson's state in the URL, so a copied link reproduces what a student saw.

    ?node=fragmentation&reserve=12&free_r2=1
    ?node=paging&add=Pages%20fit&add=my%20own%20prompt&show=R5
    ?node=radix&sharing=1&op=ask:What%20is%20a%20block%3F&op=release

`node` picks one node alone (for an iframe); without it the whole lesson is served. Every other
parameter belongs to one node: each node's `url` module (kvviz/nodes/<key>/url.py) parses,
restores and writes its own, and this module runs them all, in the registry's order.
Parameters are parsed by hand (never executed, never rendered as HTML); a malformed one falls
back to its default and adds a notice in words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlencode

from kvviz.nodes import BY_KEY, KEYS, NODES


@dataclass
class UrlState:
    node: str | None = None  # one node alone, or None for the whole lesson
    links: dict[str, object] = field(default_factory=dict)  # node key -> that node's parsed Link
    notices: list[str] = field(default_factory=list)


def parse(args: dict[str, list]) -> UrlState:
    """`args` as `parse_qs` gives them (str values) or as Panel's session_args (bytes)."""
    many = {k: [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in vs]
            for k, vs in args.items()}
    one = {k: vs[-1] for k, vs in many.items() if vs}
    s = UrlState()
    if "node" in one:
        if one["node"] in BY_KEY:
            s.node = one["node"]
        else:
            s.notices.append(f"There is no node {one['node']!r} (try one of {', '.join(KEYS)}): "
                             "showing the whole lesson.")
    for n in NODES:
        if n.url is not None:
            s.links[n.key] = n.url.parse(one, many, s.notices)
    return s


def parse_search(search: str) -> UrlState:
    return parse(parse_qs(search.lstrip("?"), keep_blank_values=True))


def restore(s: UrlState, states: dict) -> list[str]:
    """Put the states (by node key) where the link says; returns the notices (link problems,
    engine refusals)."""
    notices = list(s.notices)
    for n in NODES:
        if n.url is not None and n.key in states:
            n.url.restore(states[n.key], s.links[n.key], notices)
    return notices


def query(node: str | None, states: dict) -> str:
    """The query string (with '?', or '' when everything is at its default) for these states."""
    q: list[tuple[str, str]] = [("node", node)] if node else []
    for n in NODES:
        if n.url is not None:
            q += n.url.query(states[n.key])
    return "?" + urlencode(q) if q else ""


def watch(states: dict, callback) -> None:
    """Call `callback()` whenever a state parameter that appears in the query changes."""
    for n in NODES:
        if n.url is not None:
            states[n.key].param.watch(lambda *_e: callback(), list(n.url.WATCH))
