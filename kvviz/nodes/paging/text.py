"""Node 02's prose and metric cards (static: no user text goes through these strings)."""

from kvviz import formatting as fmt
from kvviz.nodes.paging.scenario import PagingScenario
from kvviz.state.card import Card

TITLE = "PagedAttention"
_SLAB = PagingScenario.RESERVE_BLOCKS

HEADING = "## 02 · PagedAttention: the cache in fixed pages"
PROSE = """
Cut the cache into small fixed **pages** (16 tokens each), handed out only when a request's last
page is full, and give each request a **block table** (logical page → physical block), so its pages can lie
anywhere. The waste is at most one part-filled page per request, and any free block fits any request.
"""

# The bullets the lead condenses, one click away (a <details>).
MORE = """
<details class="kv-more"><summary>Why? The three steps</summary>

* Cut the cache into small fixed **pages** (here one block of 16 tokens). A request takes a new
  page only when its last one is full, so nothing is reserved ahead of time.
* Each request keeps a **block table**: logical page 0, 1, 2 … → whichever physical block was
  free. Its pages can lie anywhere in the pool.
* The waste is at most the unfilled tail of one page per request, and since any free block fits
  any request, the holes of the naive engine no longer strand memory.

</details>
"""

# The reference lesson's card, shown (not folded away): Explain it back asks about it.
ANALOGY = """
<div class="kv-kicker">OS analogy · virtual memory</div>

### The KV cache gets a page table

A program sees one tidy, contiguous address space; the OS page table quietly maps each of its pages to whatever
physical frame is free. A block table does the same for a request's tokens: contiguous to
attention, scattered in the pool. That is where vLLM's PagedAttention got its name.
"""  # noqa: E501 (data: a string kept as written)

TRY = (
    "Try it: press **Add request** a few times. The contiguous pool locks a whole "
    f"{_SLAB}-block slab at once and soon refuses (NAIVE REJECTS); the paged pool takes a page only when one "
    "fills and keeps admitting."
)
TRY_MORE = (
    '<details class="kv-more"><summary>More to try</summary>\n\n'
    f"Watch a request generate: the contiguous pool refuses once fewer than {_SLAB} blocks are free. Type "
    "your own prompt in the box to send that instead. Both pools' requests are listed under the block tables."
    "\n\n</details>"
)

PREDICT = ("Predict first: the contiguous pool has {free} free blocks, and the next request locks a "
           f"{_SLAB}-block slab there. Will the contiguous pool admit it?")
WHY_REFUSED = "in the contiguous pool, {reason}."
PAGED_TOO = " The paged pool admitted it: it takes a page only as one fills."
WHY_ADMITTED = (
    "the contiguous pool still had room for its {slab}-block slab: it got blocks {first}–{last}, leaving "
    "{free} free.")
LEGEND = ("tokens", "reserved", "free", "gap", "copy", "read", "bar")

PROMPT_LABEL = "Prompt (plain text, up to 200 characters)"
CONTIGUOUS_TITLE = f"CONTIGUOUS · each request reserves {_SLAB} blocks"
PAGED_TITLE = "PAGED · a block only when a page fills"

CARDS = (
    Card("CONTIGUOUS", fmt.full, "Naive pool: tokens held ÷ token slots locked by slabs.", of="contiguous"),
    Card("PAGED", fmt.full, "Paged pool: tokens held ÷ token slots in pages handed out.", of="paged"),
    Card("NAIVE REJECTS", fmt.rejects, "Requests the contiguous pool refused since the start.",
         of="contiguous"),
)
