"""Random add / step / release / reset sequences on small pools keep every invariant.

A hypothesis state machine drives one engine per example: pools of 6-16 blocks of 2-4 tokens,
prompts over a two-letter alphabet (so prefixes collide and get shared), growth that forces
eviction and preemption. After every operation:

- `engine.check_integrity()` passes;
- independently, from the snapshot: each block's ref count equals the requests whose block table
  lists it plus one if the radix tree holds it; free blocks hold nothing; the metrics add up;
- each request's blocks store exactly the tokens it has computed, in order;

and at the end, after releasing everything, no block has leaked, no node is locked, and every
generated token is the no-cache model's greedy choice given the tokens before it.
"""

from __future__ import annotations

from collections import Counter

import torch
from hypothesis import HealthCheck, event, settings, target
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from engine import Engine, EngineConfig, ModelConfig
from engine.request import Status

TINY_MODEL = ModelConfig(num_layers=1, d_model=16, num_heads=2, num_kv_heads=1, d_ff=32, max_seq_len=64)
PROMPTS = st.text(alphabet="ab", min_size=1, max_size=12)
# A generated token may differ from forward_full's argmax only where two logits tie to rounding.
TIE_TOLERANCE = 1e-4
HOLDS_NOTHING = (Status.RELEASED, Status.REFUSED)


class EngineMachine(RuleBasedStateMachine):
    policy = "paged"
    prefix_sharing = False

    @initialize(
        admission=st.sampled_from(["wait", "refuse"]),
        num_blocks=st.integers(6, 16),
        block_size=st.integers(2, 4),
        reserve_blocks=st.integers(2, 4),
    )
    def make_engine(self, admission, num_blocks, block_size, reserve_blocks):
        self.engine = Engine(
            EngineConfig(
                num_blocks=num_blocks,
                block_size=block_size,
                policy=self.policy,
                prefix_sharing=self.prefix_sharing,
                admission=admission,
                reserve_blocks=reserve_blocks,
                backend="torch",
                device="cpu",
                model=TINY_MODEL,
                weights="random",
            )
        )

    # -- operations -------------------------------------------------------------------------
    @rule(
        requests=st.lists(
            st.tuples(PROMPTS, st.integers(1, 16), st.none() | st.integers(1, 5)), min_size=1, max_size=3
        )
    )
    def add(self, requests):
        for prompt, max_new, reserve in requests:
            before = self._state()
            try:
                self.engine.add_request(prompt, max_new, reserve)
            except ValueError:
                event("add refused as bad input")
                assert self._state() == before

    @rule(num_steps=st.integers(1, 8))
    def step(self, num_steps):
        for _ in range(num_steps):
            self.engine.step()

    @rule()
    def step_until_idle_or_stuck(self):
        for _ in range(60):
            if not self.engine.has_unfinished():
                break
            self.engine.step()

    @rule(data=st.data())
    def release(self, data):
        """Release a live request, or try an id that holds nothing (refused, changing nothing)."""
        live = self._live()
        if live and data.draw(st.booleans(), label="release a live request"):
            rid = data.draw(st.sampled_from(live), label="request id")
            self.engine.release(rid)
            req = self.engine.requests[rid]
            assert (req.status, req.block_table, req.radix_node) == (Status.RELEASED, [], None)
            return
        rid = data.draw(st.integers(0, len(self.engine.requests) + 1), label="any id")
        if rid in live:
            return
        before = self._state()
        try:
            self.engine.release(rid)
        except (KeyError, ValueError):
            event("release refused")
        else:
            raise AssertionError(f"releasing {rid}, which holds nothing, was not refused")
        assert self._state() == before

    @rule(roll=st.integers(0, 7))
    def reset(self, roll):
        if roll:  # reset one time in eight: state must build up for the pool to run dry
            return
        self._check_tokens_are_greedy()
        self.engine.reset()
        m = self.engine.snapshot().metrics
        assert (m.blocks_free, m.steps, m.rejected, m.preempted) == (m.blocks_total, 0, 0, 0)

    # -- invariants -------------------------------------------------------------------------
    @invariant()
    def engine_checks_itself(self):
        self.engine.check_integrity()

    @invariant()
    def ref_counts_equal_holders(self):
        snap = self.engine.snapshot()
        in_tables = Counter(b for r in snap.requests for b in r.block_table)
        in_tree = Counter(b for node in snap.radix for b in node.blocks)
        assert all(n == 1 for n in in_tree.values()), "a block is in the radix tree twice"
        for b in snap.blocks:
            assert b.ref_count == in_tables[b.block_id] + in_tree[b.block_id], f"block {b.block_id}"
            assert (b.state == "free") == (b.ref_count == 0)
            assert b.state != "free" or (b.num_tokens, b.owners) == (0, ())

    @invariant()
    def metrics_add_up(self):
        snap = self.engine.snapshot()
        m = snap.metrics
        states = Counter(b.state for b in snap.blocks)
        assert m.blocks_free == states["free"]
        assert m.blocks_cached_idle == states["cached"]
        assert m.blocks_with_tokens + m.blocks_reserved_empty + m.blocks_free == m.blocks_total
        assert m.tokens_held == sum(b.num_tokens for b in snap.blocks)
        assert m.slots_locked == snap.block_size * (m.blocks_total - m.blocks_free)
        assert m.largest_free_run <= m.blocks_free
        if m.preempted:
            event("preempted")
        if m.evicted_blocks:
            event("evicted")

    @invariant()
    def blocks_store_each_request_computed_tokens(self):
        pool = self.engine.pool
        for req in self.engine.requests.values():
            stored = [t for b in req.block_table for t in pool.tokens[b]]
            assert stored == req.all_ids[: req.num_computed], f"{req.name}'s blocks hold other tokens"

    def teardown(self):
        if not hasattr(self, "engine"):
            return
        for rid in self._live():
            self.engine.release(rid)
        self.engine.check_integrity()
        m = self.engine.snapshot().metrics
        assert not self.engine.has_unfinished()
        assert m.blocks_free + m.blocks_cached_idle == m.blocks_total
        if self.engine.scheduler.radix is None:
            assert m.blocks_free == m.blocks_total
        else:
            assert all(node.lock_ref == 0 for node in self.engine.scheduler.radix.nodes())
            self.engine.scheduler.radix.evict(m.blocks_total)
            assert self.engine.pool.num_free == m.blocks_total
        self._check_tokens_are_greedy()
        target(float(m.preempted + m.evicted_blocks), label="preemptions + evicted blocks")

    # -- helpers ----------------------------------------------------------------------------
    def _live(self) -> list[int]:
        return [rid for rid, r in self.engine.requests.items() if r.status not in HOLDS_NOTHING]

    def _state(self):
        snap = self.engine.snapshot()
        return snap.blocks, snap.requests, snap.radix, snap.events, snap.metrics.rejected, snap.metrics.steps

    def _check_tokens_are_greedy(self):
        model = self.engine.model
        for req in self.engine.requests.values():
            if not req.output_ids:
                continue
            logits = model.forward_full(req.all_ids[:-1])[len(req.prompt_ids) - 1 :]  # (num_out, vocab)
            chosen = logits.gather(1, torch.tensor(req.output_ids)[:, None])[:, 0]
            assert bool((chosen >= logits.max(dim=1).values - TIE_TOLERANCE).all()), f"{req.name}"


SETTINGS = settings(
    max_examples=40, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


class PagedMachine(EngineMachine):
    policy, prefix_sharing = "paged", False


class SharedPagedMachine(EngineMachine):
    policy, prefix_sharing = "paged", True


class ContiguousMachine(EngineMachine):
    policy, prefix_sharing = "contiguous", False


TestPagedEngineKeepsInvariants = PagedMachine.TestCase
TestPagedEngineKeepsInvariants.settings = SETTINGS
TestSharedPagedEngineKeepsInvariants = SharedPagedMachine.TestCase
TestSharedPagedEngineKeepsInvariants.settings = SETTINGS
TestContiguousEngineKeepsInvariants = ContiguousMachine.TestCase
TestContiguousEngineKeepsInvariants.settings = SETTINGS
