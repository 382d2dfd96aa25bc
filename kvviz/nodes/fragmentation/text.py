"""Node 01's prose and metric cards (static: no user text goes through these strings)."""

from engine import ceil_div
from kvviz import formatting as fmt
from kvviz.figures.metric_card import Card
from kvviz.nodes.fragmentation.scenario import KV_TOKENS, LONG_REQUEST_BLOCKS, PROMPTS, FragmentationScenario
from kvviz.nodes.scenario_base import BLOCK_SIZE

TITLE = "Fragmentation"
_NEEDED = ceil_div(KV_TOKENS, BLOCK_SIZE)  # blocks each reply's KV fills: 4
_MOST_THAT_FIT = FragmentationScenario.NUM_BLOCKS // len(PROMPTS)  # the longest slab three requests get: 10
_PROMPT_BLOCKS = max(ceil_div(len(p.encode()), BLOCK_SIZE) for p in PROMPTS)  # the longest prompt's blocks: 3

PROSE = """
### 01 · Why the cache wastes memory

* A request's cache grows by one token per step, up to a length nobody knows at the start.
* The naive engine plays safe: at admission it **reserves one contiguous slab** big enough for
  the longest reply it allows. A short reply leaves most of that slab reserved but empty:
  **internal fragmentation**.
* A finished request still holds its slab: its reply stays cached until the engine lets it go.
  Only a **released** request's slab becomes a hole (press **Free R2**). The free blocks add up,
  yet none of the holes may be long enough for the next slab: **external fragmentation**.
* Together they leave most of the pool holding no token at all.
"""

TRY = (
    f"Try it: each reply here needs {_NEEDED} blocks of KV. Drag **Reserved length** up from {_NEEDED}: "
    "IN USE stays where it is (the same tokens) while RESERVED · EMPTY grows and SLABS FILLED falls, blocks "
    f"locked for nothing; past {_MOST_THAT_FIT} the third slab no longer fits and R3 is refused. Drag it "
    f"below {_NEEDED}: nothing is reserved empty any more, but the replies stop when their slab is full "
    f"(CUT OFF); below {_PROMPT_BLOCKS} a prompt does not even fit its slab, and at 1 all three requests are "
    f"refused. Then press **Free R2**: a request that needs a {LONG_REQUEST_BLOCKS}-block slab arrives."
)

PREDICT = ("Predict first: with {reserve}-block slabs, R2 is released and a request needing "
           f"{LONG_REQUEST_BLOCKS} blocks in a row arrives. Will it get its slab?")
WHY_REFUSED = ("after R2's release {free} blocks are free, but the longest run of them is {run}, short of "
               "the {need} in a row {name} needs.")
WHY_ADMITTED = "after R2's release a run of {need} free blocks was there: {name} got blocks {first}–{last}."
FREED = "Free R2 is done: press Reset to start again."
NO_R2 = "Free R2 is off at this length: R2 holds no slab to free ({why})."
RAN_FIRST = "R1, R2 and R3 were run to the end first; then R2 was released."

STRIP_TITLE = f"GPU KV cache · {FragmentationScenario.NUM_BLOCKS} blocks, in address order"
RESERVE_LABEL = "Reserved length (blocks)"
LEGEND = ("tokens", "reserved", "free", "gap", "read", "bar")

CARDS = (  # (the registry's: each reads the engine's Metrics)
    Card("IN USE", fmt.in_use, "Blocks holding at least one token, of all blocks in the pool."),
    Card("SLABS FILLED", fmt.slabs_filled, "Tokens held ÷ token slots in the reserved slabs: the longer "
         "the slab, the lower."),
    Card("RESERVED · EMPTY", fmt.reserved_empty, "Blocks locked in a request's slab that hold no token yet."),
    # the other cost of the reserved length: a slab too short stops the reply
    Card("CUT OFF", fmt.cut_off, "Replies the engine stopped because their slab was full, of the requests "
         "holding a slab."),
    Card("LARGEST GAP", fmt.largest_gap, "Longest run of free blocks next to each other, of all free blocks."),
)
