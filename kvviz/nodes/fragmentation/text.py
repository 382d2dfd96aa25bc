"""Node 01's prose and metric cards (static: no user text goes through these strings)."""

from engine import ceil_div
from kvviz import formatting as fmt
from kvviz.nodes.fragmentation.scenario import KV_TOKENS, LONG_REQUEST_BLOCKS, PROMPTS, FragmentationScenario
from kvviz.nodes.scenario_base import BLOCK_SIZE
from kvviz.state.card import Card

TITLE = "Fragmentation"
_NEEDED = ceil_div(KV_TOKENS, BLOCK_SIZE)  # blocks each reply's KV fills: 4
_MOST_THAT_FIT = FragmentationScenario.NUM_BLOCKS // len(PROMPTS)  # the longest slab three requests get: 10
_PROMPT_BLOCKS = max(ceil_div(len(p.encode()), BLOCK_SIZE) for p in PROMPTS)  # the longest prompt's blocks: 3

HEADING = "## 01 · Why the cache wastes memory"
PROSE = """
A reply's cache gets longer with every token, to a length nobody knows at the start. The naive engine
**reserves one contiguous slab** per request up front: its empty part is **internal
fragmentation**, and a released slab leaves a hole that may be too short for the next one:
**external fragmentation**.
"""

# The whole story, one click away (a <details>, keyboard-focusable): what the lead sentence condenses.
MORE = """
<details class="kv-more"><summary>Why? The four steps</summary>

* A request's cache grows by one token per step, up to a length nobody knows at the start.
* The naive engine plays safe: at admission it **reserves one contiguous slab** big enough for
  the longest reply it allows. A short reply leaves most of that slab reserved but empty:
  **internal fragmentation**.
* A finished request still holds its slab: its reply stays cached until the engine lets it go.
  Only a **released** request's slab becomes a hole (press **Free R2**). The free blocks add up,
  yet none of the holes may be long enough for the next slab: **external fragmentation**.
* Together they leave most of the pool holding no token at all.

</details>
"""

TRY = (
    f"Try it: each reply needs {_NEEDED} blocks. Drag **Reserved length** up: IN USE stays where it is while "
    "RESERVED · EMPTY grows and SLABS FILLED falls. Then press **Free R2**."
)
TRY_MORE = (
    '<details class="kv-more"><summary>More to try</summary>\n\n'
    f"Past {_MOST_THAT_FIT} blocks the third slab no longer fits and R3 is refused. Below {_NEEDED}, nothing "
    "is reserved empty any more, but the replies stop when their slab is full (CUT OFF); below "
    f"{_PROMPT_BLOCKS} a prompt does not even fit its slab, and at 1 all three requests are refused. After "
    f"**Free R2**, a request that needs a {LONG_REQUEST_BLOCKS}-block slab arrives.\n\n</details>"
)

PREDICT = ("Predict first: with {reserve}-block slabs, R2 is released, then a request needing "
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
    Card("LARGEST GAP", fmt.largest_gap,
         "Longest run of free blocks next to each other, of all free blocks."),
)
