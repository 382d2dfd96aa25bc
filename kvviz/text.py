"""The lesson's prose (static: no user text ever goes through these strings)."""

TITLE = "Managing the KV cache"

INTRO = """
While a transformer generates, it keeps the keys and values of every token it has seen, so
each new token only attends to stored vectors instead of recomputing them. That **KV cache** is
the largest thing a serving engine holds in memory, and no one knows in advance how long a
reply, and so its cache, will grow. Below, a small real model serves real requests into a pool
of fixed-size **blocks** (16 tokens each). Every cell you see is one of the engine's blocks.
"""

NAV = (
    ("fragmentation", "01", "Fragmentation"),
    ("paging", "02", "PagedAttention"),
    ("radix", "03", "RadixAttention"),
    ("explain", "✎", "Explain it back"),
)

FRAGMENTATION = """
### 01 · Why the cache wastes memory

* A request's cache grows by one token per step, up to a length nobody knows at the start.
* The naive engine plays safe: at admission it **reserves one contiguous slab** big enough for
  the longest reply it allows. A short reply leaves most of that slab reserved but empty:
  **internal fragmentation**.
* When a request finishes, its slab becomes a hole. The free blocks add up, yet none of the
  holes may be long enough for the next slab: **external fragmentation**.
* Together they leave most of the pool holding no token at all.
"""

FRAGMENTATION_TRY = (
    "Try it: drag **Reserved length** up and watch IN USE fall while RESERVED · EMPTY grows. "
    "Then press **Free R2**: a request that needs a 12-block slab arrives and is refused, even though "
    "enough blocks are free."
)

PAGING = """
### 02 · PagedAttention: the cache in fixed pages

* Cut the cache into small fixed **pages** (here one block of 16 tokens). A request takes a new
  page only when its last one is full, so nothing is reserved ahead of time.
* Each request keeps a **block table**: logical page 0, 1, 2 … → whichever physical block was
  free. Its pages can lie anywhere in the pool.
* The waste is at most the unfilled tail of one page per request, and since any free block fits
  any request, the holes of the naive engine no longer strand memory.
"""

PAGING_ANALOGY = """
**The operating-system idea: virtual memory.** A program sees one tidy, contiguous address
space; the OS page table quietly maps each of its pages to some physical frame, wherever one is
free. A block table does the same for a request's tokens: contiguous to the model's attention,
scattered in the pool. That is where vLLM's PagedAttention got its name.
"""

PAGING_TRY = (
    "Try it: press **Add request** and watch the request generate. Both pools get the same request: "
    "the contiguous one locks a whole 6-block slab at once, the paged one takes a page only when a "
    "page fills. Press it a few more times: the contiguous pool soon starts refusing (NAIVE "
    "REJECTS) while the paged pool keeps admitting. Type your own prompt in the box to send that "
    "instead."
)

RADIX = """
### 03 · RadixAttention: reuse a shared prefix

* Requests often begin with the same tokens: a system prompt, a few examples, a shared history.
  Identical tokens at identical positions produce identical keys and values.
* So keep the cached prefixes in a **radix tree** (a trie whose edges hold whole runs of tokens).
  A new request walks the tree; the blocks of the part that matches are **reused**, neither
  recomputed nor stored twice.
* Only the request's own suffix costs new blocks and new prefill work. Blocks are shared whole:
  a partly filled block is never shared.
* When the pool runs dry, cached prefixes that no running request uses are **evicted**, least
  recently used first.
"""

RADIX_TRY = (
    "Try it: switch **Prefix sharing** on and the four copies of the system prompt collapse into one "
    "shared trunk. Ask your own question; press **Release oldest** to leave a finished request's "
    "blocks in the cache, then **Fill the pool** until the engine has to evict."
)

EXPLAIN = """
### Explain it back

Write the answer in your own words, as if to a classmate. The panel below reads the live state
of the three nodes above: change them and the facts, and the right answers, change too.
"""

FOOTER = (
    "Every block, token and number on this page comes from the engine's snapshots "
    "(`engine.snapshot()`), computed by a real model; nothing is simulated."
)
