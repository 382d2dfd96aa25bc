"""The block pool: which physical blocks are free, who holds each one, what tokens it stores.

A block's ref count is the number of its holders: each request whose block table lists it,
plus one when the radix cache keeps it. A block is free exactly when its ref count is 0.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

from engine.events import EventLog
from engine.util import deepcopy_int_lists


class BlockPool:
    def __deepcopy__(self, memo: dict[int, Any]) -> BlockPool:
        return deepcopy_int_lists(self, memo, ("ref_count", "page_index", "_free_heap"), ("tokens",))

    def __init__(self, num_blocks: int, block_size: int, log: EventLog):
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.log = log
        self.ref_count = [0] * num_blocks
        self.tokens: list[list[int]] = [[] for _ in range(num_blocks)]  # token ids whose KV the block stores
        self.page_index = [-1] * num_blocks  # logical page the block holds in its owners' block tables
        # Lowest id first, so allocation is deterministic. Lazy: a block taken by take_run stays in
        # the heap (skipped when popped); _in_heap keeps each block in it at most once.
        self._free_heap = list(range(num_blocks))
        self._in_heap = set(self._free_heap)
        self._num_free = num_blocks

    # -- queries ---------------------------------------------------------------------------
    @property
    def num_free(self) -> int:
        return self._num_free

    def free_runs(self) -> list[tuple[int, int]]:
        """Runs of consecutive free blocks as (start, length), in physical order."""
        runs, start = [], None
        for b in range(self.num_blocks + 1):
            free = b < self.num_blocks and self.ref_count[b] == 0
            if free and start is None:
                start = b
            elif not free and start is not None:
                runs.append((start, b - start))
                start = None
        return runs

    # -- mutations -------------------------------------------------------------------------
    def allocate(self, request_id: int | None, page_index: int) -> int:
        """Take the lowest-numbered free block for one holder. The caller checked num_free > 0."""
        while True:
            block = heapq.heappop(self._free_heap)
            self._in_heap.discard(block)
            if self.ref_count[block] == 0:  # skip stale entries left by take_run
                break
        self._hold_new(block, page_index)
        self.log.emit("block_allocated", request_id, (block,), f"page {page_index}")
        return block

    def take_run(self, start: int, length: int, request_id: int) -> list[int]:
        """Take the specific free run [start, start + length) for one holder (a contiguous slab)."""
        blocks = list(range(start, start + length))
        assert all(self.ref_count[b] == 0 for b in blocks), "take_run on blocks that are not free"
        for page, b in enumerate(blocks):
            self._hold_new(b, page)
        self.log.emit("block_allocated", request_id, blocks, f"slab of {length} blocks at {start}")
        return blocks

    def incref(self, block: int) -> None:
        assert self.ref_count[block] > 0, f"incref on free block {block}"
        self.ref_count[block] += 1

    def incref_all(self, blocks: Iterable[int]) -> None:
        """incref of each block (one call for a shared prefix's pages)."""
        refs = self.ref_count
        for b in blocks:
            assert refs[b] > 0, f"incref on free block {b}"
            refs[b] += 1

    def decref(self, blocks: Iterable[int], request_id: int | None = None, reason: str = "") -> list[int]:
        """Drop one hold on each block; returns the blocks that became free."""
        freed = []
        for b in blocks:
            assert self.ref_count[b] > 0, f"double free of block {b}"
            self.ref_count[b] -= 1
            if self.ref_count[b] == 0:
                self.tokens[b] = []
                self.page_index[b] = -1
                if b not in self._in_heap:
                    heapq.heappush(self._free_heap, b)
                    self._in_heap.add(b)
                self._num_free += 1
                freed.append(b)
        if freed:
            self.log.emit("block_freed", request_id, freed, reason)
        return freed

    def _hold_new(self, block: int, page_index: int) -> None:
        self.ref_count[block] = 1
        self.tokens[block] = []
        self.page_index[block] = page_index
        self._num_free -= 1

    # -- self-check ------------------------------------------------------------------------
    def check_integrity(self, holders: dict[int, int] | None = None) -> None:
        """Free count matches ref counts; free blocks hold nothing; optionally ref == holders."""
        free = [b for b in range(self.num_blocks) if self.ref_count[b] == 0]
        assert all(r >= 0 for r in self.ref_count), "negative ref count"
        assert len(free) == self._num_free, f"num_free {self._num_free} but {len(free)} blocks have ref 0"
        assert set(free) <= self._in_heap == set(self._free_heap), (
            "a free block is missing from the free list")
        assert len(self._free_heap) <= self.num_blocks, "the free list holds a block twice"
        for b in free:
            assert not self.tokens[b], f"free block {b} still lists tokens"
        for b in range(self.num_blocks):
            assert len(self.tokens[b]) <= self.block_size, f"block {b} overfull"
        if holders is not None:
            for b in range(self.num_blocks):
                assert self.ref_count[b] == holders.get(b, 0), (
                    f"block {b}: ref count {self.ref_count[b]} but {holders.get(b, 0)} holders"
                )
