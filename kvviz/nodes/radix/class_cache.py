"""The class's own cache: every question the students type in node 03, kept in one real engine
with prefix sharing, as a serving engine would hold a class's requests (issue: the teacher's
projector shows "the class's radix tree").

Each question answered live in node 03 is also asked here (kvviz/serve/routes.py, on the server's
answering thread once no student's answer waits: the questions of a class that pressed Enter
together are run together, `ask_all`, as a serving engine batches them): the system prompt's blocks
are stored once, each question adds its own branch.
Its answer stays in the cache (a finished, unreleased request: counted in BLOCKS STORED and vs NO
SHARING as node 03 counts its four); when the pool cannot take one more question, the oldest
answers are released first (their blocks idle cache, evicted least recently used). Plain Python
on the engine; the teacher page draws `snapshot()` with node 03's own tree figure.

One per server process (`class_cache()`): with several backends (`make class`), each holds the questions
it answered (nginx sends each to the least busy backend), and the teacher page says so.
"""

from __future__ import annotations

import threading

from engine import Engine, EngineConfig, Snapshot
from kvviz.nodes.radix.scenario import SYSTEM_PROMPT_BLOCKS, UNIQUE_BLOCKS, WORD_END, RadixScenario
from kvviz.nodes.scenario_base import BLOCK_SIZE, WEIGHTS

SEATS = 120  # questions held at once before the oldest answers are released
MAX_QUESTION = 200  # characters (node 03's box takes no more)
BATCH = 8  # questions run together at most (fewer when the pool holds fewer)


class ClassCache:
    """The class's questions in one engine with prefix sharing (thread-safe: questions are asked on
    the server's answering thread, the teacher page reads snapshots on the event loop)."""

    def __init__(self, seats: int = SEATS):
        self.blocks = SYSTEM_PROMPT_BLOCKS + (UNIQUE_BLOCKS + 1) * seats
        self.engine = Engine(EngineConfig(num_blocks=self.blocks, block_size=BLOCK_SIZE, policy="paged",
                                          prefix_sharing=True, admission="refuse", weights=WEIGHTS))
        self.asked = 0  # questions asked since the server started (a new one changes the picture)
        self._questions: set[str] = set()
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None

    def ask(self, question: str) -> bool:
        """Add a student's question (run to the end of its answer); False when it is here already
        or empty. Releases the oldest answers first when the pool could not take it."""
        return self.ask_all([question]) == 1

    def ask_all(self, questions: list[str]) -> int:
        """Add several students' questions at once and run them together, as a serving engine
        batches the requests that arrive together (one decode step for all of them); returns how
        many were new. Releases the oldest answers first when the pool could not take them all."""
        new: list[str] = []
        with self._lock:
            for q in questions:
                q = " ".join(q.split())[:MAX_QUESTION]
                if q and q not in self._questions and q not in new:
                    new.append(q)
        if not new:
            return 0
        seats = (self.blocks - SYSTEM_PROMPT_BLOCKS) // (UNIQUE_BLOCKS + 1)
        batch = max(1, min(BATCH, seats))
        for at in range(0, len(new), batch):
            self._run([RadixScenario.request_for(q) for q in new[at:at + batch]])
            with self._lock:
                self._questions.update(new[at:at + batch])
                self.asked += len(new[at:at + batch])
                self._snapshot = self.engine.snapshot()
        return len(new)

    def _run(self, requests: list[tuple[str, int, int]]) -> None:
        """Add these (prompt, max_new, stop_after) requests (`RadixScenario.request_for`), released
        answers making room, and run them together to the end of their answers."""
        need = sum(-(-(len(prompt.encode()) + max_new) // BLOCK_SIZE) for prompt, max_new, _ in requests)
        engine = self.engine
        while engine.snapshot().metrics.blocks_free < need and self._release_oldest():
            pass
        for prompt, max_new, stop_after in requests:
            engine.add_request(prompt, max_new, stop_token_ids=WORD_END, stop_after=stop_after)
        while engine.step():
            pass

    def _release_oldest(self) -> bool:
        done = [r for r in self.engine.snapshot().requests if r.status == "finished"]
        if not done:
            return False
        self.engine.release(done[0].request_id)
        with self._lock:
            self._questions.discard(RadixScenario.question_of(done[0].prompt))
        return True

    def snapshot(self) -> Snapshot | None:
        """The cache as of the last question (None before the first)."""
        with self._lock:
            return self._snapshot


_CLASS: ClassCache | None = None
_MADE = threading.Lock()


def class_cache() -> ClassCache:
    """This process's class cache, made at its first use (its engine loads the model)."""
    global _CLASS
    with _MADE:
        if _CLASS is None:
            _CLASS = ClassCache()
        return _CLASS


def question_in(query_pairs: list[tuple[str, str]]) -> str | None:
    """The newest question a node-03 link asks (its last `op=ask:...`), or None."""
    asks = [v[4:] for k, v in query_pairs if k == "op" and v.startswith("ask:")]
    return asks[-1] if asks else None
