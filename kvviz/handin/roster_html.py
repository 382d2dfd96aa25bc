"""The live roster as HTML (the teacher page): how many students are at each node, and a row per
student, node by node: where they are (●) and where they made the prediction (✓).

Every name goes through html.escape (it is shown as text, never as HTML); the node numbers and
titles come from the registry's outline, escaped too. `anonymous`: each student is "Student N",
N their place in the order they arrived (the same N for the same student while the roster lasts),
for the projector. Each row's "Show" opens the recorded lesson at the state the student's page
showed at its last report (at most HEARTBEAT_S old: a report carries the state, a state's change
alone sends none), in a new tab for the projector; its link is the lesson's own query only.
"""

from __future__ import annotations

import html

from kvviz.handin.classroom import AWAY_S
from kvviz.handin.roster import Seen

e = html.escape
Outline = tuple[tuple[str, str, str], ...]


def label(i: int, s: Seen, anonymous: bool) -> str:
    """How a student is named on the roster (i: their place in arrival order, from 1)."""
    if anonymous:
        return f"Student {i}"
    return s.name or f"Student {i} (no name yet)"


def counts(seen: list[Seen], outline: Outline) -> dict[str, int]:
    """Students at each node (key '' for the page's opening), in page order."""
    out = {"": 0, **{key: 0 for key, _n, _t in outline}}
    for s in seen:
        out[s.node if s.node in out else ""] += 1
    return out


def roster_html(seen: list[Seen], outline: Outline, now: float, anonymous: bool) -> str:
    here = sum(1 for s in seen if now - s.updated_at < AWAY_S)
    n = len(seen)
    away = f" · {n - here} away" if n - here else ""
    chips = "".join(
        f'<li class="kv-r-count" data-node="{e(key)}"><span class="kv-r-num">{e(num)}</span> {e(title)}: '
        f'<b>{counts(seen, outline)[key]}</b></li>' for key, num, title in outline)
    opening = counts(seen, outline)[""]
    chips = (f'<li class="kv-r-count" data-node=""><span class="kv-r-num">·</span> Opening: <b>{opening}</b>'
             f'</li>{chips}')
    head = (f'<div class="kv-r-head"><h2>Live roster</h2><p class="kv-r-total" role="status"><b>{n}</b> '
            f'student{"s" if n != 1 else ""} on the lesson{away}</p><ul class="kv-r-counts">{chips}</ul>'
            '<p class="kv-r-legend">● where the student is now · ✓ prediction made there</p></div>')
    if not seen:
        return (f'<section class="kv-r" aria-label="Live roster">{head}<p class="kv-t-empty">No student has '
                'opened the lesson yet: each appears here within a few seconds of opening it.</p></section>')
    order = {key: i for i, (key, _n, _t) in enumerate(outline)}
    places = sorted(enumerate(seen, 1), key=lambda p: (order.get(p[1].node, -1), p[0]))
    cols = "".join(f'<th scope="col" title="{e(title)}">{e(num)}</th>' for _k, num, title in outline)
    cols += '<th scope="col">State</th>'
    rows = []
    for i, s in places:
        cells = []
        for key, _num, title in outline:
            mark = ("●" if s.node == key else "") + ("✓" if key in s.predicted else "")
            cells.append(f'<td data-node="{e(key)}" data-here="{str(s.node == key).lower()}" '
                         f'title="{e(title)}">{mark}</td>')
        # (the recorded lesson at the student's state, for the projector: the query passed QUERY)
        cells.append(f'<td class="kv-r-show"><a href="{e("lesson/" + (s.query or "?"), quote=True)}" '
                     f'target="_blank" rel="noopener noreferrer">'
                     f'Show {e(s.name if s.name and not anonymous else f"Student {i}")}\'s state ↗</a></td>')
        gone = now - s.updated_at >= AWAY_S
        rows.append(f'<tr class="kv-r-row{" kv-r-away" if gone else ""}" data-node="{e(s.node)}">'
                    f'<th scope="row" class="kv-r-name">{e(label(i, s, anonymous))}'
                    f'{" <small>away</small>" if gone else ""}</th>{"".join(cells)}</tr>')
    return (f'<section class="kv-r" aria-label="Live roster">{head}<div class="kv-r-scroll">'
            '<table class="kv-r-table">'
            f'<thead><tr><th scope="col">Student</th>{cols}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div></section>')
