"""The engine: requests in, tokens out, with a real paged (or contiguous) KV cache in between.

    engine = Engine(EngineConfig(num_blocks=64, policy="paged", prefix_sharing=True))
    rid = engine.add_request("The KV cache", max_new_tokens=16)
    while engine.has_unfinished():
        engine.step()          # schedule, run the model, postprocess
    engine.snapshot()          # immutable picture: blocks, requests, radix tree, metrics, events
    engine.clone()             # an independent copy from here on, sharing only the read-only model
"""

from __future__ import annotations

import copy
import itertools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from engine import native_forward
from engine.backend import resolve_device, select_backend
from engine.block_pool import BlockPool
from engine.config import EngineConfig
from engine.events import EventLog
from engine.model import ForwardBatch, KVPool, load_model
from engine.native_forward import NativeForward
from engine.request import Request, Status, check_request_args
from engine.scheduler import Scheduler
from engine.snapshot import (
    BlockState,
    BlockView,
    Metrics,
    RadixNodeView,
    RequestView,
    Snapshot,
    compute_metrics,
)
from engine.tokenizer import ByteTokenizer
from engine.util import ceil_div

# Attributes an engine never changes after __init__ (the model's weights are read-only, shared per
# process): a clone shares them. Everything else in an engine is mutable state, and a clone copies it.
_SHARED_WITH_CLONES = ("config", "device", "backend", "tokenizer", "model")


@dataclass(frozen=True)
class GenerationResult:
    token_ids: list[int]
    text: str


class Engine:
    def __init__(self, config: EngineConfig | None = None):
        self.config = config = config or EngineConfig()
        self.device = resolve_device(config.device)
        self.backend = select_backend(config.backend, self.device)
        self.tokenizer = ByteTokenizer()
        self.model = load_model(config.model, config.weights, config.seed, self.device)
        self.kv = KVPool(config.model, config.num_blocks, config.block_size, self.device)
        self.log = EventLog()
        self._build_state()

    def _build_state(self) -> None:
        self.pool = BlockPool(self.config.num_blocks, self.config.block_size, self.log)
        self.scheduler = Scheduler(self.config, self.pool, self.log)
        self.requests: dict[int, Request] = {}
        self.last_block_reads = torch.zeros(self.config.num_blocks, dtype=torch.int32)
        self._next_id = 1

    # -- the public API --------------------------------------------------------------------
    def add_request(self, prompt: str | bytes, max_new_tokens: int, reserve_blocks: int | None = None, *,
                    stop_token_ids: Iterable[int] = (), stop_after: int = 1) -> int:
        """Queue a request; returns its id. Raises ValueError (engine unchanged) on bad input.
        `stop_token_ids`: a token of these sampled once the reply has `stop_after` tokens (at
        least 1) ends the reply before it (`Stop.STOP_TOKEN`); else it runs to its budget."""
        ids = self.tokenizer.encode(prompt)
        cfg, bs = self.config, self.config.block_size
        if not ids:
            raise ValueError("the prompt is empty: type at least one character")
        stops = check_request_args(max_new_tokens, reserve_blocks, stop_token_ids, stop_after,
                                   cfg.model.vocab_size)
        max_len = cfg.model.max_seq_len
        if len(ids) >= max_len:
            raise ValueError(
                f"the prompt is {len(ids)} tokens but the model's context is {max_len} tokens "
                "(and at least one must be left to generate)"
            )
        # Every token but the last generated one ends up with KV in the cache.
        most_kv = min(len(ids) + max_new_tokens, max_len) - 1
        if cfg.policy == "paged" and ceil_div(most_kv, bs) > cfg.num_blocks:
            raise ValueError(
                f"this request could need {ceil_div(most_kv, bs)} blocks ({most_kv} tokens) but the whole "
                f"pool has {cfg.num_blocks} blocks of {bs} tokens; shorten the prompt or max_new_tokens"
            )
        if cfg.policy == "contiguous" and ceil_div(len(ids), bs) > cfg.num_blocks:
            raise ValueError(f"the prompt needs {ceil_div(len(ids), bs)} blocks but the pool has "
                             f"{cfg.num_blocks}")
        req = Request(self._next_id, ids, max_new_tokens, reserve_blocks, stop_token_ids=stops,
                      stop_after=stop_after)
        self._next_id += 1
        self.requests[req.request_id] = req
        self.scheduler.add(req)
        self.log.emit("request_added", req.request_id, (), f"{req.name} queued ({len(ids)} prompt tokens)")
        return req.request_id

    def step(self) -> bool:
        """One engine step: admit and prefill waiting requests if any fit, else decode one token
        for every running request. Returns False, having changed nothing, when nothing could run
        (e.g. every block is held by finished requests and the next request waits for room).

        Four phases (docs/architecture.md, "A step"): schedule (who runs, and the block
        bookkeeping), prepare (the batch's tensors), run the model (one forward for the whole
        batch, or one per group of sequences for a large prefill) and post-process (each
        request's sampled token)."""
        counters = self.scheduler.counters
        self.log.step = counters.steps + 1
        num_events = len(self.log.events)
        work = self._schedule()
        if work is not None:
            batch = self._prepare(work)
            t0 = time.perf_counter()
            logits = self._run_model(batch)
            if work.is_prefill:
                counters.prefill_seconds += time.perf_counter() - t0
            self._postprocess(work, batch, logits)
        progressed = work is not None or len(self.log.events) > num_events
        if progressed:
            counters.steps += 1
        return progressed

    def release(self, request_id: int) -> None:
        """Free a request's blocks (its full pages stay in the prefix cache, when sharing)."""
        is_id = isinstance(request_id, int) and not isinstance(request_id, bool)  # True is not request 1
        req = self.requests.get(request_id) if is_id else None
        if req is None:
            known = ", ".join(str(i) for i in self.requests) or "none"
            raise KeyError(f"no request with id {request_id!r} (known ids: {known})")
        if req.status in (Status.RELEASED, Status.REFUSED):
            raise ValueError(f"{req.name} is already {req.status.value}: it holds no blocks")
        self.scheduler.release(req)

    def reset(self) -> None:
        """Forget every request, free every block, clear counters, events and the prefix cache."""
        self.log.clear()
        self._build_state()

    def has_unfinished(self) -> bool:
        return bool(self.scheduler.waiting or self.scheduler.running)

    def metrics(self) -> Metrics:
        s = self.scheduler
        return compute_metrics(self.pool, list(self.requests.values()), s.radix, s.counters)

    def snapshot(self) -> Snapshot:
        return build_snapshot(self)

    def check_integrity(self) -> None:
        self.scheduler.check_integrity(list(self.requests.values()))

    def clone(self) -> Engine:
        """An independent copy that behaves exactly as this engine would from here on.

        It shares the model (the same object: read-only weights) and the immutable config,
        device, backend and tokenizer; everything else is deep-copied: the KV tensors, block
        pool, scheduler, requests, prefix cache, event log and counters.
        """
        return copy.deepcopy(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Engine:
        # copy.deepcopy of anything holding an engine (a timeline, a scenario) shares the model too.
        for name in _SHARED_WITH_CLONES:
            value = getattr(self, name)
            memo.setdefault(id(value), value)
        twin = type(self).__new__(type(self))
        memo[id(self)] = twin
        state = {k: v for k, v in self.__dict__.items() if k != "_native_forward"}  # (bound to this one's KV)
        twin.__dict__.update(copy.deepcopy(state, memo))
        return twin

    def generate(self, prompts: list[str], max_new_tokens: int) -> list[GenerationResult]:
        """Greedy generation for each prompt; finished requests are released as they finish."""
        ids = [self.add_request(p, max_new_tokens) for p in prompts]
        results: dict[int, GenerationResult] = {}
        while len(results) < len(ids):
            self.step()
            for rid in ids:
                req = self.requests[rid]
                if rid not in results and req.status in (Status.FINISHED, Status.REFUSED):
                    results[rid] = GenerationResult(list(req.output_ids),
                                                    self.tokenizer.decode(req.output_ids))
                    if req.status is Status.FINISHED:
                        self.release(rid)
        return [results[rid] for rid in ids]

    # -- the phases of a step -----------------------------------------------------------------
    def _schedule(self) -> StepWork | None:
        """Phase 1: who runs this step, with every block, radix and status change made now.

        Waiting requests are admitted one after another, each as if its prefill were done: its
        prompt's pages go into the prefix cache (so the next request admitted can share them;
        the forward writes their KV before any request reads it) and a slot is taken for the
        token it will sample, so it finishes (and frees its running slot) in admission order.
        Only when nobody is admitted does every running request decode one token."""
        reqs, starts = [], []
        while (req := self.scheduler.admit_next()) is not None:
            start, end = req.num_computed, req.num_tokens
            self._record_kv_tokens(req, start, end)
            req.num_computed = end
            self.scheduler.after_prefill(req, end - start)
            reqs.append(req)
            starts.append(start)
            self._append_token(req, _PENDING)  # its value is set in _postprocess
        if reqs:
            return StepWork(True, reqs, starts)
        reqs = self.scheduler.schedule_decode()
        if not reqs:
            return None
        starts = [r.num_computed for r in reqs]
        for r, pos in zip(reqs, starts, strict=True):
            self._record_kv_tokens(r, pos, pos + 1)
        return StepWork(False, reqs, starts)

    def _prepare(self, work: StepWork) -> ForwardBatch:
        """Phase 2: the batch's tensors: packed token ids, positions, KV slots, block tables.

        Worked out in Python, one list per tensor (a few hundred small ints at most), then one
        torch.tensor call for each: cheaper than tensor arithmetic on such small tensors."""
        reqs, starts, bs = work.reqs, work.starts, self.config.block_size
        if work.is_prefill:
            ends = [r.num_computed for r in reqs]
            token_ids = [t for r, a, b in zip(reqs, starts, ends, strict=True) for t in r.tokens(a, b)]
            positions = [p for a, b in zip(starts, ends, strict=True) for p in range(a, b)]
            slots = [r.block_table[p // bs] * bs + p % bs
                     for r, a, b in zip(reqs, starts, ends, strict=True) for p in range(a, b)]
            query_start = list(itertools.accumulate((b - a for a, b in zip(starts, ends, strict=True)),
                                                    initial=0))
        else:  # one row per request: its last token, at position starts[i]
            ends = [p + 1 for p in starts]
            token_ids = [r.last_token for r in reqs]
            positions = starts
            slots = [r.block_table[p // bs] * bs + p % bs for r, p in zip(reqs, starts, strict=True)]
            query_start = list(range(len(reqs) + 1))
        return ForwardBatch(
            is_decode=not work.is_prefill,
            token_ids=self._tensor(token_ids),
            positions=self._tensor(positions),
            slot_mapping=self._tensor(slots),
            block_tables=self._block_tables(reqs),
            seq_lens=self._tensor(ends, torch.int32),
            query_start=self._tensor(query_start, torch.int32),
            block_reads=None if work.is_prefill
                else torch.zeros(self.config.num_blocks, dtype=torch.int32, device=self.device),
        )

    def _run_model(self, batch: ForwardBatch) -> torch.Tensor:
        """Phase 3: the forward, for each sequence's last new token: (S, vocab) logits. A batch of
        more than PREFILL_ROWS new tokens (a large prefill) runs as one forward per group of whole
        sequences of at most that many (the same floats; a group's activations stay in the CPU's
        cache); a decode (one row per sequence) is one forward. On the "native" backend a small batch
        (engine/native_forward.py: a decode, a typed question's prefill) is one call of C instead."""
        if self.backend.name == "native" and native_forward.ENABLED:
            c = self.__dict__.get("_native_forward")
            if c is None or c.kv is not self.kv:  # (made on first use; a clone makes its own)
                c = self._native_forward = NativeForward.for_pool(self.model, self.kv) or _NO_C
            if c is not _NO_C and c.fits(batch):
                return c(batch)
        parts = batch.split(PREFILL_ROWS)
        logits = [self.model(part, self.kv, self.backend) for part in parts]
        return logits[0] if len(logits) == 1 else torch.cat(logits)

    def _postprocess(self, work: StepWork, batch: ForwardBatch, logits: torch.Tensor) -> None:
        """Phase 4: greedy-sample each request's next token; decoded requests may finish."""
        next_ids = logits.argmax(dim=-1).tolist()
        if work.is_prefill:
            for req, tok in zip(work.reqs, next_ids, strict=True):
                req.output_ids[-1] = tok
            return
        assert batch.block_reads is not None  # a decode batch counts its block reads
        self.last_block_reads = batch.block_reads.cpu()
        self.scheduler.counters.decode_tokens += len(work.reqs)
        for req, tok in zip(work.reqs, next_ids, strict=True):
            req.num_computed += 1
            self._append_token(req, tok)

    # -- helpers ---------------------------------------------------------------------------
    def _record_kv_tokens(self, req: Request, start: int, end: int) -> None:
        """Record in the pool the tokens whose KV positions [start, end) of `req` write: block
        req.block_table[pos // block_size] stores position pos at offset pos % block_size."""
        bs = self.config.block_size
        pos = start
        while pos < end:
            page, offset = divmod(pos, bs)
            stored = self.pool.tokens[req.block_table[page]]
            assert len(stored) == offset, "KV written out of order"
            upto = min(end, (page + 1) * bs)
            stored.extend(req.tokens(pos, upto))
            pos = upto

    def _tensor(self, values: Sequence[int] | Sequence[Sequence[int]],
                dtype: torch.dtype = torch.int64) -> torch.Tensor:
        return torch.tensor(values, dtype=dtype, device=self.device)

    def _block_tables(self, reqs: list[Request]) -> torch.Tensor:
        width = max(len(r.block_table) for r in reqs)
        return self._tensor([r.block_table + [0] * (width - len(r.block_table)) for r in reqs], torch.int32)

    def _append_token(self, req: Request, token: int) -> None:
        req.output_ids.append(token)
        self.scheduler.finish_if_done(req, self.config.model.max_seq_len)


_NO_C: Any = object()  # (the C forward does not fit this engine's model or pool: the torch forward)

# The most new tokens one prefill forward runs (whole sequences, so a longer prompt runs alone):
# measured best between 1,000 and 2,000 on a 2 MB-L2 core for 64 prompts of ~120 tokens
# (docs/architecture.md, "A step").
PREFILL_ROWS = 1024

# A prefilled request's next token before the forward has computed it: never a byte value.
_PENDING = -1


@dataclass
class StepWork:
    """What a step runs: requests to prefill (their new tokens start at `starts`), or to
    decode (one token each, at position `starts[i]`)."""

    is_prefill: bool
    reqs: list[Request]
    starts: list[int]


def build_snapshot(engine: Engine) -> Snapshot:
    """The engine as it is now, as an immutable `Snapshot` (engine/snapshot.py): every block's
    state and owners, every request, the radix tree, the metrics. (Here, beside the engine it
    reads, so that snapshot.py needs no import of this module.)"""
    sched, pool, tok = engine.scheduler, engine.pool, engine.tokenizer
    requests = list(engine.requests.values())
    owners: dict[int, list[int]] = {}
    for r in requests:
        for b in r.block_table:
            owners.setdefault(b, []).append(r.request_id)
    cached = sched.radix.block_ids() if sched.radix is not None else set()
    blocks = []
    for b in range(pool.num_blocks):
        own = tuple(owners.get(b, ()))
        state: BlockState
        if pool.ref_count[b] == 0:
            state = "free"
        elif not own and b in cached:
            state = "cached"
        elif pool.tokens[b]:
            state = "tokens"
        else:
            state = "reserved"
        blocks.append(
            BlockView(b, state, own, pool.page_index[b], len(pool.tokens[b]), pool.ref_count[b],
                      tok.decode(pool.tokens[b]))
        )
    req_views = tuple(
        RequestView(
            r.request_id, r.name, r.status.value, tuple(r.block_table), r.num_tokens, len(r.prompt_ids),
            r.num_computed, r.num_prefix_hit, r.num_preemptions, r.reason, r.stop.value,
            tok.decode(r.prompt_ids), tok.decode(r.all_ids), tok.decode(r.output_ids),
        )
        for r in requests
    )
    radix: tuple[RadixNodeView, ...] = ()
    if sched.radix is not None:
        radix = tuple(
            RadixNodeView(n.node_id, n.up.node_id, tok.decode(n.key), tuple(n.blocks), n.lock_ref,
                          n.last_access)
            for n in sched.radix.nodes()
        )
    return Snapshot(
        step=sched.counters.steps,
        block_size=pool.block_size,
        policy=engine.config.policy,
        prefix_sharing=engine.config.prefix_sharing,
        backend=engine.backend.name,
        device=engine.device.type,
        blocks=tuple(blocks),
        requests=req_views,
        radix=radix,
        metrics=engine.metrics(),
        events=tuple(engine.log.events),
        block_reads=tuple(engine.last_block_reads.tolist()),  # (Python ints, in one call: not one per block)
    )
