"""The model's forward in one C call (kernels/cpu/forward.c), for a small batch: a decode step, or
a short prefill such as a typed question's on its cached prefix.

    forward = NativeForward.for_pool(model, kv)   # None where the C is not available or does not fit
    if forward is not None and forward.fits(batch):
        logits = forward(batch)                   # as model(batch, kv, backend) computes them

For the lesson's model a decode step of a few sequences is tens of microseconds of arithmetic, but
torch's forward (engine/model.py) makes about a hundred calls through Python for it, most of a
millisecond: a student's typed question runs a prefill and ~8 decode steps, and a batch of 16
spends more of its step in those calls than in its matmuls. The C computes the same forward (to
float rounding: its sums run in another order) and writes the same K and V into the pool. The
engine uses it on the "native" backend for a batch of at most MAX_ROWS new tokens (and, for a
prefill, at most PREFILL_ROWS); the rest, and the other backends, keep the torch forward.

Every index the C reads or writes through is checked here first: token ids, positions, KV slots,
the query starts, the block tables and lengths, each block read against the pool's size.
"""

from __future__ import annotations

import math
import os
import weakref
from collections.abc import Sequence

import torch

from engine import fused
from engine.model import ForwardBatch, KVPool, Transformer
from kernels import cpu_extend, cpu_native
from kernels.cpu_build import load

# The most new tokens one C forward takes (docs/benchmarks.md, twentieth session), measured against the
# native backend's torch forward (engine/fused.py: MKL's matmuls, a layer's small operations in C;
# alternating, quiet): a decode of up to 40 sequences, whose four-row matmuls still win there (a step
# of 32: 1.77 ms here, 1.79 there; of 64: 3.89 here, 3.56 there); a prefill of up to 64 new tokens
# (a typed question on its cached prefix: 42 new tokens 1.59 ms here, 1.80 there; 58: 2.09 / 2.21;
# 74: 2.63 / 2.54; 154: 5.44 / 4.70). (Against the plain torch forward the C won up to ~192.)
MAX_ROWS = 40
PREFILL_ROWS = 64
ENABLED = os.environ.get("KVVIZ_NATIVE_FORWARD") != "0"  # (KVVIZ_NATIVE_FORWARD=0: the torch forward always)


def available() -> bool:
    """Whether the C forward is compiled and loaded (see kernels/cpu_build.py)."""
    return load().forward is not None


class _Weights:
    """One model's weights as the C reads them: their addresses, in forward.c's order. The layers'
    are engine/fused.py's `layer_weights` (kept per model while its parameters are unchanged; q/k/v
    and gate/up stacked), whose transposed views are, transposed back, the contiguous (out, in)
    matrices forward.c reads."""

    def __init__(self, model: Transformer, layers: list[fused.LayerWeights]):
        self.layers_of = layers
        self.kept = [t if t.dim() == 1 else t.t() for weights in layers for t in weights]
        self.others = [t.detach() for t in (model.embed.weight, model.rope_cos, model.rope_sin,
                                            model.final_norm.weight, model.lm_head.weight)]
        _check_tensors([*self.kept, *self.others])
        self.layers = torch.tensor([t.data_ptr() for t in self.kept], dtype=torch.int64)

    def current(self, model: Transformer) -> bool:
        """Whether the weights are still those read (training changes them in place)."""
        return fused.layer_weights(model) is self.layers_of


_WEIGHTS: weakref.WeakKeyDictionary[Transformer, _Weights] = weakref.WeakKeyDictionary()


def _check_tensors(tensors: Sequence[torch.Tensor]) -> None:
    for t in tensors:
        if t.dtype != torch.float32 or t.device.type != "cpu" or not t.is_contiguous():
            raise ValueError("the C forward takes float32, contiguous tensors on the CPU")


class NativeForward:
    """The C forward bound to one model's weights and one KV pool (their addresses, checked once)."""

    def __init__(self, model: Transformer, kv: KVPool):
        weights = _WEIGHTS.get(model)
        if weights is None or not weights.current(model):
            weights = _WEIGHTS[model] = _Weights(model, fused.layer_weights(model))
        _check_tensors([*kv.k, *kv.v])
        self.model, self.kv, self.cfg, self.weights = model, kv, model.cfg, weights
        self.k_caches = torch.tensor([t.data_ptr() for t in kv.k], dtype=torch.int64)
        self.v_caches = torch.tensor([t.data_ptr() for t in kv.v], dtype=torch.int64)
        self.num_blocks, self.block_size = kv.k[0].shape[0], kv.k[0].shape[1]
        self.scale = 1.0 / math.sqrt(self.cfg.head_dim)

    @classmethod
    def for_pool(cls, model: Transformer, kv: KVPool) -> NativeForward | None:
        """The C forward for `model` and `kv`, or None where the C is not available or they do not fit it."""
        if not available():
            return None
        try:
            return cls(model, kv)
        except ValueError:
            return None

    def fits(self, batch: ForwardBatch) -> bool:
        """Whether the C takes `batch`: a decode of at most MAX_ROWS sequences or a prefill of at most
        PREFILL_ROWS new tokens, with the weights as they were read."""
        rows = batch.token_ids.shape[0]
        return (rows <= (MAX_ROWS if batch.is_decode else PREFILL_ROWS)
                and self.cfg.num_heads <= cpu_extend.TILE * self.cfg.num_kv_heads
                and self.weights.current(self.model))

    def __call__(self, batch: ForwardBatch) -> torch.Tensor:
        """The logits of each sequence's last new token, (S, vocab); K and V of every new token stored."""
        cfg, lib = self.cfg, load()
        assert lib.forward is not None and lib.forward_scratch is not None
        tokens, positions, slots = (t.to(torch.int64).contiguous()
                                    for t in (batch.token_ids, batch.positions, batch.slot_mapping))
        rows = tokens.shape[0]
        if rows < 1 or tokens.dim() != 1 or positions.shape != (rows,) or slots.shape != (rows,):
            raise ValueError("the C forward takes one position and one KV slot per new token")
        if batch.is_decode:
            plan = cpu_native.plan_decode(batch.block_tables, batch.seq_lens, self.block_size)
            tables, lens, longest, top = plan.block_tables, plan.seq_lens, plan.max_len, plan.top_block
            starts = torch.arange(rows + 1, dtype=torch.int32)
            if lens.shape[0] != rows:
                raise ValueError(f"{rows} tokens but {lens.shape[0]} sequences")
            if top >= self.num_blocks:
                raise ValueError(f"block_tables name block {top}; the pool has {self.num_blocks}")
        else:  # (checks every block read against the pool's size)
            q_shape = torch.empty(rows, cfg.num_heads, cfg.head_dim, device="meta")
            tables, starts, lens, longest = cpu_extend._check(q_shape, self.kv.k[0], batch.block_tables,
                                                              batch.query_start, batch.seq_lens)
        _check_rows(tokens.tolist(), positions.tolist(), slots.tolist(), starts.tolist(), lens.tolist(),
                    cfg.vocab_size, self.num_blocks * self.block_size, cfg.max_seq_len)
        seqs = lens.shape[0]
        logits = torch.empty(seqs, cfg.vocab_size, dtype=torch.float32)
        floats = lib.forward_scratch(rows, cfg.d_model, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim,
                                     cfg.d_ff, longest)
        scratch = torch.empty(floats, dtype=torch.float32)
        embed, cos, sin, final_norm, lm_head = (t.data_ptr() for t in self.weights.others)
        lib.forward(tokens.data_ptr(), positions.data_ptr(), slots.data_ptr(), rows, starts.data_ptr(), seqs,
                    int(batch.is_decode), tables.data_ptr(), tables.shape[1], lens.data_ptr(), embed,
                    self.weights.layers.data_ptr(), cfg.num_layers, self.k_caches.data_ptr(),
                    self.v_caches.data_ptr(), cos, sin, final_norm, lm_head, cfg.vocab_size, cfg.d_model,
                    cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.d_ff, self.block_size, cfg.norm_eps,
                    self.scale, logits.data_ptr(), scratch.data_ptr())
        if batch.block_reads is not None and batch.is_decode:  # (as the backends count them: per sequence
            used = plan.used_blocks                                 # and KV head)
            batch.block_reads.index_add_(0, used, torch.full_like(used, cfg.num_kv_heads,
                                                                  dtype=batch.block_reads.dtype))
        return logits


def _check_rows(tokens: list[int], positions: list[int], slots: list[int], starts: list[int], lens: list[int],
                vocab: int, num_slots: int, context: int) -> None:
    """Each token id in the vocabulary, each KV slot in the pool, each sequence within the model's
    context, and each new token at its position: sequence s's new tokens end at position lens[s] - 1."""
    if max(lens) > context:
        raise ValueError(f"a sequence of {max(lens)} tokens is longer than the model's context ({context})")
    if min(tokens) < 0 or max(tokens) >= vocab:
        raise ValueError(f"token ids must be in [0, {vocab})")
    if min(slots) < 0 or max(slots) >= num_slots:
        raise ValueError(f"KV slots must be in [0, {num_slots})")
    for s, n in enumerate(lens):
        a, b = starts[s], starts[s + 1]
        if positions[a:b] != list(range(n - (b - a), n)):
            raise ValueError(f"sequence {s}'s new tokens must sit at positions {n - (b - a)}..{n - 1}")
