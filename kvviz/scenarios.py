"""The lesson's three set-ups, in plain Python on top of the engine (no UI here).

Every figure a node shows is read from these engines' snapshots; the defaults reproduce the
reference lesson's opening figures with real prompts and real generated tokens.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from engine import EngineConfig, Snapshot
from kvviz.timeline import Timeline

BLOCK_SIZE = 16
WEIGHTS = "trained"  # the tiny model in assets/, trained so its continuations are readable

# Node 01: three requests that each end up holding 4 blocks of KV (60 tokens).
FRAGMENTATION_PROMPTS = (
    "Free memory is broken into",
    "A good system spends its memory on",
    "Without a cache, the model would",
)
FRAGMENTATION_KV_TOKENS = 60
LONG_REQUEST_PROMPT = "Each new token adds one key and"
LONG_REQUEST_BLOCKS = 12

# Node 02: short requests needing one or two pages each, alternating.
PAGING_PROMPTS = (
    "Memory is",
    "Each token",
    "The engine",
    "The queue",
    "The librarian",
    "The desk",
)
PAGING_KV_TOKENS = (26, 12)  # a two-page request, then a one-page request

# Node 03: one 96-byte system prompt (6 full blocks) shared by four questions. A question is
# asked as "Q: <question>\nA:", the form the model was trained to answer.
SYSTEM_PROMPT = "You are a patient teacher. Explain how computers use memory, caches and pages, in plain words.\n\n"
RADIX_QUESTIONS = (
    "What is a KV cache?",
    "What is attention?",
    "What is a token?",
    "What is preemption?",
)
QUESTION_OPEN, QUESTION_CLOSE = "Q: ", "\nA:"
RADIX_UNIQUE_BLOCKS = 3
# Questions offered to students one after another in node 03's prompt box (after the four above).
RADIX_MORE_QUESTIONS = (
    "What is a block?",
    "What is thrashing?",
    "What is eviction?",
    "What is a page table?",
    "What is a radix tree?",
    "What is a cache hit?",
)
# A student's own prompt in node 02 generates this many tokens.
CUSTOM_NEW_TOKENS = 8
assert len(SYSTEM_PROMPT.encode()) == 6 * BLOCK_SIZE


def _max_new_for(prompt: str, kv_tokens: int) -> int:
    """max_new_tokens that leaves exactly `kv_tokens` tokens of KV (the last token gets none)."""
    return kv_tokens + 1 - len(prompt.encode())


def clone(scenario):
    """An independent copy of a scenario (engines, timelines, requests), sharing only the
    read-only model weights; it behaves exactly as the original would from here on."""
    memo = {id(t.engine.model): t.engine.model for t in scenario.timelines}
    return copy.deepcopy(scenario, memo)


class OnePool:
    """A scenario with a single pool (`self.timeline`)."""

    timeline: Timeline

    def snapshot(self) -> Snapshot:
        return self.timeline.snapshot()

    @property
    def timelines(self) -> tuple[Timeline, ...]:
        return (self.timeline,)


class Fragmentation(OnePool):
    """Node 01: one 32-block pool, each request reserving `reserve_blocks` consecutive blocks."""

    NUM_BLOCKS = 32

    def __init__(self, reserve_blocks: int = 8, run: bool = True):
        self.reserve_blocks = reserve_blocks
        cfg = EngineConfig(
            num_blocks=self.NUM_BLOCKS, block_size=BLOCK_SIZE, policy="contiguous",
            reserve_blocks=reserve_blocks, admission="refuse", weights=WEIGHTS,
        )
        self.timeline = Timeline(cfg)
        self.ids = [self.timeline.add(p, _max_new_for(p, FRAGMENTATION_KV_TOKENS)) for p in FRAGMENTATION_PROMPTS]
        if run:
            self.timeline.run_until_idle()

    def free_r2(self) -> int:
        """Release R2, then try a long request that needs a longer slab. Returns its id."""
        self.timeline.release(self.ids[1])
        rid = self.timeline.add(
            LONG_REQUEST_PROMPT, _max_new_for(LONG_REQUEST_PROMPT, FRAGMENTATION_KV_TOKENS), LONG_REQUEST_BLOCKS
        )
        self.timeline.run_until_idle()
        return rid



class Paging:
    """Node 02: the same request stream into a contiguous pool (6-block slabs) and a paged one."""

    NUM_BLOCKS = 32
    RESERVE_BLOCKS = 6
    NUM_INITIAL = 4

    def __init__(self, num_initial: int = NUM_INITIAL, run: bool = True):
        base = EngineConfig(num_blocks=self.NUM_BLOCKS, block_size=BLOCK_SIZE, admission="refuse", weights=WEIGHTS)
        self.contiguous = Timeline(replace(base, policy="contiguous", reserve_blocks=self.RESERVE_BLOCKS))
        self.paged = Timeline(replace(base, policy="paged"))
        self.num_added = 0
        for _ in range(num_initial):
            self.add_next(run=False)
        if run:
            self.run_until_idle()

    def next_request(self) -> tuple[str, int]:
        k = self.num_added
        prompt = PAGING_PROMPTS[k % len(PAGING_PROMPTS)]
        return prompt, _max_new_for(prompt, PAGING_KV_TOKENS[k % len(PAGING_KV_TOKENS)])

    def add_next(self, run: bool = True) -> None:
        prompt, max_new = self.next_request()
        self.add(prompt, max_new, run)

    def add_prompt(self, prompt: str, run: bool = True) -> None:
        """Add a request for `prompt`: a prompt of the stream gets the stream's length, any other
        prompt generates CUSTOM_NEW_TOKENS tokens."""
        if prompt in PAGING_PROMPTS:
            k = PAGING_PROMPTS.index(prompt)
            max_new = _max_new_for(prompt, PAGING_KV_TOKENS[k % len(PAGING_KV_TOKENS)])
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
        self.num_added += 1
        if run:
            self.run_until_idle()

    def step(self) -> bool:
        a = self.contiguous.step()
        b = self.paged.step()
        return a or b

    def run_until_idle(self) -> None:
        self.contiguous.run_until_idle()
        self.paged.run_until_idle()

    @property
    def timelines(self) -> tuple[Timeline, ...]:
        return (self.contiguous, self.paged)


class Radix(OnePool):
    """Node 03: one paged pool; four requests share a 6-block system prompt, 3 own blocks each."""

    NUM_BLOCKS = 48

    def __init__(self, prefix_sharing: bool = False, run: bool = True):
        self.prefix_sharing = prefix_sharing
        cfg = EngineConfig(
            num_blocks=self.NUM_BLOCKS, block_size=BLOCK_SIZE, policy="paged",
            prefix_sharing=prefix_sharing, admission="refuse", weights=WEIGHTS,
        )
        self.timeline = Timeline(cfg)
        for q in RADIX_QUESTIONS:
            self.ask(q, run=False)
        if run:
            self.timeline.run_until_idle()

    @staticmethod
    def request_for(question: str) -> tuple[str, int]:
        """The full prompt (system prompt, then the question as "Q: ...\\nA:") and a max_new_tokens that fills exactly
        RADIX_UNIQUE_BLOCKS blocks past the system prompt (less when the question is long)."""
        prompt = f"{SYSTEM_PROMPT}{QUESTION_OPEN}{question}{QUESTION_CLOSE}"
        target = (6 + RADIX_UNIQUE_BLOCKS) * BLOCK_SIZE - 4
        return prompt, max(1, _max_new_for(prompt, max(target, len(prompt.encode()))))

    @staticmethod
    def question_of(prompt: str) -> str:
        """The question a prompt made by `request_for` asks (its inverse)."""
        return prompt.removeprefix(SYSTEM_PROMPT + QUESTION_OPEN).removesuffix(QUESTION_CLOSE)

    def ask(self, question: str, run: bool = True) -> int:
        prompt, max_new = self.request_for(question)
        rid = self.timeline.add(prompt, max_new)
        if run:
            self.timeline.run_until_idle()
        return rid

