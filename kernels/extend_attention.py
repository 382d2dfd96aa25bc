"""Paged extend (prefill) attention over a packed varlen batch (Triton; reference:
paged_extend_attention_ref).

Grid (num_seqs, num_heads, cdiv(max_new_tokens, BLOCK_M)). A program takes BLOCK_M new tokens of
one sequence and one query head and runs a flash-attention loop over that sequence's keys in
logical order, gathering each key's slot through the block table. The new tokens' own K/V are
already in the cache, so prefix and causal self-attention are one loop with one mask:
key position <= query position.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import _checks


# A Triton kernel: its parameters are typed by Triton when it compiles them (pointers, ints,
# tl.constexpr), not by Python annotations, so mypy --strict is told to leave its signature.
@triton.jit  # type: ignore[untyped-decorator]
def paged_extend_attention_kernel(  # type: ignore[no-untyped-def]
    q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, query_start_ptr, seq_lens_ptr, out_ptr,
    qk_scale,
    stride_q_tok, stride_q_head, stride_q_dim,
    stride_kc_block, stride_kc_slot, stride_kc_head, stride_kc_dim,
    stride_vc_block, stride_vc_slot, stride_vc_head, stride_vc_dim,
    stride_bt_seq, stride_bt_page,
    stride_query_start, stride_seq_lens,
    stride_o_tok, stride_o_head, stride_o_dim,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_SIZE: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, DOT_PRECISION: tl.constexpr,
):
    seq = tl.program_id(0)
    head = tl.program_id(1)
    kv_head = head // GROUP
    q_lo = tl.load(query_start_ptr + seq * stride_query_start).to(tl.int32)
    num_new = tl.load(query_start_ptr + (seq + 1) * stride_query_start).to(tl.int32) - q_lo
    seq_len = tl.load(seq_lens_ptr + seq * stride_seq_lens).to(tl.int32)

    # Rows [row_lo, row_lo + BLOCK_M) of this sequence's new tokens, at positions seq_len - num_new + row.
    row_lo = tl.program_id(2) * BLOCK_M
    offs_m = row_lo + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    mask_m = offs_m < num_new
    mask_d = offs_d < HEAD_DIM
    q_pos = seq_len - num_new + offs_m  # (BLOCK_M,)
    # Keys [0, key_end): up to the last valid row's position; none when the tile has no rows.
    key_end = tl.where(row_lo < num_new, seq_len - num_new + tl.minimum(row_lo + BLOCK_M, num_new), 0)

    q_rows = (q_lo + offs_m).to(tl.int64)
    # (BLOCK_M, BLOCK_D)
    q = tl.load(q_ptr + q_rows[:, None] * stride_q_tok + head * stride_q_head
                + offs_d[None, :] * stride_q_dim, mask=mask_m[:, None] & mask_d[None, :], other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    bt_row_ptr = block_tables_ptr + seq.to(tl.int64) * stride_bt_seq
    for start in range(0, key_end, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        mask_n = offs_n < key_end
        block = tl.load(bt_row_ptr + (offs_n // BLOCK_SIZE) * stride_bt_page, mask=mask_n,
                        other=0).to(tl.int64)
        offs_in_block = offs_n % BLOCK_SIZE
        kv_mask = mask_n[:, None] & mask_d[None, :]
        k = tl.load(k_cache_ptr + block[:, None] * stride_kc_block + offs_in_block[:, None] * stride_kc_slot
                    + kv_head * stride_kc_head + offs_d[None, :] * stride_kc_dim,
                    mask=kv_mask, other=0.0)  # (BLOCK_N, BLOCK_D)
        v = tl.load(v_cache_ptr + block[:, None] * stride_vc_block + offs_in_block[:, None] * stride_vc_slot
                    + kv_head * stride_vc_head + offs_d[None, :] * stride_vc_dim,
                    mask=kv_mask, other=0.0)  # (BLOCK_N, BLOCK_D)

        # (BLOCK_M, BLOCK_N), log2 units
        scores = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale
        visible = mask_n[None, :] & (offs_n[None, :] <= q_pos[:, None])
        scores = tl.where(visible, scores, float("-inf"))
        # Every valid row sees key 0 in the first tile, so m_new is finite from then on.
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(scores - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=DOT_PRECISION)
        m_i = m_new

    out = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
    tl.store(out_ptr + q_rows[:, None] * stride_o_tok + head * stride_o_head + offs_d[None, :] * stride_o_dim,
             out.to(out_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_d[None, :])


def _tile_sizes(device: torch.device, block_d: int) -> tuple[int, int]:
    """(BLOCK_M, BLOCK_N). tl.dot needs every dimension >= 16."""
    if device.type == "cpu":
        return 32, 32  # the interpreter pays per op, not per element
    return 64, (64 if block_d <= 64 else 32)


def paged_extend_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,
    query_start: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
    *,
    max_new_tokens: int | None = None,
) -> torch.Tensor:
    """Prefill on top of a cached prefix, packed end to end; see ``paged_extend_attention_ref``.

    q: (total_new, num_heads, head_dim); k_cache, v_cache: (num_blocks, block_size, num_kv_heads,
    head_dim), same dtype as q, any strides; num_heads % num_kv_heads == 0.
    block_tables: (num_seqs, max_pages); query_start: (num_seqs + 1,), query_start[-1] == total_new;
    seq_lens: (num_seqs,); all int32 or int64. The new tokens' K/V must already be in the cache.
    max_new_tokens: optional bound on query_start[s+1] - query_start[s], to spare a host sync.
    Returns (total_new, num_heads, head_dim) in q's dtype, accumulated in float32.
    """
    _checks.check_attention_args(q, k_cache, v_cache, block_tables, seq_lens, query_start)
    num_blocks, block_size, num_kv_heads, head_dim = k_cache.shape
    total_new, num_heads = q.shape[:2]
    num_seqs = block_tables.shape[0]
    device = _checks.check_same_device(q=q, k_cache=k_cache, v_cache=v_cache, block_tables=block_tables,
                                       query_start=query_start, seq_lens=seq_lens)
    _checks.check_launchable(device, paged_extend_attention_kernel)
    if device.type == "cpu":
        _check_query_ranges(query_start, seq_lens, total_new)
        _checks.check_block_tables_cover(block_tables, seq_lens, block_size, num_blocks)

    out = torch.empty(total_new, num_heads, head_dim, dtype=q.dtype, device=device)
    if num_seqs == 0 or total_new == 0:
        return out
    if max_new_tokens is None:
        max_new_tokens = int((query_start[1:] - query_start[:-1]).max())
    block_d = max(16, _checks.next_power_of_2(head_dim))
    block_m, block_n = _tile_sizes(device, block_d)
    grid = (num_seqs, num_heads, triton.cdiv(max_new_tokens, block_m))
    paged_extend_attention_kernel[grid](
        q, k_cache, v_cache, block_tables, query_start, seq_lens, out,
        scale * _checks.LOG2E,
        *q.stride(), *k_cache.stride(), *v_cache.stride(), *block_tables.stride(),
        query_start.stride(0), seq_lens.stride(0), *out.stride(),
        GROUP=num_heads // num_kv_heads, HEAD_DIM=head_dim, BLOCK_SIZE=block_size,
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_D=block_d,
        DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
    )
    return out


def _check_query_ranges(query_start: torch.Tensor, seq_lens: torch.Tensor, total_new: int) -> None:
    """CPU only: query_start runs from 0 to total_new without going back, and each sequence's new
    tokens fit in its length."""
    if int(query_start[0]) != 0 or int(query_start[-1]) != total_new:
        raise ValueError(f"query_start must run from 0 to total_new ({total_new}), "
                         f"got {int(query_start[0])} .. {int(query_start[-1])}")
    num_new = query_start[1:] - query_start[:-1]
    if bool((num_new < 0).any()):
        raise ValueError("query_start must be non-decreasing")
    if bool((num_new > seq_lens.to(num_new.dtype)).any()):
        s = int(torch.nonzero(num_new > seq_lens.to(num_new.dtype))[0])
        raise ValueError(f"sequence {s} has {int(num_new[s])} new tokens but seq_lens[{s}] = "
                         f"{int(seq_lens[s])}")
