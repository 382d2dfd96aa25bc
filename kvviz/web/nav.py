"""The numbered navigation of the lesson: links that scroll to each node's section.

A JSComponent because Panel renders every section inside shadow roots, where `#anchor` links
cannot reach: the click finds the section by its `kv-node-<key>` class and scrolls to it.
Labels are static lesson text.
"""

from __future__ import annotations

import html

import param
from panel.custom import JSComponent

from kvviz.web.js_source import js_source

_ESM = js_source(__file__, "find_sections.js", "nav.js")


def items_html(items) -> str:
    """`items`: (key, number, label) per node, in page order."""
    e = html.escape
    return "".join(
        f'<a href="#{e(key)}" data-node="{e(key)}"><span class="kv-nav-num">{e(num)}</span>'
        f'<span class="kv-nav-label">{e(label)}</span></a>'
        for key, num, label in items
    )


class Nav(JSComponent):
    vertical = param.Boolean(default=False)
    items_html = param.String(default="", doc="the links, from items_html()")

    _esm = _ESM
