"""A paged KV cache with known contents, for the kernel tests (test_kernels.py: Triton;
test_native_kernel.py: C), which check kernels against kernels/reference.py's torch references."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kernels.reference import slot_mapping_ref, store_kv_ref

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# Unused cache slots hold this: a kernel that reads past a sequence or outside its blocks fails
# loudly, while the reference's masked reads (probability exactly 0) stay finite.
POISON = 50.0
HEAD_DIM = 16


@dataclass
class PagedKV:
    """A cache holding len(seq_lens) sequences in shuffled physical blocks."""

    k_cache: torch.Tensor  # (num_blocks, block_size, num_kv_heads, head_dim)
    v_cache: torch.Tensor
    block_tables: torch.Tensor  # (num_seqs, max_pages) int32; unused entries are -1
    seq_lens: torch.Tensor  # (num_seqs,) int32


def make_paged_kv(
    seq_lens: list[int],
    block_size: int,
    num_kv_heads: int,
    dtype: torch.dtype,
    gen: torch.Generator,
    *,
    head_dim: int = HEAD_DIM,
    fused_kv: bool = False,
    device: torch.device = DEVICE,
) -> PagedKV:
    """Each sequence gets its pages from a random permutation of the block ids, plus spare
    blocks nobody owns. fused_kv lays K and V out as kv[:, 0] and kv[:, 1] of one tensor, so the
    caches are strided views whose first two dims cannot be merged."""
    pages = [math.ceil(n / block_size) for n in seq_lens]
    num_blocks = sum(pages) + 3
    perm = torch.randperm(num_blocks, generator=gen).tolist()
    block_tables = torch.full((len(seq_lens), max(pages) + 1), -1, dtype=torch.int32)
    for s, n in enumerate(pages):
        block_tables[s, :n] = torch.tensor(perm[:n], dtype=torch.int32)
        perm = perm[n:]
    shape = (num_blocks, block_size, num_kv_heads, head_dim)
    if fused_kv:
        kv = torch.full((num_blocks, 2, *shape[1:]), POISON, dtype=dtype)
        k_cache, v_cache = kv[:, 0], kv[:, 1]
    else:
        k_cache, v_cache = torch.full(shape, POISON, dtype=dtype), torch.full(shape, POISON, dtype=dtype)
    seq_ids = torch.repeat_interleave(torch.arange(len(seq_lens)), torch.tensor(seq_lens))
    positions = torch.cat([torch.arange(n) for n in seq_lens])
    slots = slot_mapping_ref(block_tables, seq_ids, positions, block_size)
    num_tokens = sum(seq_lens)
    k = torch.randn(num_tokens, num_kv_heads, head_dim, generator=gen)
    v = torch.randn(num_tokens, num_kv_heads, head_dim, generator=gen)
    store_kv_ref(k_cache, v_cache, k, v, slots)
    return PagedKV(k_cache.to(device), v_cache.to(device), block_tables.to(device),
                   torch.tensor(seq_lens, dtype=torch.int32, device=device))
