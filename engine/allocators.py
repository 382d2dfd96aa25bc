"""The two ways a request gets blocks: one contiguous slab reserved up front, or page by page.

Both write into `request.block_table` (logical page -> physical block) and hold one ref per block.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.block_pool import BlockPool
from engine.request import Request


@dataclass(frozen=True)
class AllocResult:
    ok: bool
    blocks: tuple[int, ...] = ()
    reason: str = ""


class ContiguousAllocator:
    """The naive baseline: at admission a request reserves `num_blocks` consecutive blocks.

    First fit: the lowest-addressed free run long enough wins. No run long enough means the
    request cannot be admitted, even when enough blocks are free in total (external
    fragmentation). Blocks it reserves but never fills are internal fragmentation.
    """

    def __init__(self, pool: BlockPool):
        self.pool = pool

    def reserve(self, req: Request, num_blocks: int) -> AllocResult:
        assert not req.block_table, f"{req.name} already holds blocks"
        runs = self.pool.free_runs()
        for start, length in runs:
            if length >= num_blocks:
                req.block_table = self.pool.take_run(start, num_blocks, req.request_id)
                return AllocResult(True, tuple(req.block_table))
        largest = max((length for _, length in runs), default=0)
        free = self.pool.num_free
        if free >= num_blocks:
            why = (
                f"{req.name} needs {num_blocks} consecutive blocks; {free} blocks are free, "
                f"but the largest gap is {largest} (external fragmentation)"
            )
        else:
            why = f"{req.name} needs {num_blocks} consecutive blocks; only {free} are free"
        return AllocResult(False, (), why)

    def free(self, req: Request, reason: str) -> list[int]:
        freed = self.pool.decref(req.block_table, req.request_id, reason)
        req.block_table = []
        return freed

    def check_integrity(self, requests: list[Request]) -> None:
        for r in requests:
            t = r.block_table
            if t:
                assert t == list(range(t[0], t[0] + len(t))), f"{r.name}'s slab is not contiguous"


class PagedAllocator:
    """PagedAttention: a request takes one block per `block_size` tokens, as they arrive.

    Its block table grows append-only; the blocks can sit anywhere in the pool.
    """

    def __init__(self, pool: BlockPool):
        self.pool = pool

    def can_allocate(self, num_blocks: int) -> bool:
        return self.pool.num_free >= num_blocks

    def append_pages(self, req: Request, num_blocks: int) -> AllocResult:
        """Append `num_blocks` new blocks to the request's table. The caller checked can_allocate."""
        assert self.can_allocate(num_blocks)
        new = [self.pool.allocate(req.request_id, len(req.block_table) + i) for i in range(num_blocks)]
        req.block_table.extend(new)
        return AllocResult(True, tuple(new))

    def free(self, req: Request, reason: str) -> list[int]:
        freed = self.pool.decref(req.block_table, req.request_id, reason)
        req.block_table = []
        return freed

    def check_integrity(self, requests: list[Request]) -> None:
        for r in requests:
            assert len(set(r.block_table)) == len(r.block_table), f"{r.name} lists a block twice"
