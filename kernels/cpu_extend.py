"""Paged extend (prefill) attention in C for the CPU (kernels/cpu/paged_extend.c), called through ctypes.

    from kernels import cpu_extend, cpu_native
    if cpu_native.available():                      # compiled (once per machine) and loaded
        out = cpu_extend.paged_extend_attention(q, k_cache, v_cache, block_tables, query_start, seq_lens,
                                                scale)

The same call, layouts and result as kernels/reference.py's `paged_extend_attention_ref` (to float
rounding: the sums run in another order), without its gather and its padding: the reference copies
every page a sequence reads into a padded tensor, in every layer, and pads every sequence's queries
to the longest one's, so that a batch of short questions on a long cached prefix, beside one whole
prompt, attended as if each question were as long as that prompt. The C reads each key and value in
its block, for 16 query rows at a time, and computes no padded row.

A batch in which no sequence has a cached prefix (prompts' first prefills) is the C's too: there it
is 1.5-4x faster per layer than the reference's SDPA causal kernel (0.7 vs 1.7 ms for 8 prompts of 120
tokens; 16 prompts of ~125 tokens, all 4 layers: 13.4 -> 6.7 ms, a sixth of the whole prefill). It
was kept on SDPA's path until the eighteenth session, for the same floats as before; the tokens are
the same (tests/kernels/test_native_extend.py: native with and without sharing, and torch).
Shapes, dtypes and every index are checked here before the C reads memory through them; anything
the C does not handle (other dtypes, non-contiguous caches, more than 16 query heads per KV head) is
handed to the reference too.
"""

from __future__ import annotations

import torch

from kernels import reference
from kernels.cpu_build import load

TILE = 16  # query rows per tile in the C (paged_extend.c's TILE): a KV head's group must fit in one


def _check(q: torch.Tensor, k_cache: torch.Tensor, block_tables: torch.Tensor, query_start: torch.Tensor,
           seq_lens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """The tables, starts and lengths the C reads memory through, as contiguous int32, checked: starts
    from 0 to q's rows, never decreasing; each sequence's new tokens at most its length; each length at
    most its pages × block_size; each block it reads in [0, the pool's size). Returns them and the
    longest length."""
    num_blocks, block_size, num_kv_heads, head_dim = k_cache.shape
    num_rows, num_heads = q.shape[0], q.shape[1]
    if q.dim() != 3 or q.shape[2] != head_dim or num_heads % num_kv_heads:
        raise ValueError(f"q must be (total_new, a multiple of {num_kv_heads} heads, {head_dim}), got "
                         f"{tuple(q.shape)}")
    if (block_tables.dim() != 2 or seq_lens.shape != (block_tables.shape[0],)
        or query_start.shape != (block_tables.shape[0] + 1,)):
        raise ValueError("block_tables must be (num_seqs, pages), seq_lens (num_seqs,) and query_start "
                         f"(num_seqs + 1,), got {tuple(block_tables.shape)}, {tuple(seq_lens.shape)} and "
                         f"{tuple(query_start.shape)}")
    tables = block_tables.to(torch.int32).contiguous()
    starts = query_start.to(torch.int32).contiguous()
    lens = seq_lens.to(torch.int32).contiguous()
    num_new = starts[1:] - starts[:-1]
    if int(starts[0]) != 0 or int(starts[-1]) != num_rows or bool((num_new < 0).any()):
        raise ValueError(f"query_start must rise from 0 to q's {num_rows} rows, got {starts.tolist()}")
    if bool((num_new > lens).any()) or int(lens.max()) > tables.shape[1] * block_size:
        raise ValueError(f"seq_lens must be at least each sequence's new tokens and at most "
                         f"{tables.shape[1] * block_size} (the block tables' pages × block_size), got "
                         f"{lens.tolist()}")
    pages = (int(lens.max()) + block_size - 1) // block_size
    used = tables[:, :pages][torch.arange(pages)[None, :] * block_size < lens[:, None].long()]
    if used.numel() and (int(used.min()) < 0 or int(used.max()) >= num_blocks):
        bad = int(used.min()) if int(used.min()) < 0 else int(used.max())
        raise ValueError(f"block_tables name block {bad}; the pool has blocks 0..{num_blocks - 1}")
    return tables, starts, lens, int(lens.max())


def paged_extend_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,
    query_start: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    """reference.paged_extend_attention_ref's call and result, computed by the C kernel when it is
    available and the tensors are float32, contiguous and on the CPU (else by the reference)."""
    fn = load().extend
    args = (q, k_cache, v_cache, block_tables, query_start, seq_lens, scale)
    c_able = (fn is not None and q.dtype == k_cache.dtype == v_cache.dtype == torch.float32
              and q.device.type == k_cache.device.type == v_cache.device.type == "cpu"
              and k_cache.is_contiguous() and v_cache.is_contiguous() and k_cache.shape == v_cache.shape
              and k_cache.dim() == 4 and q.dim() == 3 and q.shape[1] <= TILE * k_cache.shape[2])
    if not c_able or q.shape[0] == 0:
        return reference.paged_extend_attention_ref(*args)
    tables, starts, lens, longest = _check(q, k_cache, block_tables, query_start, seq_lens)
    _, block_size, num_kv_heads, head_dim = k_cache.shape
    q = q.contiguous()
    out = torch.empty_like(q)
    scores = torch.empty(TILE * longest, dtype=torch.float32)
    assert fn is not None
    fn(q.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(), tables.data_ptr(), tables.shape[1],
       starts.data_ptr(), lens.data_ptr(), lens.shape[0], q.shape[1], num_kv_heads, head_dim, block_size,
       scale, out.data_ptr(), scores.data_ptr())
    return out
