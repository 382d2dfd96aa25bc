"""The page's own prose, around the nodes (static: no user text goes through these strings).
Each node's prose is in its package (kvviz/nodes/<key>/text.py)."""

TITLE = "Managing the KV cache"

INTRO = """
While a transformer generates, it keeps the keys and values of every token it has seen, so
each new token only attends to stored vectors instead of recomputing them. That **KV cache** is
the largest thing a serving engine holds in memory, and no one knows in advance how long a
reply, and so its cache, will grow. Below, a small real model serves real requests into a pool
of fixed-size **blocks** (16 tokens each). Every cell you see is one of the engine's blocks.
"""

FOOTER = (
    "Every block, token and number on this page comes from the engine's snapshots "
    "(`engine.snapshot()`), computed by a real model; nothing is simulated."
)
