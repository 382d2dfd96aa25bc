"""A timeline: an engine plus the operations that made its state, so any state can be replayed.

Stepping back is replaying every operation but the last step from a reset engine: the engine
is deterministic (same config, seed and requests give the same tokens and the same block ids).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine import Engine, EngineConfig, Snapshot


@dataclass(frozen=True)
class Op:
    kind: str  # 'add' | 'step' | 'release'
    prompt: str = ""
    max_new_tokens: int = 0
    reserve_blocks: int | None = None
    request_id: int = 0


class Timeline:
    def __init__(self, config: EngineConfig):
        self.config = config
        self.engine = Engine(config)
        self.ops: list[Op] = []

    def _apply(self, op: Op):
        e = self.engine
        if op.kind == "add":
            return e.add_request(op.prompt, op.max_new_tokens, op.reserve_blocks)
        if op.kind == "step":
            return e.step()
        if op.kind == "release":
            return e.release(op.request_id)
        raise ValueError(f"unknown op {op.kind!r}")

    def apply(self, op: Op):
        """Run one operation; it is recorded only if it succeeded (bad input changes nothing)."""
        result = self._apply(op)
        self.ops.append(op)
        return result

    def add(self, prompt: str, max_new_tokens: int, reserve_blocks: int | None = None) -> int:
        return self.apply(Op("add", prompt, max_new_tokens, reserve_blocks))

    def step(self) -> bool:
        """One engine step; False (and nothing recorded) when there is nothing to run."""
        if not self.engine.has_unfinished():
            return False
        self.apply(Op("step"))
        return True

    def run_until_idle(self, max_steps: int = 10_000) -> int:
        n = 0
        while n < max_steps and self.step():
            n += 1
        return n

    def release(self, request_id: int) -> None:
        self.apply(Op("release", request_id=request_id))

    @property
    def num_steps(self) -> int:
        return sum(op.kind == "step" for op in self.ops)

    def replay(self, ops: list[Op]) -> None:
        self.engine.reset()
        self.ops = []
        for op in ops:
            self.apply(op)

    def step_back(self) -> bool:
        """Return to the state before the last step (dropping what came after it)."""
        last = max((i for i, op in enumerate(self.ops) if op.kind == "step"), default=None)
        if last is None:
            return False
        self.replay(self.ops[:last])
        return True

    def rewind(self) -> bool:
        """Return to before the first step: the requests added so far queued, no KV computed."""
        first = next((i for i, op in enumerate(self.ops) if op.kind == "step"), None)
        if first is None:
            return False
        self.replay(self.ops[:first])
        return True

    @property
    def has_work(self) -> bool:
        """True when a step would do something (a request is waiting or running)."""
        return self.engine.has_unfinished()

    def snapshot(self) -> Snapshot:
        return self.engine.snapshot()
