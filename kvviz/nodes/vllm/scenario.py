"""Node 04's own side: our engine serving the requests a student sends to vLLM, with vLLM's pool
geometry (blocks of 32 tokens, 64 of them), so that the two engines can be compared block for
block: the same tokens must give the same greedy continuation and the same block hashes.

Each request is served to its end and released, as vLLM does with a finished completion: its
full blocks stay in the prefix cache (idle, evictable) for the next request to reuse.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine import Engine, EngineConfig, Snapshot
from kvviz.nodes.prompts import QUESTION_CLOSE, QUESTION_OPEN, QUESTIONS, SYSTEM_PROMPT
from vllm_watch.defaults import BLOCK_SIZE, NUM_BLOCKS
from vllm_watch.wire import block_hashes

MAX_NEW_TOKENS = 64  # per request, in both engines: 121 + 64 tokens fill 5 blocks of 32
LESSON_QUESTIONS = QUESTIONS  # node 03's four questions, after its 96-token (3-block) system prompt


def prompt_for(question: str) -> str:
    """Node 03's prompt shape: the shared system prompt, then "Q: <question>\\nA:"."""
    return f"{SYSTEM_PROMPT}{QUESTION_OPEN}{question}{QUESTION_CLOSE}"


@dataclass(frozen=True)
class Exchange:
    """One request, as each engine answered it."""

    question: str
    vllm_ids: tuple[int, ...] = ()
    vllm_text: str = ""
    vllm_cached: int | None = None  # prompt tokens vLLM found cached (None: not reported)
    our_ids: tuple[int, ...] = ()
    our_text: str = ""
    our_cached: int | None = None
    error: str = ""  # why vLLM did not answer, in words ("" when it did)

    @property
    def pending(self) -> bool:
        return not self.error and not self.our_ids

    @property
    def first_divergence(self) -> int | None:
        """The first generated position where the engines differ, or None when they agree."""
        for i, (a, b) in enumerate(zip(self.vllm_ids, self.our_ids, strict=False)):
            if a != b:
                return i
        return None if len(self.vllm_ids) == len(self.our_ids) else min(len(self.vllm_ids), len(self.our_ids))


class Mirror:
    """Our engine, paged with prefix sharing, in vLLM's geometry; built on first use."""

    def __init__(self):
        self.engine = Engine(EngineConfig(num_blocks=NUM_BLOCKS, block_size=BLOCK_SIZE, policy="paged",
                                          prefix_sharing=True, admission="wait"))

    def serve(self, prompts: list[str], max_new_tokens: int = MAX_NEW_TOKENS) -> list[tuple[list[int], int]]:
        """Serve `prompts` together (one batch, as vLLM batches concurrent requests) to the end,
        release them; returns each one's (generated ids, prompt tokens reused from the cache)."""
        ids = [self.engine.add_request(p, max_new_tokens) for p in prompts]
        while self.engine.has_unfinished() and self.engine.step():
            pass
        out = []
        for rid in ids:
            req = self.engine.requests[rid]
            out.append((list(req.output_ids), req.num_prefix_hit))
            if req.status.value == "finished":
                self.engine.release(rid)
        return out

    def snapshot(self) -> Snapshot:
        return self.engine.snapshot()

    def block_hashes(self) -> dict[int, int]:
        """Physical block id -> vLLM's hash for the same tokens, for every block in our radix tree
        (the hash chains the whole prefix, so it is computed along each path from the root)."""
        radix = self.engine.scheduler.radix
        out: dict[int, int] = {}
        stack = [(child, ()) for child in radix.root.children.values()]
        while stack:
            node, before = stack.pop()
            path = before + tuple(node.key)
            hashes = block_hashes(path, BLOCK_SIZE)
            for block, h in zip(node.blocks, hashes[-len(node.blocks):], strict=True):
                out[block] = h
            stack.extend((child, path) for child in node.children.values())
        return out
