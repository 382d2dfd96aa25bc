"""Node 02's prose and metric cards (static: no user text goes through these strings)."""

from kvviz import formatting as fmt
from kvviz.figures.metric_card import Card
from kvviz.nodes.paging.scenario import PagingScenario

TITLE = "PagedAttention"
_SLAB = PagingScenario.RESERVE_BLOCKS

PROSE = """
### 02 · PagedAttention: the cache in fixed pages

* Cut the cache into small fixed **pages** (here one block of 16 tokens). A request takes a new
  page only when its last one is full, so nothing is reserved ahead of time.
* Each request keeps a **block table**: logical page 0, 1, 2 … → whichever physical block was
  free. Its pages can lie anywhere in the pool.
* The waste is at most the unfilled tail of one page per request, and since any free block fits
  any request, the holes of the naive engine no longer strand memory.
"""

ANALOGY = """
**The operating-system idea: virtual memory.** A program sees one tidy, contiguous address
space; the OS page table quietly maps each of its pages to some physical frame, wherever one is
free. A block table does the same for a request's tokens: contiguous to the model's attention,
scattered in the pool. That is where vLLM's PagedAttention got its name.
"""

TRY = (
    "Try it: press **Add request** and watch the request generate. Both pools get the same request: "
    f"the contiguous one locks a whole {_SLAB}-block slab at once, the paged one takes a page only when a "
    "page fills. Press it a few more times: once fewer than "
    f"{_SLAB} blocks are free, the contiguous pool refuses (NAIVE REJECTS) while the paged pool keeps "
    "admitting. Type your own prompt in the box to send that "
    "instead. Both pools' requests are listed under the block tables."
)

PREDICT = ("Predict first: the contiguous pool has {free} free blocks, and the next request locks a "
           f"{_SLAB}-block slab there (the paged pool gives it just the pages it fills). Will the contiguous "
           "pool admit it?")
WHY_REFUSED = "in the contiguous pool, {reason}."
PAGED_TOO = " The paged pool admitted it: it takes a page only as one fills."
WHY_ADMITTED = "the contiguous pool still had room for its {slab}-block slab: it got blocks {first}–{last}, leaving {free} free."
LEGEND = ("tokens", "reserved", "free", "gap", "copy", "read", "bar")

PROMPT_LABEL = "Prompt (plain text, up to 200 characters)"
CONTIGUOUS_TITLE = f"CONTIGUOUS · each request reserves {_SLAB} blocks"
PAGED_TITLE = "PAGED · a block only when a page fills"

CARDS = (
    Card("CONTIGUOUS", fmt.full, "Naive pool: tokens held ÷ token slots locked by slabs.", of="contiguous"),
    Card("PAGED", fmt.full, "Paged pool: tokens held ÷ token slots in pages handed out.", of="paged"),
    Card("NAIVE REJECTS", fmt.rejects, "Requests the contiguous pool refused since the start.", of="contiguous"),
)
