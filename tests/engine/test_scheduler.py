"""The scheduler: continuous batching, admission, preemption, eviction, and the counters."""

from __future__ import annotations

from engine.request import Status


def outputs(engine) -> dict[str, int]:
    return {r.name: len(r.output_ids) for r in engine.requests.values()}


def test_request_added_while_others_decode_is_admitted_on_the_next_step(make_engine):
    engine = make_engine(block_size=4, num_blocks=32)
    engine.add_request("first request", max_new_tokens=10)
    engine.step()  # R1 prefills
    engine.step()  # R1 decodes
    r2 = engine.add_request("second request", max_new_tokens=10)
    engine.step()
    assert engine.requests[r2].status is Status.RUNNING
    assert outputs(engine) == {"R1": 2, "R2": 1}
    engine.step()  # one decode step for both: they share the batch
    assert outputs(engine) == {"R1": 3, "R2": 2}


def test_a_step_that_admits_requests_prefills_them_all(make_engine):
    engine = make_engine(block_size=4, num_blocks=32)
    for prompt in ("one", "two", "three"):
        engine.add_request(prompt, max_new_tokens=5)
    engine.step()
    assert outputs(engine) == {"R1": 1, "R2": 1, "R3": 1}
    assert engine.metrics().num_running == 3


def tight_pool_with_a_waiting_request(make_engine):
    """6 blocks of 4 tokens. R1-R3 (4-token prompts) run; R4 (13 tokens, 4 blocks) waits behind
    them. At step 6 R1-R3 all need their third page with none free."""
    engine = make_engine(block_size=4, num_blocks=6)
    for prompt in ("aaaa", "bbbb", "cccc"):
        engine.add_request(prompt, max_new_tokens=12)
    engine.step()
    engine.add_request("thirteen byte", max_new_tokens=1)
    for _ in range(4):
        engine.step()
    assert engine.metrics().preempted == 0
    assert engine.metrics().blocks_free == 0
    return engine


def test_preemption_picks_the_newest_running_request(make_engine):
    engine = tight_pool_with_a_waiting_request(make_engine)
    engine.step()
    (event,) = (e for e in engine.log.events if e.kind == "request_preempted")
    assert event.request_id == 3
    r3 = engine.requests[3]
    assert (r3.status, r3.block_table, r3.num_preemptions) == (Status.WAITING, [], 1)
    assert [r.name for r in engine.scheduler.running] == ["R1", "R2"]
    assert [len(engine.requests[i].block_table) for i in (1, 2)] == [3, 3]


def test_preempted_request_is_requeued_ahead_of_those_already_waiting(make_engine):
    engine = tight_pool_with_a_waiting_request(make_engine)
    assert [r.name for r in engine.scheduler.waiting] == ["R4"]
    engine.step()
    assert [r.name for r in engine.scheduler.waiting] == ["R3", "R4"]


def test_preempted_request_keeps_its_generated_tokens_for_recompute(make_engine):
    engine = tight_pool_with_a_waiting_request(make_engine)
    before = list(engine.requests[3].output_ids)
    engine.step()
    assert engine.requests[3].output_ids == before
    assert engine.requests[3].num_computed == 0


def test_idle_cached_prefix_is_evicted_before_any_request_is_preempted(make_engine, drain):
    engine = make_engine(block_size=4, num_blocks=6, prefix_sharing=True)
    cached = engine.add_request("abcdefgh", max_new_tokens=1)
    drain(engine)
    engine.release(cached)  # its two pages stay in the tree, idle
    assert engine.metrics().blocks_cached_idle == 2
    grower = engine.add_request("wxyz", max_new_tokens=17)  # grows to 5 pages: needs the cached two
    drain(engine)
    m = engine.metrics()
    assert (m.evicted_blocks, m.preempted) == (2, 0)
    assert engine.requests[grower].status is Status.FINISHED
    assert len(engine.requests[grower].block_table) == 5


def test_waiting_request_that_does_not_fit_waits_under_admission_wait(make_engine):
    engine = make_engine(block_size=4, num_blocks=4, admission="wait")
    engine.add_request("twelve bytes", max_new_tokens=1)  # 3 blocks, finishes at once, keeps them
    engine.step()
    late = engine.add_request("eight by", max_new_tokens=1)  # 2 blocks; 1 is free
    engine.step()
    assert engine.requests[late].status is Status.WAITING
    assert engine.metrics().rejected == 0
    engine.release(1)
    engine.step()
    assert engine.requests[late].status is Status.FINISHED


def test_request_that_does_not_fit_is_refused_under_admission_refuse(make_engine):
    engine = make_engine(block_size=4, num_blocks=4, admission="refuse")
    engine.add_request("twelve bytes", max_new_tokens=1)
    engine.step()
    late = engine.add_request("eight by", max_new_tokens=1)
    engine.step()
    req = engine.requests[late]
    assert req.status is Status.REFUSED
    assert req.reason == "R2 needs 2 free blocks for its prompt; 1 is free"
    assert engine.metrics().rejected == 1


def test_refused_request_does_not_block_the_queue_behind_it(make_engine):
    engine = make_engine(block_size=4, num_blocks=4, admission="refuse")
    engine.add_request("twelve bytes", max_new_tokens=1)
    engine.step()
    too_big = engine.add_request("eight by", max_new_tokens=1)
    fits = engine.add_request("four", max_new_tokens=1)
    engine.step()
    assert engine.requests[too_big].status is Status.REFUSED
    assert engine.requests[fits].status is Status.FINISHED


def test_contiguous_prompt_longer_than_its_reservation_is_refused_even_under_wait(make_engine):
    engine = make_engine(policy="contiguous", block_size=4, num_blocks=16, reserve_blocks=2, admission="wait")
    rid = engine.add_request("a prompt of 3 blocks", max_new_tokens=1)
    engine.step()
    req = engine.requests[rid]
    assert req.status is Status.REFUSED
    assert req.reason == "R1's prompt needs 5 blocks but its reservation is only 2"
    assert not engine.has_unfinished()


def test_contiguous_reservation_larger_than_the_pool_is_refused_even_under_wait(make_engine):
    engine = make_engine(policy="contiguous", block_size=4, num_blocks=8, reserve_blocks=2, admission="wait")
    rid = engine.add_request("abc", max_new_tokens=1, reserve_blocks=9)
    engine.step()
    req = engine.requests[rid]
    assert req.status is Status.REFUSED
    assert req.reason == "R1 reserves 9 blocks but the pool has only 8"
    assert engine.metrics().rejected == 1
    assert not engine.has_unfinished()


def test_contiguous_request_finishes_when_its_slab_is_full(make_engine, drain):
    engine = make_engine(policy="contiguous", block_size=4, num_blocks=16, reserve_blocks=2)
    rid = engine.add_request("abc", max_new_tokens=50)
    drain(engine)
    req = engine.requests[rid]
    assert req.status is Status.FINISHED
    assert "slab of 2 blocks is full" in req.reason
    assert (req.num_computed, len(req.output_ids)) == (8, 6)


def test_max_running_caps_the_batch(make_engine):
    engine = make_engine(block_size=4, num_blocks=32, max_running=2)
    for prompt in ("one", "two", "three"):
        engine.add_request(prompt, max_new_tokens=5)
    engine.step()
    assert [r.name for r in engine.scheduler.running] == ["R1", "R2"]
    assert engine.requests[3].status is Status.WAITING


def test_refusal_preemption_and_eviction_events_each_carry_a_reason(make_engine, drain):
    engine = make_engine(block_size=4, num_blocks=6, prefix_sharing=True, admission="refuse")
    cached = engine.add_request("abcdefgh", max_new_tokens=1)
    drain(engine)
    engine.release(cached)
    for prompt in ("aaaa", "bbbb", "cccc"):
        engine.add_request(prompt, max_new_tokens=12)
    engine.step()
    engine.add_request("thirteen byte", max_new_tokens=1)  # 4 blocks: 3 free even after eviction
    drain(engine)
    by_kind = {}
    for e in engine.log.events:
        by_kind.setdefault(e.kind, []).append(e.reason)
    assert by_kind["request_refused"] and by_kind["request_preempted"] and by_kind["block_evicted"]
    assert all("needs" in r and "free" in r for r in by_kind["request_refused"])
    assert all(
        r.startswith("preempted: the pool had no free block for R") for r in by_kind["request_preempted"]
    )
    assert all("least recently used" in r for r in by_kind["block_evicted"])


def test_counters_count_prefill_and_decode_tokens_and_steps(make_engine, drain):
    engine = make_engine(block_size=4, num_blocks=32)
    engine.add_request("five!", max_new_tokens=4)
    engine.add_request("seven!!", max_new_tokens=4)
    drain(engine)
    m = engine.metrics()
    assert (m.prefill_tokens_computed, m.decode_tokens, m.steps) == (12, 6, 4)
    assert (m.rejected, m.preempted, m.evicted_blocks, m.prefix_hit_tokens) == (0, 0, 0, 0)


def test_preempted_counter_equals_preemption_events(make_engine, serve_all):
    engine = make_engine(block_size=4, num_blocks=8)
    serve_all(engine, ["Page one", "Page two", "Page six"], max_new_tokens=20)
    m = engine.metrics()
    events = sum(e.kind == "request_preempted" for e in engine.log.events)
    assert m.preempted == events == sum(r.num_preemptions for r in engine.requests.values())
    assert m.preempted > 0


def test_recompute_after_preemption_counts_as_prefill(make_engine, serve_all):
    engine = make_engine(block_size=4, num_blocks=8)
    serve_all(engine, ["Page one", "Page two", "Page six"], max_new_tokens=20)
    m = engine.metrics()
    # Every token but the last of each request got KV once per life, and prompts were prefilled.
    assert m.prefill_tokens_computed + m.decode_tokens > 3 * (8 + 20 - 1)
    assert m.prefill_tokens_computed > 3 * 8


def test_reset_clears_counters_requests_and_cache(make_engine, serve_all):
    engine = make_engine(block_size=4, num_blocks=8, prefix_sharing=True)
    serve_all(engine, ["Page one", "Page two", "Page six"], max_new_tokens=20)
    engine.reset()
    snap = engine.snapshot()
    assert snap.requests == () and snap.radix == () and snap.events == ()
    assert snap.metrics.blocks_free == 8
    assert (snap.metrics.steps, snap.metrics.preempted, snap.metrics.prefill_tokens_computed) == (0, 0, 0)
    assert engine.add_request("again", max_new_tokens=1) == 1


def test_preempted_request_waits_for_room_even_under_refuse_admission(make_engine, drain):
    engine = make_engine(block_size=4, num_blocks=6, admission="refuse")
    first = engine.add_request("aaaa", max_new_tokens=12)
    second = engine.add_request("bbbb", max_new_tokens=12)
    drain(engine)
    req = engine.requests[second]
    assert req.num_preemptions >= 1
    assert req.status.value == "waiting" and engine.metrics().rejected == 0
    engine.release(first)  # room again: the preempted request resumes with the tokens it had
    drain(engine)
    assert req.status.value == "finished" and len(req.output_ids) == 12


def test_a_step_that_cannot_run_returns_false_and_changes_nothing(make_engine):
    engine = make_engine(block_size=4, num_blocks=4)
    engine.add_request("abcdefghijkl", max_new_tokens=2)  # 12 tokens: 3 blocks, then finished
    while engine.step():
        pass
    engine.add_request("mnopqrst", max_new_tokens=2)  # needs 2 blocks, 1 is free: waits
    before = engine.snapshot()
    assert engine.step() is False
    assert engine.snapshot() == before


def test_idle_cached_blocks_do_not_count_as_stored_so_saved_stays_non_negative(make_engine, drain):
    engine = make_engine(block_size=4, num_blocks=32, prefix_sharing=True)
    ids = [engine.add_request("shared prefix " + c, max_new_tokens=6) for c in "abc"]
    drain(engine)
    engine.release(ids[0])
    engine.release(ids[1])
    m = engine.metrics()
    assert m.blocks_cached_idle > 0
    assert m.blocks_stored == len(engine.requests[ids[2]].block_table) == m.blocks_without_sharing
    assert m.saved == 0.0


def test_a_refusal_for_one_block_says_block_not_blocks(make_engine):
    engine = make_engine(block_size=4, num_blocks=2, admission="refuse")
    engine.add_request("aaaaaaa", max_new_tokens=1)  # 8 tokens of KV at most: both blocks
    engine.step()
    rid = engine.add_request("b", max_new_tokens=1)
    engine.step()
    reason = engine.requests[rid].reason
    assert "needs 1 free block for its prompt; 0 are free" in reason, reason
