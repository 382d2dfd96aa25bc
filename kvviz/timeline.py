"""A timeline: an engine plus the operations that made its state, so any state can be replayed.

The engine is deterministic (same config, seed and requests give the same tokens and the same
block ids), so a state is named by its config and its operations. Three consequences:

* Stepping back is replaying every operation but the last step. To keep that fast on long
  histories the timeline keeps a few checkpoints (`Engine.clone()`s after `ops[:n]`, sharing
  only the read-only model) and replays from the latest one that is a prefix.
* What an operation returns, whether work remains after it, and the snapshot it leaves are the
  same for every session that reaches that state: they are kept once per process (`MEMO`, a
  bounded LRU, kvviz/timeline_memo.py) and shared. Forty students playing the same request compute it once;
  their timelines record the operations and read the shared results.
* So the engine itself runs only when needed: it is brought up to date (`engine`) only when an
  operation or a snapshot is not in the memo, and then from its own state or a checkpoint.

Results are shared, never the engines: each timeline owns its engine and its checkpoints.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass

from engine import Engine, EngineConfig, Snapshot
from kvviz.timeline_memo import MEMO, Memo, Outcome

__all__ = ["MEMO", "Memo", "Op", "Outcome", "Timeline", "eager_snapshots"]


@dataclass(frozen=True)
class Op:
    kind: str  # 'add' | 'step' | 'release'
    prompt: str = ""
    max_new_tokens: int = 0
    reserve_blocks: int | None = None
    request_id: int = 0
    stop_token_ids: frozenset[int] = frozenset()
    stop_after: int = 1


CHECKPOINT_EVERY = 32  # operations between checkpoints
# Whether a computed operation also keeps its state's snapshot at once (the static recording
# walks every state back from a settled end: with each snapshot kept on the way there, no step
# back runs the engine). Off by default: a live session asks only for the snapshots it shows. A
# context variable: a server's answering thread walks while its event loop serves live sessions.
EAGER_SNAPSHOTS: contextvars.ContextVar[bool] = contextvars.ContextVar("eager_snapshots", default=False)
MAX_CHECKPOINTS = 8  # per timeline: at most a few MB of KV each


@contextlib.contextmanager
def eager_snapshots() -> Iterator[None]:
    """Within (in this thread or task): every operation computed keeps its snapshot in the memo
    (see EAGER_SNAPSHOTS)."""
    token = EAGER_SNAPSHOTS.set(True)
    try:
        yield
    finally:
        EAGER_SNAPSHOTS.reset(token)


def _chain(digest: int, op: Op) -> int:
    return hash((digest, op))


class Timeline:
    def __init__(self, config: EngineConfig):
        self.config = config
        self.ops: list[Op] = []
        self._digest = hash(config)
        self._engine: Engine | None = None  # the state after ops[:_done], or None: not made yet
        self._done = 0
        # (ops so far, a clone of the engine after them); a checkpoint is never stepped itself,
        # only cloned again, so timelines cloned from this one can share them.
        self._checkpoints: list[tuple[tuple[Op, ...], Engine]] = []

    def clone(self) -> Timeline:
        """An independent copy (the engine cloned: only the model is shared)."""
        twin = Timeline.__new__(Timeline)
        twin.config, twin.ops, twin._digest, twin._done = (self.config, list(self.ops), self._digest,
                                                           self._done)
        twin._engine = self._engine.clone() if self._engine is not None else None
        twin._checkpoints = list(self._checkpoints)
        return twin

    def fork(self) -> Timeline:
        """An independent copy, as `clone`, that does not copy the engine now: this timeline's
        engine becomes the copy's latest checkpoint, cloned only when the copy needs an engine
        (an operation or a snapshot the memo does not hold). Only for a timeline whose engine
        never runs again, only cloned (a scenario's prototype, kvviz/nodes/scenario_base.py):
        a copy that only replays what the memo holds (a session reset, then set up again at
        once) never copies the KV."""
        twin = Timeline.__new__(Timeline)
        twin.config, twin.ops, twin._digest = self.config, list(self.ops), self._digest
        twin._engine, twin._done = None, 0
        twin._checkpoints = list(self._checkpoints)
        if self._engine is not None and (not twin._checkpoints or len(twin._checkpoints[-1][0]) < self._done):
            twin._checkpoints.append((tuple(self.ops[: self._done]), self._engine))
        return twin

    # -- the engine, brought up to date only when needed ------------------------------------
    @property
    def engine(self) -> Engine:
        """The engine in the state the operations made (computed now if it is behind)."""
        if self._engine is None:
            self._restore_longest_prefix()
        for op in self.ops[self._done:]:
            self._run(op)
            self._ran(self.ops)
        return self._engine

    def _ran(self, ops: list[Op]) -> None:
        """The engine has run one more of `ops`: count it, and checkpoint every so often."""
        self._done += 1
        last = len(self._checkpoints[-1][0]) if self._checkpoints else 0
        if self._done - last >= CHECKPOINT_EVERY:
            self._checkpoints.append((tuple(ops[: self._done]), self._engine.clone()))
            del self._checkpoints[:-MAX_CHECKPOINTS]

    def _restore_longest_prefix(self) -> None:
        """Start the engine from the latest checkpoint that is a prefix of the operations (a new
        engine if none); drop checkpoints that are not prefixes."""
        self._checkpoints = [(done, e) for done, e in self._checkpoints
                             if tuple(self.ops[: len(done)]) == done]
        if self._checkpoints:
            done, engine = self._checkpoints[-1]
            self._engine, self._done = engine.clone(), len(done)
        else:
            self._engine, self._done = Engine(self.config), 0

    def _run(self, op: Op):
        e = self._engine
        if op.kind == "add":
            return e.add_request(op.prompt, op.max_new_tokens, op.reserve_blocks,
                                 stop_token_ids=op.stop_token_ids, stop_after=op.stop_after)
        if op.kind == "step":
            return e.step()
        if op.kind == "release":
            return e.release(op.request_id)
        raise ValueError(f"unknown op {op.kind!r}")

    def _key(self, digest: int, n: int) -> tuple:
        return (self.config, n, digest)

    # -- operations --------------------------------------------------------------------------
    def apply(self, op: Op):
        """Run one operation; it is recorded only if it succeeded (bad input changes nothing)."""
        digest = _chain(self._digest, op)
        key = self._key(digest, len(self.ops) + 1)
        known = MEMO.get(key)
        if known is None:
            engine = self.engine  # (up to date: the operation runs on it now)
            result = self._run(op)
            if op.kind == "step" and not result:
                return result  # nothing could run: the engine is unchanged, so nothing is recorded
            known = Outcome(result, engine.has_unfinished(),
                            engine.snapshot() if EAGER_SNAPSHOTS.get() else None)
            MEMO.put(key, known)
            self.ops.append(op)
            self._ran(self.ops)
        else:
            self.ops.append(op)
        self._digest = digest
        return known.result

    def add(self, prompt: str, max_new_tokens: int, reserve_blocks: int | None = None, *,
            stop_token_ids: frozenset[int] = frozenset(), stop_after: int = 1) -> int:
        return self.apply(Op("add", prompt, max_new_tokens, reserve_blocks, stop_token_ids=stop_token_ids,
                             stop_after=stop_after))

    def step(self) -> bool:
        """One engine step; False (and nothing recorded) when nothing could run."""
        if not self.has_work:
            return False
        return self.apply(Op("step"))

    def run_until_idle(self, max_steps: int = 10_000) -> int:
        n = 0
        while n < max_steps and self.step():
            n += 1
        return n

    def release(self, request_id: int) -> None:
        self.apply(Op("release", request_id=request_id))

    def _outcome(self) -> Outcome | None:
        return MEMO.get(self._key(self._digest, len(self.ops))) if self.ops else None

    @property
    def has_work(self) -> bool:
        """True when a step would do something (a request is waiting or running)."""
        known = self._outcome()
        return known.has_work if known is not None else self.engine.has_unfinished()

    def snapshot(self) -> Snapshot:
        known = self._outcome()
        if known is None:
            return self.engine.snapshot()
        if known.snapshot is None:
            known.snapshot = self.engine.snapshot()
        return known.snapshot

    # -- history -----------------------------------------------------------------------------
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
            raise ValueError(f"the engine has already taken {done} steps since the last request, more than "
                             f"{gap}")
        for _ in range(gap - done):
            if not self.step():
                raise ValueError(f"the engine ran out of work before {gap} steps")

    def replay(self, ops: list[Op]) -> None:
        """Rebuild the state that `ops` make, as if applied to a fresh engine."""
        ops = list(ops)
        keep = 0  # how much of the engine's own history `ops` keeps
        while keep < min(self._done, len(ops)) and ops[keep] == self.ops[keep]:
            keep += 1
        if keep < self._done:
            self._engine, self._done = None, 0  # (made again from a checkpoint when needed)
        self.ops, self._digest = [], hash(self.config)
        for op in ops:
            self._digest = _chain(self._digest, op)
            self.ops.append(op)
        if not self._known():
            _ = self.engine  # not all in the memo (evicted): compute the state now
        # (else the engine is made again, from a checkpoint, only when an operation needs it)

    def _known(self) -> bool:
        return not self.ops or self._outcome() is not None

    def keep_snapshots(self, from_step: int = 0) -> int:
        """Put in the memo the snapshot of every state of this history that stepping back lands
        on (the end, and the state before each step) with `from_step` engine steps or more, where
        it lacks one: computed in one run forward from the first such state. (A state reached
        while snapshots were not kept, such as a scenario's defaults, has none: stepping back
        through such states one by one would make each again from a checkpoint, up to
        CHECKPOINT_EVERY operations of the engine per state. A walk back, kvviz/export/record.py,
        calls this first.) Returns how many it computed."""
        if MEMO.capacity == 0:
            return 0
        keys, digest, steps = [], hash(self.config), 0
        for k, op in enumerate(self.ops, 1):
            digest = _chain(digest, op)
            steps += op.kind == "step"
            lands = k == len(self.ops) or self.ops[k].kind == "step"
            keys.append(self._key(digest, k) if lands and steps >= from_step else None)
        missing = [k for k, key in enumerate(keys, 1)
                   if key is not None and ((known := MEMO.get(key)) is None or known.snapshot is None)]
        if not missing:
            return 0
        first = missing[0]
        if self._engine is not None and self._done <= first:
            engine, done = self._engine, self._done  # (ours: run on to the end)
        else:
            found = [(d, e) for d, e in self._checkpoints
                     if len(d) <= first and tuple(self.ops[: len(d)]) == d]
            engine, done = (found[-1][1].clone(), len(found[-1][0])) if found else (Engine(self.config), 0)
        wanted = set(missing)
        self._engine = engine  # (`_run` runs `self._engine`)
        for k in range(done + 1, len(self.ops) + 1):
            result = self._run(self.ops[k - 1])
            if k in wanted:
                known = MEMO.get(keys[k - 1])
                if known is None:
                    MEMO.put(keys[k - 1], Outcome(result, engine.has_unfinished(), engine.snapshot()))
                elif known.snapshot is None:
                    known.snapshot = engine.snapshot()
        self._engine, self._done = engine, len(self.ops)
        return len(missing)

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
