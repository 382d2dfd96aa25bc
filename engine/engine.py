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
import threading
import time
from dataclasses import dataclass

import torch

from engine.backend import resolve_device, select_backend
from engine.block_pool import BlockPool
from engine.config import EngineConfig, ModelConfig
from engine.events import EventLog
from engine.model import ForwardBatch, KVPool, Transformer
from engine.request import Request, Status
from engine.scheduler import Scheduler
from engine.snapshot import Metrics, Snapshot, build_snapshot, compute_metrics
from engine.tokenizer import ByteTokenizer
from engine.util import ceil_div

_MODELS: dict[tuple, Transformer] = {}
_MODELS_LOCK = threading.Lock()


def load_model(model_cfg: ModelConfig, weights: str, seed: int, device: torch.device) -> Transformer:
    """One model per (architecture, weights, seed, device) per process, shared read-only."""
    key = (model_cfg, weights, seed, str(device))
    with _MODELS_LOCK:
        if key not in _MODELS:
            model = Transformer(model_cfg)
            if weights == "trained":
                from engine.weights import load_trained_state_dict

                model.load_state_dict(load_trained_state_dict())
            else:
                model.init_weights(seed)
            model.to(device).eval().requires_grad_(False)
            _MODELS[key] = model
        return _MODELS[key]


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
    def add_request(self, prompt: str | bytes, max_new_tokens: int, reserve_blocks: int | None = None) -> int:
        """Queue a request; returns its id. Raises ValueError (engine unchanged) on bad input."""
        ids = self.tokenizer.encode(prompt)
        cfg, bs = self.config, self.config.block_size
        if not ids:
            raise ValueError("the prompt is empty: type at least one character")
        if not isinstance(max_new_tokens, int) or isinstance(max_new_tokens, bool) or max_new_tokens <= 0:
            raise ValueError(f"max_new_tokens must be a whole number >= 1, got {max_new_tokens!r}")
        if reserve_blocks is not None and (
            not isinstance(reserve_blocks, int) or isinstance(reserve_blocks, bool) or reserve_blocks < 1
        ):
            raise ValueError(f"reserve_blocks must be a whole number >= 1, got {reserve_blocks!r}")
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
                f"this request could need {ceil_div(most_kv, bs)} blocks ({most_kv} tokens) but the whole pool "
                f"has {cfg.num_blocks} blocks of {bs} tokens; shorten the prompt or max_new_tokens"
            )
        if cfg.policy == "contiguous" and ceil_div(len(ids), bs) > cfg.num_blocks:
            raise ValueError(f"the prompt needs {ceil_div(len(ids), bs)} blocks but the pool has {cfg.num_blocks}")
        req = Request(self._next_id, ids, max_new_tokens, reserve_blocks)
        self._next_id += 1
        self.requests[req.request_id] = req
        self.scheduler.add(req)
        self.log.emit("request_added", req.request_id, (), f"{req.name} queued ({len(ids)} prompt tokens)")
        return req.request_id

    def step(self) -> bool:
        """One engine step: admit and prefill waiting requests if any fit, else decode one token
        for every running request. Returns False, having changed nothing, when nothing could run
        (e.g. every block is held by finished requests and the next request waits for room)."""
        counters = self.scheduler.counters
        self.log.step = counters.steps + 1
        num_events = len(self.log.events)
        ran = False
        while (req := self.scheduler.admit_next()) is not None:
            self._prefill(req)
            ran = True
        if not ran:
            batch = self.scheduler.schedule_decode()
            if batch:
                self._decode(batch)
                ran = True
        progressed = ran or len(self.log.events) > num_events
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

    def __deepcopy__(self, memo: dict) -> Engine:
        # copy.deepcopy of anything holding an engine (a timeline, a scenario) shares the model too.
        for name in _SHARED_WITH_CLONES:
            value = getattr(self, name)
            memo.setdefault(id(value), value)
        twin = type(self).__new__(type(self))
        memo[id(self)] = twin
        twin.__dict__.update(copy.deepcopy(self.__dict__, memo))
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
                    results[rid] = GenerationResult(list(req.output_ids), self.tokenizer.decode(req.output_ids))
                    if req.status is Status.FINISHED:
                        self.release(rid)
        return [results[rid] for rid in ids]

    # -- running the model -----------------------------------------------------------------
    def _kv_cache_slots(self, req: Request, start: int, end: int) -> list[int]:
        """The flat KV-cache slot (block * block_size + offset) where the K and V of each position
        in [start, end) of `req` are written, in order; records in the pool the token each slot
        now stores."""
        bs, slots = self.config.block_size, []
        ids = req.all_ids
        for pos in range(start, end):
            block = req.block_table[pos // bs]
            assert len(self.pool.tokens[block]) == pos % bs, "KV written out of order"
            self.pool.tokens[block].append(ids[pos])
            slots.append(block * bs + pos % bs)
        return slots

    def _tensor(self, values, dtype=torch.int64) -> torch.Tensor:
        return torch.tensor(values, dtype=dtype, device=self.device)

    def _block_tables(self, reqs: list[Request]) -> torch.Tensor:
        width = max(len(r.block_table) for r in reqs)
        return self._tensor([r.block_table + [0] * (width - len(r.block_table)) for r in reqs], torch.int32)

    def _prefill(self, req: Request) -> None:
        """Compute KV for the request's tokens past its cached prefix and sample its next token."""
        start, end = req.num_computed, req.num_tokens
        batch = ForwardBatch(
            is_decode=False,
            token_ids=self._tensor(req.all_ids[start:end]),
            positions=self._tensor(list(range(start, end))),
            slot_mapping=self._tensor(self._kv_cache_slots(req, start, end)),
            block_tables=self._block_tables([req]),
            seq_lens=self._tensor([end], torch.int32),
            query_start=self._tensor([0, end - start], torch.int32),
        )
        t0 = time.perf_counter()
        logits = self.model(batch, self.kv, self.backend)
        self.scheduler.counters.prefill_seconds += time.perf_counter() - t0
        req.num_computed = end
        self.scheduler.after_prefill(req, end - start)
        self._append_token(req, int(logits[0].argmax()))

    def _decode(self, reqs: list[Request]) -> None:
        """One new token for each request: write the KV of its newest token, attend, sample."""
        positions = [r.num_computed for r in reqs]
        slots = [self._kv_cache_slots(r, p, p + 1)[0] for r, p in zip(reqs, positions, strict=True)]
        reads = torch.zeros(self.config.num_blocks, dtype=torch.int32, device=self.device)
        batch = ForwardBatch(
            is_decode=True,
            token_ids=self._tensor([r.all_ids[-1] for r in reqs]),
            positions=self._tensor(positions),
            slot_mapping=self._tensor(slots),
            block_tables=self._block_tables(reqs),
            seq_lens=self._tensor([p + 1 for p in positions], torch.int32),
            query_start=self._tensor(list(range(len(reqs) + 1)), torch.int32),
            block_reads=reads,
        )
        logits = self.model(batch, self.kv, self.backend)  # (num_seqs, vocab)
        self.last_block_reads = reads.cpu()
        next_ids = logits.argmax(dim=-1).tolist()
        for req, tok in zip(reqs, next_ids, strict=True):
            req.num_computed += 1
            self.scheduler.counters.decode_tokens += 1
            self._append_token(req, tok)

    def _append_token(self, req: Request, token: int) -> None:
        req.output_ids.append(token)
        self.scheduler.finish_if_done(req, self.config.model.max_seq_len)
