"""Node 01's prose and metric cards (static: no user text goes through these strings)."""

from kvviz import formatting as fmt
from kvviz.figures.metric_card import Card
from kvviz.nodes.fragmentation.scenario import LONG_REQUEST_BLOCKS, FragmentationScenario

TITLE = "Fragmentation"

PROSE = """
### 01 · Why the cache wastes memory

* A request's cache grows by one token per step, up to a length nobody knows at the start.
* The naive engine plays safe: at admission it **reserves one contiguous slab** big enough for
  the longest reply it allows. A short reply leaves most of that slab reserved but empty:
  **internal fragmentation**.
* When a request finishes, its slab becomes a hole. The free blocks add up, yet none of the
  holes may be long enough for the next slab: **external fragmentation**.
* Together they leave most of the pool holding no token at all.
"""

TRY = (
    "Try it: drag **Reserved length** up and watch IN USE fall while RESERVED · EMPTY grows. "
    f"Then press **Free R2**: a request that needs a {LONG_REQUEST_BLOCKS}-block slab arrives and is refused, "
    "even though enough blocks are free."
)

STRIP_TITLE = f"GPU KV cache · {FragmentationScenario.NUM_BLOCKS} blocks · contiguous slabs"
RESERVE_LABEL = "Reserved length (blocks)"

CARDS = (
    Card("IN USE", fmt.in_use, "Blocks holding at least one token, of all blocks in the pool."),
    Card("RESERVED · EMPTY", fmt.reserved_empty, "Blocks locked in a request's slab that hold no token yet."),
    Card("LARGEST GAP", fmt.largest_gap, "Longest run of free blocks next to each other, of all free blocks."),
)
