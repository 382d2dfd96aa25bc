"""Pictures: each figure is handed parameter references to draw (the strip, the page table, the
radix tree, the block tree, line charts, the legend, metric cards, request lists). No controls,
no forms (kvviz/controls/), no lesson state beyond the types in kvviz/state/."""
