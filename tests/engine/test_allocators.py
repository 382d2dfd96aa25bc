"""The two allocators: contiguous slabs reserved first fit, and pages taken one at a time."""

from __future__ import annotations

import pytest

from engine import ceil_div
from engine.allocators import ContiguousAllocator, PagedAllocator
from engine.block_pool import BlockPool
from engine.events import EventLog
from engine.request import Request, Status


def make_request(request_id: int) -> Request:
    return Request(request_id, prompt_ids=[65], max_new_tokens=1)


def contiguous(num_blocks: int) -> ContiguousAllocator:
    return ContiguousAllocator(BlockPool(num_blocks, block_size=4, log=EventLog()))


def test_contiguous_first_fit_picks_the_lowest_addressed_run_that_fits():
    alloc = contiguous(15)
    alloc.pool.take_run(2, 2, request_id=90)
    alloc.pool.take_run(10, 2, request_id=91)
    assert alloc.pool.free_runs() == [(0, 2), (4, 6), (12, 3)]
    result = alloc.reserve(make_request(1), 3)  # 0-1 is too short; 12-14 would be the best fit
    assert result.ok
    assert result.blocks == (4, 5, 6)


def test_contiguous_reservation_becomes_the_request_block_table():
    alloc = contiguous(8)
    req = make_request(1)
    alloc.reserve(req, 3)
    assert req.block_table == [0, 1, 2]
    assert [alloc.pool.page_index[b] for b in req.block_table] == [0, 1, 2]


def test_freeing_the_middle_request_leaves_a_gap():
    alloc = contiguous(16)
    r1, r2, r3 = (make_request(i) for i in (1, 2, 3))
    for r in (r1, r2, r3):
        assert alloc.reserve(r, 4).ok
    alloc.free(r2, "R2 released")
    assert alloc.pool.free_runs() == [(4, 4), (12, 4)]
    assert alloc.pool.num_free == 8
    assert max(length for _, length in alloc.pool.free_runs()) == 4


def test_contiguous_refusal_names_external_fragmentation_when_enough_blocks_are_free():
    alloc = contiguous(16)
    r1, r2, r3 = (make_request(i) for i in (1, 2, 3))
    for r in (r1, r2, r3):
        alloc.reserve(r, 4)
    alloc.free(r2, "R2 released")
    result = alloc.reserve(make_request(4), 6)
    assert not result.ok
    assert "external fragmentation" in result.reason
    assert "R4 needs 6 consecutive blocks" in result.reason
    assert "8 blocks are free" in result.reason
    assert "largest gap is 4" in result.reason


def test_contiguous_refusal_without_enough_free_blocks_says_so_not_fragmentation():
    alloc = contiguous(8)
    alloc.reserve(make_request(1), 6)
    result = alloc.reserve(make_request(2), 4)
    assert not result.ok
    assert result.reason == "R2 needs 4 consecutive blocks; only 2 are free"


def test_contiguous_refusal_holds_nothing():
    alloc = contiguous(8)
    alloc.reserve(make_request(1), 6)
    req = make_request(2)
    alloc.reserve(req, 4)
    assert req.block_table == []
    assert alloc.pool.num_free == 2


def test_contiguous_integrity_check_catches_a_table_that_is_not_one_slab():
    alloc = contiguous(8)
    req = make_request(1)
    req.block_table = [0, 2]
    with pytest.raises(AssertionError, match="not contiguous"):
        alloc.check_integrity([req])


def test_paged_allocator_places_pages_wherever_blocks_are_free():
    alloc = PagedAllocator(BlockPool(8, block_size=4, log=EventLog()))
    r1, r2 = make_request(1), make_request(2)
    for _ in range(2):  # the two requests grow in turns, so their pages interleave
        alloc.append_pages(r1, 1)
        alloc.append_pages(r2, 1)
    assert r1.block_table == [0, 2]
    assert r2.block_table == [1, 3]
    assert [alloc.pool.page_index[b] for b in r1.block_table] == [0, 1]


def test_paged_engine_holds_one_block_per_block_size_tokens_of_kv(make_engine):
    engine = make_engine(block_size=4, num_blocks=16)
    rid = engine.add_request("nine byte", max_new_tokens=12)
    held = []
    while engine.has_unfinished():
        engine.step()
        req = engine.requests[rid]
        held.append((req.num_computed, len(req.block_table)))
    assert held[0] == (9, 3)  # the prompt's 9 tokens in 3 blocks
    assert all(num_blocks == ceil_div(num_kv, 4) for num_kv, num_blocks in held)
    assert held[-1] == (20, 5)


def test_paged_block_table_is_append_only(make_engine):
    engine = make_engine(block_size=2, num_blocks=32)
    a = engine.add_request("first", max_new_tokens=9)
    b = engine.add_request("second", max_new_tokens=9)
    tables = {a: [], b: []}
    while engine.has_unfinished():
        engine.step()
        for rid, seen in tables.items():
            seen.append(list(engine.requests[rid].block_table))
    for seen in tables.values():
        for earlier, later in zip(seen, seen[1:], strict=False):
            assert later[: len(earlier)] == earlier
        assert len(seen[-1]) > len(seen[0])
    assert engine.requests[a].status is Status.FINISHED


@pytest.mark.parametrize(
    ("num_tokens", "block_size", "blocks"), [(0, 4, 0), (1, 4, 1), (4, 4, 1), (5, 4, 2), (9, 1, 9)]
)
def test_ceil_div_counts_the_blocks_a_number_of_tokens_needs(num_tokens, block_size, blocks):
    assert ceil_div(num_tokens, block_size) == blocks
