"""The block strip's legend: each cue it draws, drawn small with its meaning (static HTML).

A node shows only the cues its pictures can draw (`legend(("tokens", "free", …))`)."""

from __future__ import annotations

import panel as pn

from kvviz.figures.cells import READ_HALO

ENTRIES = {
    "tokens": '<svg width="22" height="16"><rect x="1" y="1" width="20" height="14" fill="#E69F00" '
              'stroke="#333"/>'
              "</svg> tokens (colour = request)",
    "reserved": '<svg width="22" height="16"><path d="M1 11L8 1M6 15L16 1M13 15L21 4" stroke="#56B4E9" '
                'stroke-width="2"/><rect x="1" y="1" width="20" height="14" fill="none" stroke="#56B4E9" '
                'stroke-width="1.5"/></svg> reserved, empty',
    "free": '<svg width="22" height="16"><rect x="1" y="1" width="20" height="14" fill="#f4f4f4" '
            'stroke="#b9b9b9"/>'
            "</svg> free",
    "gap": '<svg width="34" height="16"><rect x="1" y="1" width="32" height="14" fill="#f4f4f4" '
           'stroke="#444" stroke-width="2" stroke-dasharray="4 3"/></svg> hole (its length)',
    "shared": '<svg width="22" height="16"><rect x="2" y="2" width="18" height="12" fill="#8a8a8a" '
              'stroke="#000" stroke-width="3"/></svg> shared (×n)',
    "cached": '<svg width="22" height="16"><rect x="1" y="1" width="20" height="14" fill="#bdbdbd" '
              'stroke="#555" stroke-dasharray="3 2"/></svg> cached, idle',
    "copy": '<svg width="22" height="16"><rect x="1" y="1" width="20" height="14" fill="#E69F00" '
            'fill-opacity="0.55" stroke="#333"/><path d="M2 4.5H20M2 11.5H20" stroke="#333" '
            'stroke-opacity="0.6" stroke-width="1.5" stroke-dasharray="1.5 2"/></svg> ≡ copy',
    "read": f'<svg width="26" height="20"><rect x="0" y="0" width="26" height="20" fill="{READ_HALO}"/>'
            '<rect x="3" y="3" width="20" height="14" fill="#E69F00" stroke="#333"/></svg> '
            "read last step",
    "bar": '<svg width="22" height="16"><rect x="1" y="10" width="14" height="4" fill="#222"/></svg> '
           "bar = how full",
}


# What each cue means in full: behind the legend's "?" (a <details>: a click, Enter or a tap opens it).
MEANING = {
    "tokens": "a block holding tokens of KV; its colour and name are its request's",
    "reserved": "hatched: reserved by a request's slab, no token written into it yet",
    "free": "free: no request holds it",
    "gap": "a dashed box around free blocks in a row: a hole, with its length",
    "shared": "a thick outline with ×n: one block shared by n requests",
    "cached": "grey, dashed: cached in the radix tree, used by no running request (it can be evicted)",
    "copy": "dotted: the same tokens as an earlier block (a copy sharing would store once)",
    "read": "a red halo: read by the attention kernel in the last step (while you step or play)",
    "bar": "the bar at a cell's foot: the tokens it holds ÷ the tokens a block holds",
}


def legend_html(keys) -> str:
    items = "".join(f'<span data-cue="{k}">{ENTRIES[k]}</span>' for k in keys)
    more = "".join(f"<li>{MEANING[k]}</li>" for k in keys)
    return (f'<div class="kv-legend" aria-label="How to read the block strip">{items}'
            '<details class="kv-more kv-q">'
            '<summary aria-label="What the cues mean" title="What the cues mean">?</summary>'
            f'<ul>{more}</ul></details></div>')


def legend(keys=tuple(ENTRIES)) -> pn.pane.HTML:
    return pn.pane.HTML(legend_html(keys), sizing_mode="stretch_width", margin=(0, 10),
                        css_classes=["kv-legend-box"])
