"""Node 01's set-up: one contiguous 32-block pool; each request reserves a slab up front."""

from __future__ import annotations

from engine import EngineConfig
from kvviz.nodes.scenario_base import BLOCK_SIZE, WEIGHTS, OnePool, max_new_for
from kvviz.timeline import Timeline

# Three requests that each end up holding 4 blocks of KV (60 tokens).
PROMPTS = (
    "Free memory is broken into",
    "A good system spends its memory on",
    "Without a cache, the model would",
)
KV_TOKENS = 60
LONG_REQUEST_PROMPT = "Each new token adds one key and"
LONG_REQUEST_BLOCKS = 12


class FragmentationScenario(OnePool):
    """One 32-block pool, each request reserving `reserve_blocks` consecutive blocks; the three
    requests are run to the end."""

    NUM_BLOCKS = 32

    def __init__(self, reserve_blocks: int = 8):
        self.reserve_blocks = reserve_blocks
        cfg = EngineConfig(
            num_blocks=self.NUM_BLOCKS, block_size=BLOCK_SIZE, policy="contiguous",
            reserve_blocks=reserve_blocks, admission="refuse", weights=WEIGHTS,
        )
        self.timeline = Timeline(cfg)
        self.ids = [self.timeline.add(p, max_new_for(p, KV_TOKENS)) for p in PROMPTS]
        self.timeline.run_until_idle()
        r2 = self.timeline.snapshot().request(self.ids[1])
        # '' when R2 gets a slab at this length, else the engine's reason it was refused
        self.r2_refused = r2.reason if r2.status == "refused" else ""

    def free_r2(self) -> int:
        """Release R2, then try a long request that needs a longer slab. Returns its id."""
        self.timeline.release(self.ids[1])
        rid = self.timeline.add(LONG_REQUEST_PROMPT, max_new_for(LONG_REQUEST_PROMPT, KV_TOKENS),
                                LONG_REQUEST_BLOCKS)
        self.timeline.run_until_idle()
        return rid
