"""Snapshots: immutable, with block states, texts, metrics and events that match the engine."""

from __future__ import annotations

import dataclasses

import pytest


def test_snapshot_and_its_parts_are_frozen(make_engine, drain):
    engine = make_engine(block_size=4, num_blocks=8)
    engine.add_request("hello", max_new_tokens=2)
    drain(engine)
    snap = engine.snapshot()
    for obj, field in [
        (snap, "step"),
        (snap.metrics, "blocks_free"),
        (snap.blocks[0], "state"),
        (snap.requests[0], "status"),
        (snap.events[0], "reason"),
    ]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field, None)
    assert isinstance(snap.blocks, tuple) and isinstance(snap.requests[0].block_table, tuple)


def test_snapshot_does_not_follow_the_engine_afterwards(make_engine):
    engine = make_engine(block_size=4, num_blocks=8)
    rid = engine.add_request("hello", max_new_tokens=6)
    engine.step()
    snap = engine.snapshot()
    block = snap.request(rid).block_table[-1]
    events = len(snap.events)
    for _ in range(4):  # the 4th decode writes position 8: a new block, a new event
        engine.step()
    assert snap.request(rid).num_tokens == 6
    assert snap.blocks[block].num_tokens == 1
    assert snap.blocks[block].text == "o"
    assert snap.metrics.decode_tokens == 0
    assert len(snap.events) == events < len(engine.snapshot().events)


def test_block_states_of_a_partly_filled_slab(make_engine, drain):
    engine = make_engine(policy="contiguous", block_size=4, num_blocks=6, reserve_blocks=3)
    rid = engine.add_request("hello", max_new_tokens=1)  # 5 tokens of KV in a 3-block slab
    drain(engine)
    snap = engine.snapshot()
    assert [b.state for b in snap.blocks] == ["tokens", "tokens", "reserved", "free", "free", "free"]
    assert [b.num_tokens for b in snap.blocks] == [4, 1, 0, 0, 0, 0]
    assert [b.owners for b in snap.blocks[:3]] == [(rid,)] * 3
    assert [b.logical_page for b in snap.blocks] == [0, 1, 2, -1, -1, -1]


def test_metrics_of_a_partly_filled_slab(make_engine, drain):
    engine = make_engine(policy="contiguous", block_size=4, num_blocks=6, reserve_blocks=3)
    engine.add_request("hello", max_new_tokens=1)
    drain(engine)
    m = engine.snapshot().metrics
    assert (m.blocks_total, m.blocks_with_tokens, m.blocks_reserved_empty, m.blocks_free) == (6, 2, 1, 3)
    assert (m.tokens_held, m.slots_locked, m.largest_free_run) == (5, 12, 3)
    assert m.utilisation == pytest.approx(5 / 12)
    assert m.in_use_fraction == pytest.approx(2 / 6)


def test_released_pages_kept_by_the_prefix_cache_are_cached_idle(make_engine, drain):
    engine = make_engine(block_size=4, num_blocks=6, prefix_sharing=True)
    rid = engine.add_request("abcdefghij", max_new_tokens=1)  # 2 full pages and 2 tokens
    drain(engine)
    engine.release(rid)
    snap = engine.snapshot()
    assert [b.state for b in snap.blocks] == ["cached", "cached", "free", "free", "free", "free"]
    assert [(b.owners, b.ref_count) for b in snap.blocks[:2]] == [((), 1), ((), 1)]
    assert (snap.metrics.blocks_cached_idle, snap.metrics.blocks_free) == (2, 4)
    assert [node.text for node in snap.radix] == ["abcdefgh"]


def test_cached_block_used_by_a_request_shows_its_tokens(make_engine, drain):
    engine = make_engine(block_size=4, num_blocks=8, prefix_sharing=True)
    first = engine.add_request("abcdefghij", max_new_tokens=1)
    drain(engine)
    engine.release(first)
    second = engine.add_request("abcdefghXY", max_new_tokens=1)
    drain(engine)
    snap = engine.snapshot()
    assert snap.request(second).block_table[:2] == (0, 1)
    assert [(b.state, b.owners, b.ref_count) for b in snap.blocks[:2]] == [("tokens", (second,), 2)] * 2
    assert snap.metrics.blocks_cached_idle == 0


def test_block_text_spells_the_tokens_it_stores(make_engine, drain):
    engine = make_engine(block_size=4, num_blocks=16)
    rid = engine.add_request("The KV cache!", max_new_tokens=5)
    drain(engine)
    snap = engine.snapshot()
    req = engine.requests[rid]
    texts = [snap.blocks[b].text for b in snap.request(rid).block_table]
    assert texts[:3] == ["The ", "KV c", "ache"]
    for b in snap.blocks:
        assert b.text == engine.tokenizer.decode(engine.pool.tokens[b.block_id])
    spelled = [t for b in req.block_table for t in engine.pool.tokens[b]]
    assert spelled == req.all_ids[: req.num_computed]


def test_request_view_spells_prompt_and_generation(make_engine, drain):
    engine = make_engine(block_size=4, num_blocks=16)
    rid = engine.add_request("naïve", max_new_tokens=3)  # 6 bytes: ï is two
    drain(engine)
    view = engine.snapshot().request(rid)
    req = engine.requests[rid]
    assert (view.prompt, view.num_prompt_tokens, view.num_tokens) == ("naïve", 6, 9)
    assert view.generated == engine.tokenizer.decode(req.output_ids)
    assert view.text == engine.tokenizer.decode(req.all_ids)
    assert engine.snapshot().request("R1") == view


def test_snapshot_request_lookup_names_what_is_missing(make_engine):
    engine = make_engine(block_size=4, num_blocks=8)
    with pytest.raises(KeyError, match="no request 'R9' in this snapshot"):
        engine.snapshot().request("R9")


def test_decode_counts_the_blocks_attention_reads(make_engine):
    engine = make_engine(block_size=4, num_blocks=8)
    rid = engine.add_request("eight by", max_new_tokens=3)
    engine.step()  # prefill: blocks 0 and 1
    engine.step()  # decode: takes block 2 for position 8 and reads all three
    reads = engine.snapshot().block_reads
    kv_heads = engine.config.model.num_kv_heads
    assert engine.requests[rid].block_table == [0, 1, 2]
    assert reads == (kv_heads, kv_heads, kv_heads, 0, 0, 0, 0, 0)


def kinds(engine) -> list[str]:
    return [e.kind for e in engine.snapshot().events]


def test_a_request_life_is_logged_in_order(make_engine, drain):
    engine = make_engine(block_size=4, num_blocks=8)
    rid = engine.add_request("hello", max_new_tokens=5)  # 2 blocks at admission, 1 more for position 8
    drain(engine)
    engine.release(rid)
    assert kinds(engine) == [
        "request_added",
        "block_allocated",
        "block_allocated",
        "request_admitted",
        "block_allocated",
        "request_finished",
        "block_freed",
        "request_released",
    ]
    freed = next(e for e in engine.snapshot().events if e.kind == "block_freed")
    assert freed.blocks == (0, 1, 2)


def test_reusing_cached_pages_logs_block_shared(make_engine, drain):
    engine = make_engine(block_size=4, num_blocks=8, prefix_sharing=True)
    engine.add_request("abcdefghij", max_new_tokens=1)
    engine.add_request("abcdefghXY", max_new_tokens=1)
    drain(engine)
    (shared,) = (e for e in engine.snapshot().events if e.kind == "block_shared")
    assert (shared.request_id, shared.blocks) == (2, (0, 1))
    assert shared.reason == "R2 reuses 2 cached blocks"


def test_refusal_logs_request_refused(make_engine):
    engine = make_engine(
        policy="contiguous", block_size=4, num_blocks=8, reserve_blocks=6, admission="refuse"
    )
    engine.add_request("one", max_new_tokens=1)
    engine.add_request("two", max_new_tokens=1)
    engine.step()
    (refused,) = (e for e in engine.snapshot().events if e.kind == "request_refused")
    assert refused.request_id == 2
    assert refused.reason == "R2 needs 6 consecutive blocks; only 2 are free"


def test_preemption_and_eviction_are_logged(make_engine, serve_all):
    engine = make_engine(block_size=4, num_blocks=8, prefix_sharing=True)
    serve_all(engine, ["Page one", "Page two", "Page six"], max_new_tokens=20)
    logged = set(kinds(engine))
    assert {"request_preempted", "block_evicted"} <= logged
    m = engine.snapshot().metrics
    evicted = [b for e in engine.snapshot().events if e.kind == "block_evicted" for b in e.blocks]
    assert len(evicted) == m.evicted_blocks > 0


def test_same_config_seed_and_requests_give_identical_snapshots(make_engine, serve_all):
    def run():
        engine = make_engine(block_size=4, num_blocks=8, prefix_sharing=True)
        serve_all(engine, ["Page one", "Page two", "Page six"], max_new_tokens=20)
        engine.add_request("Page one again", max_new_tokens=5)
        engine.step()
        return engine.snapshot()

    first, second = run(), run()
    assert first.metrics.preempted > 0 and first.metrics.evicted_blocks > 0
    assert first == second


def test_reset_then_the_same_requests_give_the_same_snapshot(make_engine, drain):
    engine = make_engine(block_size=4, num_blocks=8, prefix_sharing=True)

    def run():
        for prompt in ("abcdefgh one", "abcdefgh two"):
            engine.add_request(prompt, max_new_tokens=6)
        drain(engine)
        return engine.snapshot()

    first = run()
    engine.reset()
    assert run() == first


def test_snapshots_compare_without_their_wall_clock_figure(make_engine, drain):
    """Two runs of the same requests measure different prefill times, yet their snapshots are
    equal: `Metrics.prefill_seconds` is left out of equality (so tests compare with plain ==)."""
    a, b = make_engine(), make_engine()
    for e in (a, b):
        e.add_request("The same prompt", 5)
        drain(e)
    snap_a, snap_b = a.snapshot(), b.snapshot()
    slower = dataclasses.replace(snap_b.metrics, prefill_seconds=snap_b.metrics.prefill_seconds + 1.0)
    assert snap_a == snap_b and snap_a.metrics == slower
    assert dataclasses.replace(snap_a.metrics, steps=snap_a.metrics.steps + 1) != snap_a.metrics


def test_a_finished_request_says_why_it_stopped_and_cut_offs_are_counted(make_engine, drain):
    e = make_engine(num_blocks=8, block_size=4, policy="contiguous", reserve_blocks=2)
    short = e.add_request("abcdef", 20)  # 6 prompt tokens in a slab of 8 slots: stopped by the slab
    fits = e.add_request("ab", 3)  # 2 + 3 tokens, 4 with KV: fits its slab, stopped by its budget
    drain(e)
    snap = e.snapshot()
    assert (snap.request(short).stop, snap.request(fits).stop) == ("slab_full", "budget")
    assert "slab of 2 blocks is full" in snap.request(short).reason
    assert snap.metrics.cut_off == 1 and snap.metrics.num_finished == 2
    e.release(short)
    assert e.snapshot().metrics.cut_off == 0  # (released: it holds nothing any more)


def test_a_stop_token_ends_the_reply_before_it_once_stop_after_tokens_are_kept(make_engine, drain):
    """The reply is the budget run's greedy tokens up to the first stop token at index >= stop_after:
    that token is not kept, every kept token has KV (the stop token was sampled from the last), and
    a stop token before `stop_after` does not stop it."""
    full = make_engine(num_blocks=16, block_size=4)
    rid = full.add_request("abcabc", 24)
    drain(full)
    tokens = full.requests[rid].output_ids
    k = 5  # (a stop token chosen from the greedy run itself, so the stop surely comes)
    stop = tokens[k]
    first = next(i for i in range(1, len(tokens)) if tokens[i] == stop)  # (the first that may stop it)
    e = make_engine(num_blocks=16, block_size=4)
    late = e.add_request("abcabc", 24, stop_token_ids={stop}, stop_after=k)
    early = e.add_request("abcabc", 24, stop_token_ids={stop}, stop_after=1)
    drain(e)
    snap = e.snapshot()
    assert e.requests[late].output_ids == tokens[:k]
    assert e.requests[early].output_ids == tokens[:first]
    for r in (late, early):
        view = snap.request(r)
        assert view.stop == "stop_token" and view.reason.endswith("(a stop token)")
        assert view.num_computed == 6 + len(e.requests[r].output_ids)  # (the last kept token has KV)
    e.check_integrity()


def test_a_request_never_given_its_stop_token_runs_to_its_budget(make_engine, drain):
    e = make_engine(num_blocks=16, block_size=4)
    rid = e.add_request("abcabc", 10, stop_token_ids=set(), stop_after=1)
    drain(e)
    assert len(e.requests[rid].output_ids) == 10 and e.snapshot().request(rid).stop == "budget"


@pytest.mark.parametrize("kwargs, words", [({"stop_token_ids": [256]}, "token ids from 0 to 255"),
                                           ({"stop_token_ids": [-1]}, "token ids"),
                                           ({"stop_after": 0}, "stop_after must be"),
                                           ({"stop_after": True}, "stop_after must be")])
def test_bad_stop_arguments_are_refused_in_words_and_change_nothing(make_engine, kwargs, words):
    e = make_engine(num_blocks=16, block_size=4)
    with pytest.raises(ValueError, match=words):
        e.add_request("abc", 4, **kwargs)
    assert not e.requests and not e.has_unfinished()


def test_a_stop_token_is_named_as_a_reader_sees_it():
    from engine.scheduler import _shown

    assert [_shown(t) for t in (32, 10, 46, 0, 200)] == [
        "a space", "a new line", "'.'", "token 0", "token 200"]

