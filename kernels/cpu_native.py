"""Paged decode attention in C for the CPU (kernels/cpu/paged_decode.c), called through ctypes.

    from kernels import cpu_native
    if cpu_native.available():                      # compiled (once per machine) and loaded
        out = cpu_native.paged_decode_attention(q, k_cache, v_cache, block_tables, seq_lens, scale)

The same call, layouts and result as kernels/reference.py's `paged_decode_attention_ref` (to float
rounding: the sums run in another order), without its gather: the reference copies each page a
sequence reads into a padded tensor, in every layer, and then attends; the C reads each key and value
once, in its block. That copy was most of a decode step for a batch of 64 (docs/architecture.md).

The C is compiled on first use (kernels/cpu_build.py: once per machine, for its CPU). With no
compiler, or a failed build, `available()` is False and says why in `unavailable_reason()`; the
engine then uses the torch reference (engine/backend.py). Shapes, dtypes and every index are checked
here before the C reads memory through them; anything the C does not handle (other dtypes,
non-contiguous caches) is handed to the reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kernels import reference
from kernels.cpu_build import load


def available() -> bool:
    """Whether the C kernels are compiled and loaded (building them now, once per process, if need be)."""
    return load().decode is not None


def unavailable_reason() -> str:
    return load().reason


@dataclass(frozen=True)
class NativePlan:
    """What every layer's decode reads the same way, checked once per forward (plan_decode)."""

    block_tables: torch.Tensor  # (S, P) int32, contiguous
    seq_lens: torch.Tensor  # (S,) int32, contiguous
    max_len: int
    block_size: int
    used_blocks: torch.Tensor  # (n,) int64: the blocks the sequences read, once per sequence
    top_block: int  # the largest of them (checked against the pool's size by each call)


def plan_decode(block_tables: torch.Tensor, seq_lens: torch.Tensor, block_size: int) -> NativePlan:
    """Checks the tables and lengths the C will read memory through: each length in
    [1, pages × block_size], each block a sequence reads ≥ 0 (and, by each call, < the pool's size)."""
    if block_tables.dim() != 2 or seq_lens.shape != (block_tables.shape[0],):
        raise ValueError(f"block_tables must be (num_seqs, pages) and seq_lens (num_seqs,), "
                         f"got {tuple(block_tables.shape)} and {tuple(seq_lens.shape)}")
    tables = block_tables.to(torch.int32).contiguous()
    lens = seq_lens.to(torch.int32).contiguous()
    # (read as Python ints, in two calls: a few hundred small ints at most, where tensor arithmetic
    # on them took a dozen calls of a few µs each, in every decode step)
    n_of, rows = lens.tolist(), tables.tolist()
    lo, hi = min(n_of), max(n_of)
    if lo < 1 or hi > tables.shape[1] * block_size:
        raise ValueError(f"seq_lens must be in [1, {tables.shape[1] * block_size}] (the block tables' pages "
                         f"× block_size), got {lo}..{hi}")
    used = [b for row, n in zip(rows, n_of, strict=True) for b in row[:(n + block_size - 1) // block_size]]
    if min(used) < 0:
        raise ValueError(f"block_tables name block {min(used)}: a block id is >= 0")
    return NativePlan(tables, lens, hi, block_size, torch.tensor(used, dtype=torch.int64), max(used))


def paged_decode_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
    block_reads: torch.Tensor | None = None,
    plan: NativePlan | None = None,
) -> torch.Tensor:
    """reference.paged_decode_attention_ref's call and result, computed by the C kernel when it is
    available and the tensors are float32, contiguous and on the CPU (else by the reference).
    `plan`: plan_decode's, made once per forward for every layer (else made and checked here)."""
    fn = load().decode
    c_able = (fn is not None and q.dtype == k_cache.dtype == v_cache.dtype == torch.float32
              and q.device.type == k_cache.device.type == v_cache.device.type == "cpu"
              and k_cache.is_contiguous() and v_cache.is_contiguous() and k_cache.shape == v_cache.shape)
    if not c_able:
        return reference.paged_decode_attention_ref(q, k_cache, v_cache, block_tables, seq_lens, scale,
                                                    block_reads)
    num_blocks, block_size, num_kv_heads, head_dim = k_cache.shape
    num_seqs, num_heads = q.shape[0], q.shape[1]
    if q.shape != (num_seqs, num_heads, head_dim) or num_heads % num_kv_heads:
        raise ValueError(f"q must be (num_seqs, a multiple of {num_kv_heads} heads, {head_dim}), got "
                         f"{tuple(q.shape)}")
    if plan is None or plan.block_size != block_size:
        plan = plan_decode(block_tables, seq_lens, block_size)
    if plan.seq_lens.shape[0] != num_seqs:
        raise ValueError(f"q has {num_seqs} sequences but the block tables {plan.seq_lens.shape[0]}")
    if plan.top_block >= num_blocks:
        raise ValueError(f"block_tables name block {plan.top_block}; the pool has {num_blocks}")
    q = q.contiguous()
    out = torch.empty_like(q)
    scratch = torch.empty(num_heads * plan.max_len, dtype=torch.float32)
    assert fn is not None
    fn(q.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(), plan.block_tables.data_ptr(),
       plan.block_tables.shape[1], plan.seq_lens.data_ptr(), num_seqs, num_heads, num_kv_heads, head_dim,
       block_size, scale, out.data_ptr(), scratch.data_ptr())
    if block_reads is not None:  # as the reference counts them: once per (sequence, KV head) reading a block
        used = plan.used_blocks
        block_reads.index_add_(0, used, torch.full_like(used, num_kv_heads, dtype=block_reads.dtype))
    return out
