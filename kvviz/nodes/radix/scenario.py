"""Node 03's set-up: one paged 48-block pool; four questions after one shared system prompt."""

from __future__ import annotations

import functools
import re

from engine import Engine, EngineConfig
from engine.util import ceil_div
from kvviz.nodes.prompts import QUESTION_CLOSE, QUESTION_OPEN, QUESTIONS, SYSTEM_PROMPT
from kvviz.nodes.scenario_base import BLOCK_SIZE, WEIGHTS, OnePool, max_new_for
from kvviz.timeline import Timeline

SYSTEM_PROMPT_BLOCKS = 6  # (kvviz/nodes/prompts.py: one 96-byte system prompt, four questions after it)
UNIQUE_BLOCKS = 3
assert len(SYSTEM_PROMPT.encode()) == SYSTEM_PROMPT_BLOCKS * BLOCK_SIZE


WORD_END = re.compile(r"[ \n.,;:!?)]")


@functools.lru_cache(maxsize=512)
def word_end_budget(prompt: str, max_new: int) -> int:
    """`max_new`, lowered so the answer ends at the end of a word (not "a small pie"), but only
    as far as it keeps the same number of KV blocks: the model's greedy continuation is run
    once (on its own small engine: deterministic, the tokens the lesson's engine will make),
    and the last word end within the blocks' range is the budget. Unchanged when no word ends
    there (one long word)."""
    kv_blocks = ceil_div(len(prompt.encode()) + max_new - 1, BLOCK_SIZE)
    floor = max(1, (kv_blocks - 1) * BLOCK_SIZE + 2 - len(prompt.encode()))  # fewest tokens keeping kv_blocks
    engine = Engine(EngineConfig(num_blocks=kv_blocks + 1, block_size=BLOCK_SIZE, weights=WEIGHTS))
    [result] = engine.generate([prompt], max_new + 1)  # one byte more: does the budget's last word end?
    out = bytes(result.token_ids)  # (one token per byte)
    for n in range(max_new, floor - 1, -1):
        if WORD_END.fullmatch(chr(out[n])) and not chr(out[n - 1]).isspace():
            return n
    return max_new


class RadixScenario(OnePool):
    """One paged pool; four requests share a 6-block system prompt, 3 own blocks each; they are
    run to the end."""

    NUM_BLOCKS = 48

    def __init__(self, prefix_sharing: bool = False):
        self.prefix_sharing = prefix_sharing
        cfg = EngineConfig(
            num_blocks=self.NUM_BLOCKS, block_size=BLOCK_SIZE, policy="paged",
            prefix_sharing=prefix_sharing, admission="refuse", weights=WEIGHTS,
        )
        self.timeline = Timeline(cfg)
        for q in QUESTIONS:
            self.ask(q, run=False)
        self.timeline.run_until_idle()

    @staticmethod
    def request_for(question: str) -> tuple[str, int]:
        """The full prompt (system prompt, then the question as "Q: ...\\nA:") and a max_new_tokens that fills
        exactly UNIQUE_BLOCKS blocks past the system prompt (less when the question is long)."""
        prompt = f"{SYSTEM_PROMPT}{QUESTION_OPEN}{question}{QUESTION_CLOSE}"
        target = (SYSTEM_PROMPT_BLOCKS + UNIQUE_BLOCKS) * BLOCK_SIZE - 4
        return prompt, word_end_budget(prompt, max(1, max_new_for(prompt, max(target, len(prompt.encode())))))

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

    def release_oldest(self) -> None:
        """Release the oldest finished request (a ValueError in words when there is none)."""
        requests = self.snapshot().requests
        done = [r for r in requests if r.status == "finished"]
        if not done:
            if any(r.status in ("running", "waiting") for r in requests):
                raise ValueError("no request has finished yet: step or play until one does")
            raise ValueError("every request is released already: ask a question first")
        self.timeline.release(done[0].request_id)
