"""The block strip's legend: each cue it draws, drawn small with its meaning (static HTML)."""

from __future__ import annotations

import panel as pn

LEGEND_HTML = """
<div class="kv-legend" aria-label="How to read the block strip">
  <span><svg width="22" height="16"><rect x="1" y="1" width="20" height="14" fill="#E69F00" stroke="#333"/></svg>
    holds tokens (colour and name = request)</span>
  <span><svg width="22" height="16"><defs><pattern id="kvh" width="5" height="5" patternUnits="userSpaceOnUse"
    patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="5" stroke="#56B4E9" stroke-width="2"/></pattern></defs>
    <rect x="1" y="1" width="20" height="14" fill="url(#kvh)" stroke="#56B4E9" stroke-width="1.5"/></svg>
    reserved, empty (hatched)</span>
  <span><svg width="22" height="16"><rect x="1" y="1" width="20" height="14" fill="#f4f4f4" stroke="#b9b9b9"/></svg>
    free</span>
  <span><svg width="22" height="16"><rect x="2" y="2" width="18" height="12" fill="#8a8a8a" stroke="#000"
    stroke-width="3"/></svg> shared by several requests (×n)</span>
  <span><svg width="22" height="16"><rect x="1" y="1" width="20" height="14" fill="#bdbdbd" stroke="#555"
    stroke-dasharray="3 2"/></svg> cached, idle (dashed)</span>
  <span><svg width="22" height="16"><rect x="1" y="1" width="20" height="14" fill="#E69F00" fill-opacity="0.55"
    stroke="#333"/><path d="M2 4.5H20M2 11.5H20" stroke="#333" stroke-opacity="0.6" stroke-width="1.5"
    stroke-dasharray="1.5 2"/></svg>
    ≡ copy: same tokens as an earlier block (dotted)</span>
  <span><svg width="22" height="16"><rect x="1" y="10" width="14" height="4" fill="#222"/></svg>
    bar = tokens / block size</span>
</div>
"""


def legend() -> pn.pane.HTML:
    return pn.pane.HTML(LEGEND_HTML, sizing_mode="stretch_width", margin=(0, 10))
