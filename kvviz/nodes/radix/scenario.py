"""Node 03's set-up: one paged 48-block pool; four questions after one shared system prompt."""

from __future__ import annotations

from engine import EngineConfig
from engine.util import ceil_div
from kvviz.nodes.prompts import QUESTION_CLOSE, QUESTION_OPEN, QUESTIONS, SYSTEM_PROMPT
from kvviz.nodes.scenario_base import BLOCK_SIZE, WEIGHTS, OnePool, max_new_for
from kvviz.timeline import Timeline

SYSTEM_PROMPT_BLOCKS = 6  # (kvviz/nodes/prompts.py: one 96-byte system prompt, four questions after it)
UNIQUE_BLOCKS = 3
assert len(SYSTEM_PROMPT.encode()) == SYSTEM_PROMPT_BLOCKS * BLOCK_SIZE


WORD_END = frozenset(b" \n.,;:!?)")  # byte tokens that end a word: a reply stops before the first
WORD_ROOM = 10  # the last tokens of a budget in which a reply may stop at a word end (a long word's length)


def word_end_floor(prompt: str, max_new: int) -> int:
    """Where a reply of at most `max_new` tokens may begin to stop at a word end (`WORD_END`, as the
    engine's stop tokens: one run): WORD_ROOM tokens before its budget, but never so early that it
    would fill fewer KV blocks than the budget does. So it ends at the first word end in its last
    few tokens (not "a small pie"); at `max_new` when no word ends there."""
    kv_blocks = ceil_div(len(prompt.encode()) + max_new - 1, BLOCK_SIZE)
    fewest = (kv_blocks - 1) * BLOCK_SIZE + 1 - len(prompt.encode())  # (every kept token has KV)
    return max(1, fewest, max_new - WORD_ROOM)


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
    def request_for(question: str) -> tuple[str, int, int]:
        """The full prompt (system prompt, then the question as "Q: ...\\nA:"), a max_new_tokens that
        fills exactly UNIQUE_BLOCKS blocks past the system prompt (less when the question is long),
        and the fewest tokens before a word end stops the reply in those blocks (`word_end_floor`)."""
        prompt = f"{SYSTEM_PROMPT}{QUESTION_OPEN}{question}{QUESTION_CLOSE}"
        target = (SYSTEM_PROMPT_BLOCKS + UNIQUE_BLOCKS) * BLOCK_SIZE - 4
        max_new = max(1, max_new_for(prompt, max(target, len(prompt.encode()))))
        return prompt, max_new, word_end_floor(prompt, max_new)

    @staticmethod
    def question_of(prompt: str) -> str:
        """The question a prompt made by `request_for` asks (its inverse)."""
        return prompt.removeprefix(SYSTEM_PROMPT + QUESTION_OPEN).removesuffix(QUESTION_CLOSE)

    def ask(self, question: str, run: bool = True) -> int:
        prompt, max_new, stop_after = self.request_for(question)
        rid = self.timeline.add(prompt, max_new, stop_token_ids=WORD_END, stop_after=stop_after)
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
