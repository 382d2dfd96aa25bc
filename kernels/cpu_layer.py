"""A layer's small operations in C for the CPU (kernels/cpu/fused_layer.c), called through ctypes: the
native backend's forward (engine/fused.py) is then, per layer, four matmuls (torch's) and three calls.

    from kernels import cpu_layer
    plan = cpu_layer.plan_layers(positions, slot_mapping, cos, sin, kv.k, kv.v, num_heads, decode_plan)
    if plan is not None:                            # the C takes these tensors
        x = cpu_layer.add_rms_norm(h, a, weight, eps, x)   # h += a; x = rms_norm(h) * weight
        o = cpu_layer.decode_layer(plan, layer, qkv, scale)  # RoPE, K and V stored, decode attention
        q = cpu_layer.rope_store(plan, layer, qkv)           # RoPE, K and V stored (a prefill)

RoPE, the stores and the residual adds are torch's floats bit for bit (fused_layer.c is compiled
without -ffast-math and without fused multiply-adds); the decode attention is paged_decode.c's
(kernels/cpu_native.py); RMSNorm's sum of squares runs in another order than torch's (its last bit
may differ). Every index the C reads or writes memory through is checked here first, once per
forward (`plan_layers`: each position a row of the RoPE tables, each slot one of the pool's, the
decode's block tables and lengths by cpu_native.plan_decode); each call checks its tensors' shapes
against the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from kernels.cpu_build import load
from kernels.cpu_native import NativePlan


def available() -> bool:
    return load().decode_layer is not None


def _c_float(t: torch.Tensor) -> bool:
    return t.dtype is torch.float32 and t.is_cpu and t.is_contiguous()


def _bounds(t: torch.Tensor) -> tuple[int, int]:
    if t.numel() <= 256:  # (a decode's: as Python ints, in one call)
        values = t.tolist()
        return min(values), max(values)
    lo, hi = torch.aminmax(t)
    return int(lo), int(hi)


@dataclass(frozen=True)
class LayerPlan:
    """What every layer's C reads and writes memory through, checked once per forward."""

    positions: torch.Tensor  # (T,) int64: each row's position, a row of cos and sin
    slots: torch.Tensor  # (T,) int64: each row's slot in the pool
    cos: torch.Tensor  # (max_seq_len, head_dim) float32, contiguous
    sin: torch.Tensor
    k: tuple[torch.Tensor, ...]  # each layer's pool, (num_blocks, block_size, num_kv_heads, head_dim)
    v: tuple[torch.Tensor, ...]
    num_heads: int
    decode: NativePlan | None  # a decode's block tables and lengths (cpu_native.plan_decode)
    q: torch.Tensor  # (T, num_heads, head_dim) scratch: the rotated queries, every layer's in turn
    out: torch.Tensor  # (T, num_heads, head_dim) scratch: a decode's attention output
    scores: torch.Tensor  # a decode's scores scratch


def plan_layers(positions: torch.Tensor, slot_mapping: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                k_caches: Sequence[torch.Tensor], v_caches: Sequence[torch.Tensor], num_heads: int,
                decode: NativePlan | None = None) -> LayerPlan | None:
    """The checked plan, or None where the C does not take these tensors (it is not built, or they are
    not float32, contiguous, on the CPU). Raises ValueError for a position or slot out of range, or a
    decode's block outside the pool. `decode`: cpu_native.plan_decode's, for a decode (one row per
    sequence; its tables and lengths then checked against the pool here)."""
    if load().decode_layer is None or not k_caches:
        return None
    shape = k_caches[0].shape
    if (len(shape) != 4 or cos.dim() != 2 or cos.shape != sin.shape or cos.shape[1] != shape[3]
            or num_heads % shape[2] or not all(_c_float(t) for t in (cos, sin, *k_caches, *v_caches))
            or any(t.shape != shape for t in (*k_caches, *v_caches))):
        return None
    num_blocks, block_size, _, head_dim = shape
    rows = positions.shape[0]
    if positions.shape != (rows,) or slot_mapping.shape != (rows,) or rows == 0:
        raise ValueError(f"positions and slot_mapping must be (rows,), one per new token, got "
                         f"{tuple(positions.shape)} and {tuple(slot_mapping.shape)}")
    positions = positions.to(torch.int64).contiguous()
    slots = slot_mapping.to(torch.int64).contiguous()
    lo, hi = _bounds(positions)
    if lo < 0 or hi >= cos.shape[0]:
        raise ValueError(f"positions must be in [0, {cos.shape[0]}), got {lo}..{hi}")
    lo, hi = _bounds(slots)
    if lo < 0 or hi >= num_blocks * block_size:
        raise ValueError(f"slot_mapping must be in [0, {num_blocks * block_size}) (the pool's slots), got "
                         f"{lo}..{hi}")
    scores = torch.empty(0)
    if decode is not None:
        if decode.seq_lens.shape[0] != rows or decode.block_size != block_size:
            raise ValueError(f"a decode has one row per sequence: {rows} rows, "
                             f"{decode.seq_lens.shape[0]} sequences")
        if decode.top_block >= num_blocks:
            raise ValueError(f"block_tables name block {decode.top_block}; the pool has {num_blocks}")
        scores = torch.empty(num_heads * decode.max_len, dtype=torch.float32)
    q = torch.empty(rows, num_heads, head_dim, dtype=torch.float32)
    out = torch.empty_like(q) if decode is not None else q
    return LayerPlan(positions, slots, cos, sin, tuple(k_caches), tuple(v_caches), num_heads, decode, q, out,
                     scores)


def _args(plan: LayerPlan, layer: int, qkv: torch.Tensor) -> tuple[int, ...]:
    k, v = plan.k[layer], plan.v[layer]
    _, _, num_kv_heads, head_dim = k.shape
    rows = plan.q.shape[0]
    if qkv.shape != (rows, (plan.num_heads + 2 * num_kv_heads) * head_dim) or not _c_float(qkv):
        raise ValueError(f"qkv must be ({rows}, {(plan.num_heads + 2 * num_kv_heads) * head_dim}) float32, "
                         f"contiguous, got {tuple(qkv.shape)}")
    return (qkv.data_ptr(), plan.cos.data_ptr(), plan.sin.data_ptr(), plan.positions.data_ptr(),
            plan.slots.data_ptr(), rows, plan.num_heads, num_kv_heads, head_dim, k.data_ptr(), v.data_ptr(),
            plan.q.data_ptr())


def rope_store(plan: LayerPlan, layer: int, qkv: torch.Tensor) -> torch.Tensor:
    """Rotates each row's q and k (RoPE), writes its K and V into `layer`'s pool at its slot; returns
    the rotated q, (rows, num_heads, head_dim) (plan.q: the next layer's call overwrites it)."""
    fn = load().rope_store
    assert fn is not None  # (plan_layers made a plan: the C is loaded)
    fn(*_args(plan, layer, qkv))
    return plan.q


def decode_layer(plan: LayerPlan, layer: int, qkv: torch.Tensor, scale: float) -> torch.Tensor:
    """rope_store, then the decode attention over `layer`'s pool: (num_seqs, num_heads, head_dim)
    (plan.out: the next layer's call overwrites it)."""
    fn, d = load().decode_layer, plan.decode
    if d is None:
        raise ValueError("decode_layer needs a plan made with a decode plan")
    assert fn is not None
    fn(*_args(plan, layer, qkv), d.block_tables.data_ptr(), d.block_tables.shape[1], d.seq_lens.data_ptr(),
       d.block_size, scale, plan.out.data_ptr(), plan.scores.data_ptr())
    return plan.out


def add_rms_norm(h: torch.Tensor, a: torch.Tensor | None, weight: torch.Tensor, eps: float,
                 out: torch.Tensor) -> torch.Tensor:
    """h += a (when given, in place), then out = rms_norm(h) * weight: (rows, dim) each."""
    fn = load().add_rms_norm
    if (fn is None or h.dim() != 2 or weight.shape != (h.shape[1],) or out.shape != h.shape
            or (a is not None and (a.shape != h.shape or not _c_float(a)))
            or not (_c_float(h) and _c_float(weight) and _c_float(out))):
        raise ValueError(f"add_rms_norm takes float32 contiguous CPU tensors, h and out (rows, dim), weight "
                         f"(dim,), got {tuple(h.shape)}, {tuple(out.shape)} and {tuple(weight.shape)}")
    fn(h.data_ptr(), None if a is None else a.data_ptr(), weight.data_ptr(), h.shape[0], h.shape[1], eps,
       out.data_ptr())
    return out


def count_reads(plan: LayerPlan, block_reads: torch.Tensor) -> None:
    """A decode's block reads (cpu_native.paged_decode_attention's count): once per (sequence, KV
    head) reading a block."""
    if plan.decode is None:
        raise ValueError("count_reads needs a plan made with a decode plan")
    used = plan.decode.used_blocks
    block_reads.index_add_(0, used, torch.full_like(used, plan.k[0].shape[2], dtype=block_reads.dtype))
