"""Each node's state in the URL, so a copied link reproduces what a student saw.

    ?node=fragmentation&reserve=12&free_r2=1
    ?node=paging&add=Pages%20fit&add=my%20own%20prompt&show=R5
    ?node=radix&sharing=1&op=ask:What%20is%20a%20block%3F&op=release

`node` picks one node alone (for an iframe); without it the whole lesson is served. Parameters
are parsed by hand (not executed, never rendered as HTML); a malformed one falls back to its
default and adds a notice in words. `add` and `op` repeat, in the order they were done.

`add_gap` and `op_gap` (one per `add` / `op`, in order) say how many engine steps each pool
(node 02: contiguous.paged) had taken since the previous request when it came, so a request
added while another was still generating is replayed at the same step and gets the same
blocks. Without them (a hand-written link) every request runs to the end before the next. A
link restores the state once every request has finished, even if it was copied mid-run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlencode

from kvviz import format as fmt

NODES = ("fragmentation", "paging", "radix", "explain")
MAX_OPS = 24  # per node, so a link cannot make the server run for long


@dataclass
class UrlState:
    node: str | None = None
    reserve: int = 8
    free_r2: bool = False
    add: list[str] = field(default_factory=list)
    show: str | None = None
    sharing: bool = False
    ops: list[tuple[str, str]] = field(default_factory=list)
    add_gap: list[tuple[int, ...]] | None = None  # None: each request runs to the end first
    op_gap: list[tuple[int, ...]] | None = None
    notices: list[str] = field(default_factory=list)


def _flag(name: str, value: str, notices: list[str]) -> bool:
    if value in ("1", "true", "on", "yes"):
        return True
    if value not in ("0", "false", "off", "no", ""):
        notices.append(f"{name}={value!r} should be 1 or 0: using 0.")
    return False


def _prompts(name: str, values: list[str], notices: list[str]) -> list[str]:
    kept = []
    for v in values[:MAX_OPS]:
        if why := fmt.check_prompt(v):
            notices.append(f"Skipped one {name} from the link: {why}")
        else:
            kept.append(v)
    if len(values) > MAX_OPS:
        notices.append(f"The link has {len(values)} {name} entries; only the first {MAX_OPS} are used.")
    return kept


MAX_GAP = 4096  # engine steps between two requests of a link


def _gaps(name: str, values: list[str], count: int, pools: int, notices: list[str]) -> list[tuple[int, ...]] | None:
    """`values` as step counts (`pools` whole numbers joined by '.'), if there is one for each
    of the `count` requests kept; else None (each request then runs to the end), with a notice."""
    if not values:
        return None
    gaps = []
    for v in values[:MAX_OPS]:
        parts = [fmt.whole_number(p, 5) for p in v.split(".")]
        if len(parts) != pools or not all(p is not None and 0 <= p <= MAX_GAP for p in parts):
            break
        gaps.append(tuple(parts))
    if len(gaps) != len(values[:MAX_OPS]) or len(gaps) != count:
        notices.append(f"Ignored {name} from the link (it should be one step count per request): "
                       "each request runs to the end before the next.")
        return None
    return gaps


def parse(args: dict[str, list[str]]) -> UrlState:
    """`args` as `parse_qs` gives them (str values) or as Panel's session_args (bytes)."""
    a = {k: [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in vs] for k, vs in args.items()}
    s = UrlState()
    one = {k: vs[-1] for k, vs in a.items() if vs}
    if "node" in one:
        if one["node"] in NODES:
            s.node = one["node"]
        else:
            s.notices.append(f"There is no node {one['node']!r} (try one of {', '.join(NODES)}): showing the whole lesson.")
    if "reserve" in one:
        v = one["reserve"]
        n = fmt.whole_number(v, 2)
        if n is not None and 1 <= n <= 16:
            s.reserve = n
        else:
            s.notices.append(f"reserve={v!r} is not a whole number from 1 to 16: using 8.")
    if "free_r2" in one:
        s.free_r2 = _flag("free_r2", one["free_r2"], s.notices)
    if "sharing" in one:
        s.sharing = _flag("sharing", one["sharing"], s.notices)
    s.add = _prompts("add", a.get("add", []), s.notices)
    if "show" in one:
        v = one["show"]
        if v.startswith("R") and (fmt.whole_number(v[1:], 4) or 0) > 0:
            s.show = v
        else:
            s.notices.append(f"show={v!r} is not a request name like R3: showing R1.")
    for v in a.get("op", [])[:MAX_OPS]:
        if v == "release":
            s.ops.append(("release", ""))
        elif v.startswith("ask:") and not fmt.check_prompt(v[4:]):
            s.ops.append(("ask", v[4:]))
        else:
            s.notices.append(f"Skipped op={fmt.excerpt(v, 40)!r} from the link: it should be ask:<question> or release.")
    skipped_add = len(a.get("add", [])[:MAX_OPS]) != len(s.add)
    skipped_op = len(a.get("op", [])[:MAX_OPS]) != len(s.ops)
    s.add_gap = _gaps("add_gap", [] if skipped_add else a.get("add_gap", []), len(s.add), 2, s.notices)
    s.op_gap = _gaps("op_gap", [] if skipped_op else a.get("op_gap", []), len(s.ops), 1, s.notices)
    return s


def parse_search(search: str) -> UrlState:
    return parse(parse_qs(search.lstrip("?"), keep_blank_values=True))


def restore(s: UrlState, frag, paging, radix) -> list[str]:
    """Put the states where the link says; returns the notices (link problems, engine refusals)."""
    notices = list(s.notices)
    if s.reserve != frag.reserve:
        frag.reserve = s.reserve
    if s.free_r2:
        frag.free_r2()
    for k, prompt in enumerate(s.add):
        after = s.add_gap[k] if s.add_gap else None
        if not paging.add_request(prompt, settle=after is None, after=after):
            notices.append(paging.notice)
    if s.add_gap:
        paging.settle()
    if s.show is not None:
        if s.show in paging.param.request.objects:
            paging.request = s.show
        else:
            notices.append(f"There is no request {s.show} in node 02: showing {paging.request}.")
    if s.sharing:
        radix.sharing = True
    for k, (kind, text) in enumerate(s.ops):
        after = s.op_gap[k] if s.op_gap else None
        ok = (radix.add_request(text, settle=after is None, after=after) if kind == "ask"
              else radix.release_oldest(after))
        if not ok:
            notices.append(radix.notice)
    if s.op_gap:
        radix.settle()
    return notices


def query(node: str | None, frag, paging, radix) -> str:
    """The query string (with '?', or '' when everything is at its default) for these states."""
    q: list[tuple[str, str]] = []
    if node:
        q.append(("node", node))
    if frag.reserve != 8:
        q.append(("reserve", str(frag.reserve)))
    if frag.freed_r2:
        q.append(("free_r2", "1"))
    q += [("add", p) for p in paging.added]
    q += [("add_gap", g) for g in paging.added_gaps]
    if paging.request and paging.request != "R1":
        q.append(("show", paging.request))
    if radix.sharing:
        q.append(("sharing", "1"))
    q += [("op", "release" if kind == "release" else f"ask:{text}") for kind, text in radix.ops]
    q += [("op_gap", g) for g in radix.op_gaps]
    return "?" + urlencode(q) if q else ""
