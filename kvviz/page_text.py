"""The page's own prose, around the nodes (static: no user text goes through these strings).
Each node's prose is in its package (kvviz/nodes/<key>/text.py)."""

TITLE = "Managing the KV cache"

INTRO = """
A model keeps the keys and values of every token it has seen, its **KV cache**; below, a small real
model serves real requests into a pool of 16-token **blocks**, and every cell you see is one of them.

<details class="kv-more"><summary>More about the KV cache</summary>

While a transformer generates, it keeps the keys and values of every token it has seen, so
each new token only attends to stored vectors instead of recomputing them. That **KV cache** is
the largest thing a serving engine holds in memory, and no one knows in advance how long a
reply, and so its cache, will grow. Below, a small real model serves real requests into a pool
of fixed-size **blocks** (16 tokens each). Every cell you see is one of the engine's blocks.

</details>
"""

SUMMARY = """
## In short: the three ideas

1. **Why memory goes to waste.** A reply's cache grows token by token to a length nobody can
   know when it starts. An engine that sets aside the longest possible slab up front leaves
   most of it holding nothing (internal fragmentation), and the holes that released slabs leave
   behind are often too short for the next request (external fragmentation).
2. **Pages: PagedAttention.** Hand the cache out in small blocks of a fixed size, one more only
   when the last is full, and give every request a block table from its logical pages to
   wherever its blocks happen to be. At most one part-filled block per request is wasted, and
   any free block will do for any request: the virtual memory of an operating system, applied
   to keys and values.
3. **Sharing: RadixAttention.** Requests that open with the same tokens hold the same keys and
   values for them. Cached prefixes kept in a radix tree let a new request reuse those blocks
   rather than compute and store them again; only its own suffix costs memory and prefill.
   When the pool runs dry, the prefixes nobody is using go first, least recently used first.
"""

NEXT = """
## What to read next

Paging and prefix sharing fit more requests into the cache, yet each key and value stored there
still costs bytes. Next comes **quantization**: storing the weights and the cache in 8 or 4 bits instead of 16,
and what that costs in accuracy. The papers behind this lesson: *Efficient Memory Management for
Large Language Model Serving with PagedAttention* (Kwon et al., 2023, vLLM) and *SGLang: Efficient
Execution of Structured Language Model Programs* (Zheng et al., 2024, RadixAttention).
"""  # noqa: E501 (data: a string kept as written)

FOOTER = (
    "Every block, token and number on this page comes from the engine's snapshots "
    "(`engine.snapshot()`), computed by a real model; nothing is simulated."
)
