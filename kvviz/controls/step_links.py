"""Back and continue links at the foot of each node, so a class can follow the lesson's order.

On the full page a link scrolls to its node's section (found by its `kv-node-<key>` class, as
the navigation does); on a node served alone (`?node=paging`, e.g. in an iframe) there is no
such section, so the link opens that node's own page. Labels and keys are the registry's
(static lesson text, escaped), handed in by the view as the lesson's outline: (key, number,
title) of every node in page order (`Node.outline`, set by kvviz/nodes/__init__.py).
"""

from __future__ import annotations

import html

import param
from panel.custom import JSComponent

from kvviz.web.js_source import js_source

_ESM = js_source(__file__, "../web/find_sections.js", "step_links.js")


def links_html(back: tuple[str, str, str] | None, onward: tuple[str, str, str] | None) -> str:
    """`back`, `onward`: (key, number, title) of the nodes before and after, or None."""
    e = html.escape
    out = []
    if back:
        out.append(f'<a class="kv-back" href="?node={e(back[0])}" data-node="{e(back[0])}">← Back: '
                   f'{e(back[1])} · {e(back[2])}</a>')
    if onward:
        out.append(f'<a class="kv-continue" href="?node={e(onward[0])}" data-node="{e(onward[0])}">Continue: '
                   f'{e(onward[1])} · {e(onward[2])} →</a>')
    return "".join(out)


class StepLinks(JSComponent):
    items_html = param.String(default="", doc="the links, from links_html()")
    label = param.String(default="Back and continue",
                         doc="the navigation's name (one per node: a page has several)")

    _esm = _ESM


def step_links(key: str, outline) -> StepLinks:
    """The back and continue links of node `key`, in the order of `outline`: (key, number, title)
    of every node of the lesson (empty: no links, a view built outside the lesson)."""
    keys = [k for k, _number, _title in outline]
    i = keys.index(key) if key in keys else -1
    near = [tuple(outline[j]) if 0 <= j < len(outline) and i >= 0 else None for j in (i - 1, i + 1)]
    name = f"Back and continue from {outline[i][1]}" if i >= 0 else "Back and continue"
    return StepLinks(items_html=links_html(*near), label=name, sizing_mode="stretch_width", margin=(8, 10))
