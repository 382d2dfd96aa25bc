"""A timeline: an engine plus the operations that made its state, so any state can be replayed.

Stepping back is replaying every operation but the last step from a reset engine: the engine
is deterministic (same config, seed and requests give the same tokens and the same block ids).
To keep that fast on long histories, the timeline keeps a few checkpoints (`Engine.clone()`s
after `ops[:n]`, sharing only the read-only model) and replays from the latest one that is a
prefix of the operations to replay; the result is the same state as a replay from the start.
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


CHECKPOINT_EVERY = 32  # operations between checkpoints
MAX_CHECKPOINTS = 8  # per timeline: at most a few MB of KV each


class Timeline:
    def __init__(self, config: EngineConfig):
        self.config = config
        self.engine = Engine(config)
        self.ops: list[Op] = []
        # (ops so far, a clone of the engine after them); a checkpoint is never stepped itself,
        # only cloned again, so timelines cloned from this one can share them.
        self._checkpoints: list[tuple[tuple[Op, ...], Engine]] = []

    def clone(self) -> Timeline:
        """An independent copy (the engine cloned: only the model is shared)."""
        twin = Timeline.__new__(Timeline)
        twin.config, twin.engine, twin.ops = self.config, self.engine.clone(), list(self.ops)
        twin._checkpoints = list(self._checkpoints)
        return twin

    def _save_checkpoint(self) -> None:
        self._checkpoints.append((tuple(self.ops), self.engine.clone()))
        del self._checkpoints[:-MAX_CHECKPOINTS]

    def _restore_longest_prefix(self, ops: list[Op]) -> int:
        """Put the engine in the state after the longest checkpointed prefix of `ops` (reset if
        none); drop checkpoints that are not prefixes of `ops`. Returns that prefix's length."""
        self._checkpoints = [(done, st) for done, st in self._checkpoints if tuple(ops[: len(done)]) == done]
        if not self._checkpoints:
            self.engine.reset()
            return 0
        done, engine = self._checkpoints[-1]
        self.engine = engine.clone()
        return len(done)

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
        if op.kind == "step" and not result:
            return result  # nothing could run: the engine is unchanged, so nothing is recorded
        self.ops.append(op)
        last = len(self._checkpoints[-1][0]) if self._checkpoints else 0
        if len(self.ops) - last >= CHECKPOINT_EVERY:
            self._save_checkpoint()
        return result

    def add(self, prompt: str, max_new_tokens: int, reserve_blocks: int | None = None) -> int:
        return self.apply(Op("add", prompt, max_new_tokens, reserve_blocks))

    def step(self) -> bool:
        """One engine step; False (and nothing recorded) when nothing could run."""
        if not self.engine.has_unfinished():
            return False
        return self.apply(Op("step"))

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

    def steps_before(self, skip: int = 0) -> list[int]:
        """For each add or release after the first `skip` of them: the engine steps taken since
        the add or release before it. With these a replay can interleave the same operations
        with the same steps (a request added while another was still generating)."""
        gaps, n = [], 0
        for op in self.ops:
            if op.kind == "step":
                n += 1
            else:
                gaps.append(n)
                n = 0
        return gaps[skip:]

    @property
    def trailing_steps(self) -> int:
        """Engine steps since the last add or release."""
        n = 0
        for op in reversed(self.ops):
            if op.kind != "step":
                break
            n += 1
        return n

    def step_to(self, gap: int) -> None:
        """Step until `gap` steps have been taken since the last add or release (ValueError if
        that is behind the engine already, or more than it can run)."""
        done = self.trailing_steps
        if gap < done:
            raise ValueError(f"the engine has already taken {done} steps since the last request, more than {gap}")
        for _ in range(gap - done):
            if not self.step():
                raise ValueError(f"the engine ran out of work before {gap} steps")

    def replay(self, ops: list[Op]) -> None:
        """Rebuild the state that `ops` make, as if applied to a fresh engine."""
        ops = list(ops)
        start = self._restore_longest_prefix(ops)
        self.ops = ops[:start]
        for op in ops[start:]:
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
