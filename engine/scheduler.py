"""The scheduler: who gets blocks, who runs this step, who is preempted, refused or finished.

Continuous batching: a step either admits and prefills waiting requests, or decodes one token
for every running request (prefill first, as in nano-vllm). When the paged pool cannot grow it
evicts idle cached prefixes first, then preempts the newest running request (frees its blocks
and queues it to be recomputed from its tokens so far).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from engine.allocators import ContiguousAllocator, PagedAllocator
from engine.block_pool import BlockPool
from engine.config import EngineConfig
from engine.events import EventLog
from engine.radix_cache import RadixCache
from engine.request import Request, Status, Stop
from engine.util import ceil_div


@dataclass
class Counters:
    """Since the last reset."""

    rejected: int = 0
    preempted: int = 0
    evicted_blocks: int = 0
    prefill_tokens_computed: int = 0
    prefix_hit_tokens: int = 0
    decode_tokens: int = 0
    steps: int = 0
    prefill_seconds: float = 0.0  # wall time spent in prefill forwards


@dataclass(frozen=True)
class Admission:
    """Whether a waiting request got the blocks for its prefill and, if not, why not."""

    ok: bool
    reason: str = ""  # why not, in words ("" when ok)
    never: bool = False  # it could not fit even in an empty pool: refused whatever the admission mode


ADMITTED = Admission(ok=True)


class Scheduler:
    def __init__(self, cfg: EngineConfig, pool: BlockPool, log: EventLog) -> None:
        self.cfg = cfg
        self.pool = pool
        self.log = log
        self.is_paged = cfg.policy == "paged"
        self.allocator: PagedAllocator | ContiguousAllocator = (PagedAllocator(pool) if self.is_paged
                                                                else ContiguousAllocator(pool))
        self.radix = RadixCache(pool) if cfg.prefix_sharing else None
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []  # in admission order; the last is the newest
        self.counters = Counters()

    def _paged(self) -> PagedAllocator:
        """The allocator, on the paged policy's paths (the contiguous policy returned earlier)."""
        assert isinstance(self.allocator, PagedAllocator), "a paged-policy operation on a contiguous pool"
        return self.allocator

    def _contiguous(self) -> ContiguousAllocator:
        assert isinstance(self.allocator, ContiguousAllocator), (
            "a contiguous-policy operation on a paged pool")
        return self.allocator

    # -- admission -------------------------------------------------------------------------
    def add(self, req: Request) -> None:
        self.waiting.append(req)

    def admit_next(self) -> Request | None:
        """Admit the request at the head of the queue, holding the blocks its prefill needs.

        Returns it (now RUNNING, with `num_computed` set to its cached prefix), or None when
        nothing more can be admitted this step. Under admission='refuse' a request that does
        not fit is refused and the next one is tried.
        """
        while self.waiting and len(self.running) < self.cfg.max_running:
            req = self.waiting[0]
            admission = self._try_allocate(req)
            if admission.ok:
                self.waiting.popleft()
                req.status = Status.RUNNING
                self.running.append(req)
                self.log.emit("request_admitted", req.request_id, req.block_table, f"{req.name} admitted")
                return req
            # A preempted request was admitted once: it waits for room rather than being refused.
            if (self.cfg.admission == "wait" or req.num_preemptions) and not admission.never:
                return None
            self.waiting.popleft()
            req.status, req.reason = Status.REFUSED, admission.reason
            self.counters.rejected += 1
            self.log.emit("request_refused", req.request_id, (), req.reason)
        return None

    def _try_allocate(self, req: Request) -> Admission:
        """Hold the blocks for `req`'s prefill (ADMITTED), or say why not (holding nothing)."""
        n = req.num_tokens
        bs = self.pool.block_size
        if not self.is_paged:
            reserve = req.reserve_blocks or self.cfg.reserve_blocks
            if n > reserve * bs:
                why = (
                    f"{req.name}'s prompt needs {ceil_div(n, bs)} blocks but its reservation is only "
                    f"{reserve}")
                return Admission(ok=False, reason=why, never=True)
            if reserve > self.pool.num_blocks:
                why = f"{req.name} reserves {reserve} blocks but the pool has only {self.pool.num_blocks}"
                return Admission(ok=False, reason=why, never=True)
            result = self._contiguous().reserve(req, reserve)
            req.num_computed = req.num_prefix_hit = 0
            return ADMITTED if result.ok else Admission(ok=False, reason=result.reason)

        matched: tuple[int, ...] = ()
        if self.radix is not None:
            # The last token is always recomputed: its logits choose the next token.
            match = self.radix.match_prefix(req.all_ids[: n - 1])
            self.radix.lock(match.node)
            req.radix_node, matched = match.node, match.blocks
        need = ceil_div(n, bs) - len(matched)
        shortfall = need - self.pool.num_free
        if shortfall > 0 and self.radix is not None and self.radix.num_evictable_blocks >= shortfall:
            self._evict(shortfall)  # only when it makes room: never empty the cache for nothing
        if not self._paged().can_allocate(need):
            if self.radix is not None:
                self.radix.unlock(req.radix_node)
                req.radix_node = None
            why = (f"{req.name} needs {need} free block{'s' if need != 1 else ''} for its prompt; "
                   f"{self.pool.num_free} {'is' if self.pool.num_free == 1 else 'are'} free")
            if self.radix is not None:
                why += " after evicting every idle cached prefix"
            return Admission(ok=False, reason=why)
        self.pool.incref_all(matched)
        if matched:
            self.log.emit("block_shared", req.request_id, matched,
                          f"{req.name} reuses {len(matched)} cached blocks")
        req.block_table = list(matched)
        self._paged().append_pages(req, need)
        req.num_computed = req.num_prefix_hit = len(matched) * bs
        self.counters.prefix_hit_tokens += req.num_prefix_hit
        return ADMITTED

    def _evict(self, num_blocks: int) -> int:
        if self.radix is None or num_blocks <= 0:
            return 0
        freed = self.radix.evict(num_blocks)
        self.counters.evicted_blocks += len(freed)
        return len(freed)

    def after_prefill(self, req: Request, num_new_tokens: int) -> None:
        """The prompt's KV is computed: offer its full pages to the prefix cache."""
        self.counters.prefill_tokens_computed += num_new_tokens
        if self.radix is not None:
            self._cache_pages(req)

    def _cache_pages(self, req: Request) -> None:
        """Insert the request's full computed pages into the tree and move its lock down to them."""
        assert self.radix is not None, "no prefix cache to insert pages into"
        result = self.radix.insert(req.all_ids[: req.num_computed], req.block_table)
        self.radix.lock(result.node)
        self.radix.unlock(req.radix_node)
        req.radix_node = result.node

    # -- decode ----------------------------------------------------------------------------
    def schedule_decode(self) -> list[Request]:
        """Make room for one more token of KV in every running request; returns those that run.

        Contiguous requests always have room (a full slab finishes its request). A paged request
        whose last page is full takes a new block, evicting idle cached prefixes and then
        preempting the newest running request when the pool is dry.
        """
        bs = self.pool.block_size
        for req in list(self.running):
            if req.status is not Status.RUNNING or not self.is_paged:
                continue
            if req.num_computed < len(req.block_table) * bs:
                continue
            while not self._paged().can_allocate(1) and self._evict(1) == 0:
                victim = self.running[-1]
                self.preempt(victim, f"the pool had no free block for {req.name}'s next page")
                if victim is req:
                    break
            if req.status is Status.RUNNING:
                self._paged().append_pages(req, 1)
        return [r for r in self.running if r.status is Status.RUNNING]

    def preempt(self, req: Request, why: str) -> None:
        """Free all of `req`'s blocks and queue it first in line, to be recomputed from its tokens."""
        self.running.remove(req)
        self._free_blocks(req, f"{req.name} preempted")
        req.status, req.reason = Status.WAITING, f"preempted: {why}; it will be recomputed"
        req.num_preemptions += 1
        self.waiting.appendleft(req)
        self.counters.preempted += 1
        self.log.emit("request_preempted", req.request_id, (), req.reason)

    # -- finishing and release -------------------------------------------------------------
    def finish_if_done(self, req: Request, max_seq_len: int) -> None:
        why, stop = None, Stop.NONE
        bs = self.pool.block_size
        if req.output_ids[-1] in req.stop_token_ids and len(req.output_ids) > req.stop_after:
            token = req.output_ids.pop()
            why, stop = f"stopped at {_shown(token)} (a stop token)", Stop.STOP_TOKEN
        elif len(req.output_ids) >= req.max_new_tokens:
            n = req.max_new_tokens
            why, stop = f"generated its {n} new token{'s' if n != 1 else ''}", Stop.BUDGET
        elif req.num_tokens >= max_seq_len:
            why, stop = f"reached the model's context of {max_seq_len} tokens", Stop.CONTEXT
        elif not self.is_paged and req.num_computed >= len(req.block_table) * bs:
            why, stop = f"its reserved slab of {len(req.block_table)} blocks is full", Stop.SLAB_FULL
        if why is not None:
            req.status, req.reason, req.stop = Status.FINISHED, why, stop
            self.running.remove(req)
            self.log.emit("request_finished", req.request_id, (), f"{req.name} finished: {why}")

    def release(self, req: Request) -> None:
        """Drop the request wherever it is; its blocks are freed (full pages stay cached)."""
        if req in self.running:
            self.running.remove(req)
        if req in self.waiting:
            self.waiting.remove(req)
        self._free_blocks(req, f"{req.name} released")
        req.status = Status.RELEASED
        self.log.emit("request_released", req.request_id, (), f"{req.name} released")

    def _free_blocks(self, req: Request, reason: str) -> None:
        if self.radix is not None and req.block_table:
            self._cache_pages(req)
            self.radix.unlock(req.radix_node)
            req.radix_node = None
        self.allocator.free(req, reason)
        req.num_computed = 0

    # -- self-check ------------------------------------------------------------------------
    def check_integrity(self, requests: list[Request]) -> None:
        """free + held + cached == total; every ref count equals its holders; locks match users."""
        holders: dict[int, int] = {}
        locks: dict[int, int] = {}
        for r in requests:
            if r.status in (Status.REFUSED, Status.RELEASED) or (r.status is Status.WAITING
                                                                 and r not in self.running):
                assert not r.block_table, f"{r.name} is {r.status.value} but holds blocks"
            for b in r.block_table:
                holders[b] = holders.get(b, 0) + 1
            if r.radix_node is not None:
                locks[r.radix_node.node_id] = locks.get(r.radix_node.node_id, 0) + 1
            assert r.num_computed <= len(r.block_table) * self.pool.block_size
        if self.radix is not None:
            for b in self.radix.block_ids():
                holders[b] = holders.get(b, 0) + 1
            self.radix.check_integrity(locks)
        self.pool.check_integrity(holders)
        self.allocator.check_integrity([r for r in requests if r.block_table])
        assert {r.request_id for r in self.running} <= {r.request_id for r in requests
                                                        if r.status is Status.RUNNING}
        assert all(r.status is Status.RUNNING for r in self.running)
        assert all(r.status is Status.WAITING for r in self.waiting)


_NAMED = {ord(" "): "a space", ord("\n"): "a new line"}


def _shown(token: int) -> str:
    """A byte token as a reader sees it: a space or a new line by name, another printable
    character quoted, else its number."""
    return _NAMED.get(token) or (f"'{chr(token)}'" if 32 < token < 127 else f"token {token}")
