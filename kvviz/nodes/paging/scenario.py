"""Node 02's set-up: the same request stream into a contiguous pool and a paged one."""

from __future__ import annotations

from dataclasses import replace

from engine import EngineConfig
from kvviz.nodes.scenario_base import BLOCK_SIZE, WEIGHTS, max_new_for
from kvviz.timeline import Timeline

# The two requests already in both pools at the start: about four pages each (63 and 65 tokens
# of KV: 4 and 5 pages), in 6-block slabs: 128 tokens in 192 slabs' slots (67%) or in 9 pages (89%).
INITIAL = (
    ("Each request keeps a key and a value for", 63),
    ("The pool hands out one small page at a time, so", 65),
)
# The stream Add request sends: a page or two each, alternating (31 and 15 tokens of KV, each
# filling its last page but one slot).
PROMPTS = (
    "Memory is",
    "Each token",
    "The engine",
    "The queue",
    "The librarian",
    "The desk",
)
KV_TOKENS = (31, 15)
CUSTOM_NEW_TOKENS = 8  # a student's own prompt generates this many tokens


class PagingScenario:
    """The same requests into a contiguous pool (6-block slabs) and a paged pool; the `INITIAL`
    two are run to the end."""

    NUM_BLOCKS = 32
    RESERVE_BLOCKS = 6
    NUM_INITIAL = len(INITIAL)

    def __init__(self):
        base = EngineConfig(num_blocks=self.NUM_BLOCKS, block_size=BLOCK_SIZE, admission="refuse",
                            weights=WEIGHTS)
        self.contiguous = Timeline(replace(base, policy="contiguous", reserve_blocks=self.RESERVE_BLOCKS))
        self.paged = Timeline(replace(base, policy="paged"))
        for prompt, kv_tokens in INITIAL:
            self.add(prompt, max_new_for(prompt, kv_tokens), run=False)
        self.run_until_idle()

    def added(self) -> list[str]:
        """The prompts added since the defaults, read from the pools' history (a step back past an
        add, or a Rewind, undoes it)."""
        return [op.prompt for op in self.paged.ops if op.kind == "add"][self.NUM_INITIAL:]

    def next_request(self) -> tuple[str, int]:
        """The stream's next request after the requests the pools hold now."""
        k = len(self.added())
        prompt = PROMPTS[k % len(PROMPTS)]
        return prompt, max_new_for(prompt, KV_TOKENS[k % len(KV_TOKENS)])

    def add_prompt(self, prompt: str, run: bool = True) -> None:
        """Add a request for `prompt`: a prompt of the stream gets the stream's length, any other
        prompt generates CUSTOM_NEW_TOKENS tokens."""
        if prompt in PROMPTS:
            k = PROMPTS.index(prompt)
            max_new = max_new_for(prompt, KV_TOKENS[k % len(KV_TOKENS)])
        else:
            max_new = CUSTOM_NEW_TOKENS
        self.add(prompt, max_new, run)

    def add(self, prompt: str, max_new_tokens: int, run: bool = True) -> None:
        """Add one request to both pools (validated by both before either changes)."""
        self.paged.add(prompt, max_new_tokens)
        try:
            self.contiguous.add(prompt, max_new_tokens)
        except ValueError:
            self.paged.replay(self.paged.ops[:-1])
            raise
        if run:
            self.run_until_idle()

    def run_until_idle(self) -> None:
        self.contiguous.run_until_idle()
        self.paged.run_until_idle()

    @property
    def timelines(self) -> tuple[Timeline, ...]:
        return (self.contiguous, self.paged)
