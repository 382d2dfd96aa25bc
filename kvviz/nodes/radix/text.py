"""Node 03's prose and metric cards (static: no user text goes through these strings)."""

from kvviz import formatting as fmt
from kvviz.nodes.radix.scenario import RadixScenario
from kvviz.state.card import Card

TITLE = "RadixAttention"

PROSE = """
## 03 · RadixAttention: reuse a shared prefix

Requests often begin with the same tokens (a system prompt, a few examples), and identical tokens at
identical positions have identical keys and values. Keep cached prefixes in a **radix tree**: a new
request **reuses** the blocks of the part that matches, and only its own suffix costs new blocks and prefill.
"""

# The bullets the lead condenses, one click away (a <details>).
MORE = """
<details class="kv-more"><summary>Why? The four steps</summary>

* Requests often begin with the same tokens: a system prompt, a few examples, a shared history.
  Identical tokens at identical positions produce identical keys and values.
* So keep the cached prefixes in a **radix tree** (a trie whose edges hold whole runs of tokens).
  A new request walks the tree; the blocks of the part that matches are **reused**, neither
  recomputed nor stored twice.
* Only the request's own suffix costs new blocks and new prefill work. Blocks are shared whole:
  a partly filled block is never shared.
* When the pool runs dry, cached prefixes that no running request uses are **evicted**, least
  recently used first.

</details>
"""

TRY = (
    "Try it: switch **Prefix sharing** on and the four copies of the system prompt collapse into one "
    "shared trunk."
)
TRY_MORE = (
    '<details class="kv-more"><summary>More to try</summary>\n\n'
    "Ask your own question; press **Release oldest** to leave a finished request's "
    "blocks in the cache, then **Fill the pool** until the engine has to evict (least recently used first)."
    "\n\n</details>"
)

PREDICT = ("Predict first: the {live} live requests store {stored} blocks, each its own copy of the system "
           "prompt. Switch Prefix sharing on: how many blocks will BLOCKS STORED read?")
WHY_STORED = ("the engine stores each block once: {sum} blocks (the system prompt's blocks shared, then "
              "each request's own).")
LEGEND = ("tokens", "free", "shared", "cached", "copy", "read", "bar")

QUESTION_LABEL = "Your question, after the shared system prompt (up to 200 characters)"
STRIP_TITLE = f"GPU KV cache · {RadixScenario.NUM_BLOCKS} blocks · paged"

CARDS = (
    Card("BLOCKS STORED", fmt.blocks_stored,
         "Distinct physical blocks holding KV for live requests (idle cached blocks are not counted)."),
    Card("vs NO SHARING", fmt.without_sharing,
         "Blocks the live requests would hold if each kept its own copy."),
    Card("SAVED", fmt.saved,
         "1 − stored ÷ no-sharing: the share of the live requests' memory that sharing saves."),
)
PREFILL_CARDS = (
    Card("PREFILL COMPUTED",
         lambda m: f"{m.prefill_tokens_computed} tok", "Prompt tokens whose KV the model computed."),
    Card("PREFIX REUSED", lambda m: f"{m.prefix_hit_tokens} tok",
         "Prompt tokens whose KV came from the radix cache instead."),
    Card("PREFILL TIME", lambda m: fmt.seconds(m.prefill_seconds),
         "Measured wall time of all prefill forwards on this machine."),
)
