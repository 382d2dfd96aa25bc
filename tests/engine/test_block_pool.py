"""The block pool: free list, ref counts, the tokens each block stores, and its self-check."""

from __future__ import annotations

import pytest

from engine.block_pool import BlockPool
from engine.events import EventLog


@pytest.fixture
def pool() -> BlockPool:
    return BlockPool(num_blocks=8, block_size=4, log=EventLog())


def test_allocate_takes_the_lowest_numbered_free_block(pool):
    assert [pool.allocate(1, page) for page in range(3)] == [0, 1, 2]
    pool.decref([1], 1)
    assert pool.allocate(2, 0) == 1


def test_allocate_records_the_logical_page_of_the_block(pool):
    block = pool.allocate(1, page_index=5)
    assert pool.page_index[block] == 5
    assert pool.ref_count[block] == 1


def test_allocate_skips_blocks_taken_as_a_run(pool):
    pool.take_run(0, 3, request_id=1)
    assert pool.allocate(2, 0) == 3


def test_block_is_freed_only_when_its_last_holder_lets_go(pool):
    block = pool.allocate(1, 0)
    pool.incref(block)
    assert pool.decref([block], 1) == []
    assert pool.num_free == 7
    assert pool.decref([block], 2) == [block]
    assert pool.num_free == 8


def test_freed_block_forgets_its_tokens_and_page(pool):
    block = pool.allocate(1, 2)
    pool.tokens[block] = [104, 105]
    pool.decref([block], 1)
    assert pool.tokens[block] == []
    assert pool.page_index[block] == -1


def test_double_free_is_caught(pool):
    block = pool.allocate(1, 0)
    pool.decref([block], 1)
    with pytest.raises(AssertionError, match="double free"):
        pool.decref([block], 1)


def test_take_run_refuses_blocks_that_are_held(pool):
    pool.allocate(1, 0)
    with pytest.raises(AssertionError, match="not free"):
        pool.take_run(0, 2, request_id=2)


def test_free_runs_are_consecutive_free_blocks_in_physical_order(pool):
    pool.take_run(2, 2, request_id=1)  # holds blocks 2, 3
    pool.take_run(6, 1, request_id=2)  # holds block 6
    assert pool.free_runs() == [(0, 2), (4, 2), (7, 1)]


def test_allocation_and_freeing_are_logged_with_their_blocks(pool):
    pool.take_run(0, 2, request_id=7)
    pool.decref([0, 1], 7, "R7 released")
    kinds = [(e.kind, e.request_id, e.blocks) for e in pool.log.events]
    assert kinds == [("block_allocated", 7, (0, 1)), ("block_freed", 7, (0, 1))]
    assert pool.log.events[-1].reason == "R7 released"


def test_integrity_check_passes_when_ref_counts_equal_holders(pool):
    a, b = pool.allocate(1, 0), pool.allocate(1, 1)
    pool.incref(b)
    pool.check_integrity({a: 1, b: 2})


def test_integrity_check_catches_a_ref_count_that_differs_from_its_holders(pool):
    block = pool.allocate(1, 0)
    pool.incref(block)
    with pytest.raises(AssertionError, match=f"block {block}: ref count 2 but 1 holders"):
        pool.check_integrity({block: 1})


def test_integrity_check_catches_a_free_block_that_lists_tokens(pool):
    pool.tokens[3] = [1]
    with pytest.raises(AssertionError, match="free block 3"):
        pool.check_integrity()
