"""Engine.clone: an independent copy that shares only the read-only model."""

from __future__ import annotations

import copy

import pytest
import torch

CONFIGS = {
    "paged, prefix sharing": dict(block_size=4, num_blocks=8, prefix_sharing=True),
    "paged": dict(block_size=4, num_blocks=8),
    "contiguous": dict(policy="contiguous", block_size=4, num_blocks=12, reserve_blocks=4),
}
PROMPTS = ["Page one", "Page two", "Page six"]


def busy_engine(make_engine, **config):
    """An engine mid-run: requests running and waiting, some KV written, a step or two taken."""
    engine = make_engine(**config)
    for prompt in PROMPTS:
        engine.add_request(prompt, max_new_tokens=20)
    engine.step()
    engine.step()
    return engine


def kv_copy(engine) -> list[torch.Tensor]:
    return [t.clone() for t in engine.kv.k + engine.kv.v]


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_a_clone_steps_exactly_as_the_original(make_engine, config):
    engine = busy_engine(make_engine, **config)
    twin = engine.clone()
    assert twin.snapshot() == engine.snapshot()
    for step in range(60):
        if step == 20:  # releases, and a new request, go the same way too
            for rid, req in engine.requests.items():
                if req.status.value == "finished":
                    engine.release(rid)
                    twin.release(rid)
            assert engine.add_request("Page one again", 6) == twin.add_request("Page one again", 6)
        assert engine.step() == twin.step()
        assert twin.snapshot() == engine.snapshot()
    assert [r.output_ids for r in twin.requests.values()] == [r.output_ids for r in engine.requests.values()]
    assert all(torch.equal(a, b) for a, b in zip(kv_copy(twin), kv_copy(engine), strict=True))


def test_the_preempting_and_evicting_run_is_cloned_too(make_engine, serve_all):
    engine = make_engine(block_size=4, num_blocks=8, prefix_sharing=True)
    twin = engine.clone()
    serve_all(engine, PROMPTS, max_new_tokens=20)
    serve_all(twin, PROMPTS, max_new_tokens=20)
    snap = engine.snapshot()
    assert snap.metrics.preempted > 0 and snap.metrics.evicted_blocks > 0
    assert twin.snapshot() == snap


def test_the_clone_shares_the_model_and_copies_all_state(make_engine):
    engine = busy_engine(make_engine, **CONFIGS["paged, prefix sharing"])
    twin = engine.clone()
    assert twin.model is engine.model
    for name in ("kv", "log", "pool", "scheduler", "requests", "last_block_reads"):
        assert getattr(twin, name) is not getattr(engine, name), name
    assert all(a is not b for a, b in zip(twin.kv.k + twin.kv.v, engine.kv.k + engine.kv.v, strict=True))
    # Within the clone, the parts refer to one another, never back to the original.
    sched = twin.scheduler
    assert sched.pool is twin.pool and sched.log is twin.log and twin.pool.log is twin.log
    assert sched.radix.pool is twin.pool and sched.allocator.pool is twin.pool
    assert all(twin.requests[r.request_id] is r for r in [*sched.running, *sched.waiting])
    nodes = {id(n) for n in sched.radix.nodes()}
    assert all(id(r.radix_node) in nodes for r in sched.running if r.radix_node is not None)
    # (lists of ints copied as lists, engine/util.py's deepcopy_int_lists; the log's frozen events shared)
    assert all(a == b and a is not b for a, b in zip(twin.pool.tokens, engine.pool.tokens, strict=True))
    for rid, r in engine.requests.items():
        for name in ("prompt_ids", "output_ids", "block_table"):
            assert getattr(twin.requests[rid], name) == getattr(r, name)
            assert getattr(twin.requests[rid], name) is not getattr(r, name)
    assert twin.log.events == engine.log.events and twin.log.events is not engine.log.events
    twin.check_integrity()


def test_changing_the_clone_leaves_the_original_alone(make_engine, drain):
    engine = busy_engine(make_engine, **CONFIGS["paged, prefix sharing"])
    before, kv_before = engine.snapshot(), kv_copy(engine)
    twin = engine.clone()
    twin.add_request("a request only the clone has", max_new_tokens=3)
    drain(twin)
    twin.release(1)
    assert engine.snapshot() == before
    assert all(torch.equal(a, b) for a, b in zip(kv_copy(engine), kv_before, strict=True))
    twin.reset()
    assert engine.snapshot() == before
    engine.check_integrity()


def test_changing_the_original_leaves_the_clone_alone(make_engine, drain):
    engine = busy_engine(make_engine, **CONFIGS["contiguous"])
    twin = engine.clone()
    before, kv_before = twin.snapshot(), kv_copy(twin)
    drain(engine)
    engine.release(1)
    assert twin.snapshot() == before
    assert all(torch.equal(a, b) for a, b in zip(kv_copy(twin), kv_before, strict=True))


def test_deep_copying_anything_that_holds_an_engine_shares_its_model(make_engine):
    engine = busy_engine(make_engine, **CONFIGS["paged"])
    holder = copy.deepcopy({"engines": [engine, engine]})
    first, second = holder["engines"]
    assert first is second is not engine
    assert first.model is engine.model
    assert first.clone().model is engine.model
