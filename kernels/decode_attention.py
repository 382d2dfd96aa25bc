"""Paged decode attention: one query token per sequence (Triton; reference: paged_decode_attention_ref).

Grid (num_seqs, num_kv_heads, num_splits). A program owns one KV head of one sequence and all the
query heads of its group, so each K/V tile is loaded once per group (for groups, the scores are a
(group, tokens) tl.dot). The sequence's pages are cut into num_splits page-aligned, near-equal
ranges; each program runs an online softmax over its range. With one split it writes the output
directly; with more, it writes a normalised partial output and its log-sum-exp, and
``merge_splits_kernel`` combines the partials.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from kernels import _checks

# Splitting pays for itself only when a split still streams a good many tokens.
_MIN_TOKENS_PER_SPLIT = 256
_MAX_SPLITS = 64
# Tokens per tile: with tl.dot, and without it a cap on the (tokens, head_dim) product a program
# holds per tile, to keep registers bounded on GPU.
_DOT_BLOCK_N = 32
_TILE_ELEMENTS = 8192


# A Triton kernel: its parameters are typed by Triton when it compiles them (pointers, ints,
# tl.constexpr), not by Python annotations, so mypy --strict is told to leave its signature.
@triton.jit  # type: ignore[untyped-decorator]
def paged_decode_attention_kernel(  # type: ignore[no-untyped-def]
    q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, out_ptr, lse_ptr, block_reads_ptr,
    qk_scale,
    stride_q_seq, stride_q_head, stride_q_dim,
    stride_kc_block, stride_kc_slot, stride_kc_head, stride_kc_dim,
    stride_vc_block, stride_vc_slot, stride_vc_head, stride_vc_dim,
    stride_bt_seq, stride_bt_page,
    stride_seq_lens,
    stride_o_seq, stride_o_head, stride_o_split, stride_o_dim,
    stride_lse_seq, stride_lse_head, stride_lse_split,
    stride_reads,
    num_splits,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_SIZE: tl.constexpr,
    BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
    USE_DOT: tl.constexpr, DOT_PRECISION: tl.constexpr, STORE_LSE: tl.constexpr, COUNT_READS: tl.constexpr,
):
    # USE_DOT (grouped heads): scores and P @ V on tensor cores, the group padded to BLOCK_G >= 16
    # rows. Otherwise (one query head per KV head) a broadcast multiply and a reduction.
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)

    seq_len = tl.load(seq_lens_ptr + seq * stride_seq_lens).to(tl.int32)
    # Half-open token range [lo, hi) of this split: page-aligned, so every page belongs to one split.
    num_pages = tl.cdiv(seq_len, BLOCK_SIZE)
    pages_per_split = tl.cdiv(num_pages, num_splits)
    lo = split * pages_per_split * BLOCK_SIZE
    hi = tl.minimum(lo + pages_per_split * BLOCK_SIZE, seq_len)

    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, BLOCK_D)
    mask_g = offs_g < GROUP
    mask_d = offs_d < HEAD_DIM
    heads = kv_head * GROUP + offs_g  # (BLOCK_G,) query heads of this KV head
    q = tl.load(q_ptr + seq * stride_q_seq + heads[:, None] * stride_q_head + offs_d[None, :] * stride_q_dim,
                mask=mask_g[:, None] & mask_d[None, :], other=0.0)  # (BLOCK_G, BLOCK_D)
    if not USE_DOT:
        q = q.to(tl.float32) * qk_scale

    m_i = tl.full([BLOCK_G], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_G], tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], tl.float32)
    bt_row_ptr = block_tables_ptr + seq.to(tl.int64) * stride_bt_seq
    for start in range(lo, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        mask_n = offs_n < hi
        block = tl.load(bt_row_ptr + (offs_n // BLOCK_SIZE) * stride_bt_page, mask=mask_n,
                        other=0).to(tl.int64)
        offs_in_block = offs_n % BLOCK_SIZE
        if COUNT_READS:
            # One count per page: the token at the page's first slot stands for it.
            tl.atomic_add(block_reads_ptr + block * stride_reads, 1, mask=mask_n & (offs_in_block == 0))
        kv_mask = mask_n[:, None] & mask_d[None, :]
        k = tl.load(k_cache_ptr + block[:, None] * stride_kc_block + offs_in_block[:, None] * stride_kc_slot
                    + kv_head * stride_kc_head + offs_d[None, :] * stride_kc_dim,
                    mask=kv_mask, other=0.0)  # (BLOCK_N, BLOCK_D)
        v = tl.load(v_cache_ptr + block[:, None] * stride_vc_block + offs_in_block[:, None] * stride_vc_slot
                    + kv_head * stride_vc_head + offs_d[None, :] * stride_vc_dim,
                    mask=kv_mask, other=0.0)  # (BLOCK_N, BLOCK_D)

        # (BLOCK_G, BLOCK_N), in log2 units
        if USE_DOT:
            scores = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale
        else:
            scores = tl.sum(q[:, None, :] * k.to(tl.float32)[None, :, :], axis=2)
        scores = tl.where(mask_n[None, :], scores, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(scores - m_new[:, None])  # (BLOCK_G, BLOCK_N)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        if USE_DOT:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=DOT_PRECISION)
        else:
            acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v.to(tl.float32)[None, :, :], axis=1)
        m_i = m_new

    # An empty split (short sequence, many splits) leaves l_i == 0: output 0 with weight exp(-inf) = 0.
    has_keys = l_i > 0
    l_safe = tl.where(has_keys, l_i, 1.0)
    out = acc / l_safe[:, None]
    o_ptrs = (out_ptr + seq * stride_o_seq + heads[:, None] * stride_o_head + split * stride_o_split
              + offs_d[None, :] * stride_o_dim)
    tl.store(o_ptrs, out.to(out_ptr.dtype.element_ty), mask=mask_g[:, None] & mask_d[None, :])
    if STORE_LSE:
        lse = tl.where(has_keys, m_i + tl.log2(l_safe), float("-inf"))  # log2-sum-exp2 of the split's scores
        tl.store(lse_ptr + seq * stride_lse_seq + heads * stride_lse_head + split * stride_lse_split, lse,
                 mask=mask_g)


@triton.jit  # type: ignore[untyped-decorator]
def merge_splits_kernel(  # type: ignore[no-untyped-def]
    partial_ptr, lse_ptr, out_ptr,
    stride_p_seq, stride_p_head, stride_p_split, stride_p_dim,
    stride_lse_seq, stride_lse_head, stride_lse_split,
    stride_o_seq, stride_o_head, stride_o_dim,
    num_splits,
    HEAD_DIM: tl.constexpr, BLOCK_SPLITS: tl.constexpr, BLOCK_D: tl.constexpr,
):
    # out = sum_s w_s * partial_s / sum_s w_s with w_s = 2^(lse_s - max lse): the exact softmax
    # over the union of the splits' keys.
    seq = tl.program_id(0)
    head = tl.program_id(1)
    offs_s = tl.arange(0, BLOCK_SPLITS)
    offs_d = tl.arange(0, BLOCK_D)
    mask_s = offs_s < num_splits
    mask_d = offs_d < HEAD_DIM
    lse = tl.load(lse_ptr + seq * stride_lse_seq + head * stride_lse_head + offs_s * stride_lse_split,
                  mask=mask_s, other=float("-inf"))  # (BLOCK_SPLITS,)
    weight = tl.exp2(lse - tl.max(lse, axis=0))
    partial = tl.load(partial_ptr + seq * stride_p_seq + head * stride_p_head
                      + offs_s[:, None] * stride_p_split + offs_d[None, :] * stride_p_dim,
                      mask=mask_s[:, None] & mask_d[None, :], other=0.0)
    out = tl.sum(weight[:, None] * partial, axis=0) / tl.sum(weight, axis=0)  # (BLOCK_D,)
    tl.store(out_ptr + seq * stride_o_seq + head * stride_o_head + offs_d * stride_o_dim,
             out.to(out_ptr.dtype.element_ty), mask=mask_d)


@functools.cache
def _num_sms(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count


def choose_num_splits(num_seqs: int, num_kv_heads: int, max_seq_len: int, device: torch.device) -> int:
    """Splits per sequence so that the grid fills the GPU: 1 for short sequences, on CPU, or when
    num_seqs * num_kv_heads programs already fill every SM twice; never below 256 tokens a split."""
    if device.type != "cuda" or max_seq_len <= _MIN_TOKENS_PER_SPLIT:
        return 1
    target_programs = 2 * _num_sms(device)
    wanted = triton.cdiv(target_programs, num_seqs * num_kv_heads)
    return max(1, min(int(wanted), int(triton.cdiv(max_seq_len, _MIN_TOKENS_PER_SPLIT)), _MAX_SPLITS))


def paged_decode_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
    block_reads: torch.Tensor | None = None,
    num_splits: int | None = None,
) -> torch.Tensor:
    """One query token per sequence over its paged K/V; see ``paged_decode_attention_ref``.

    q: (num_seqs, num_heads, head_dim); k_cache, v_cache: (num_blocks, block_size, num_kv_heads,
    head_dim), same dtype as q, any strides; num_heads % num_kv_heads == 0.
    block_tables: (num_seqs, max_pages) int32/int64; seq_lens: (num_seqs,) int32/int64, each >= 1.
    block_reads: optional (num_blocks,) int32, incremented by one for every (sequence, kv head)
    pair that reads the block, whatever the number of splits.
    num_splits: split-KV factor; None picks it from the shapes (``choose_num_splits``, with
    max_pages * block_size as the length bound, so no host sync).
    Returns (num_seqs, num_heads, head_dim) in q's dtype, accumulated in float32.
    """
    _checks.check_attention_args(q, k_cache, v_cache, block_tables, seq_lens)
    num_blocks, block_size, num_kv_heads, head_dim = k_cache.shape
    num_seqs, num_heads = q.shape[:2]
    tensors = dict(q=q, k_cache=k_cache, v_cache=v_cache, block_tables=block_tables, seq_lens=seq_lens)
    if block_reads is not None:
        _checks.check_shape("block_reads", block_reads, (num_blocks,), "(num_blocks,)")
        _checks.check_dtype("block_reads", block_reads, (torch.int32,))
        tensors["block_reads"] = block_reads
    device = _checks.check_same_device(**tensors)
    _checks.check_launchable(device, paged_decode_attention_kernel)
    _checks.check_values_in_range("seq_lens", seq_lens, 1, block_tables.shape[1] * block_size + 1)
    _checks.check_block_tables_cover(block_tables, seq_lens, block_size, num_blocks)
    if num_splits is not None and (not isinstance(num_splits, int) or num_splits < 1):
        raise ValueError(f"num_splits must be a positive int or None, got {num_splits!r}")

    out = torch.empty(num_seqs, num_heads, head_dim, dtype=q.dtype, device=device)
    if num_seqs == 0:
        return out
    if num_splits is None:
        num_splits = choose_num_splits(num_seqs, num_kv_heads, block_tables.shape[1] * block_size, device)
    group = num_heads // num_kv_heads
    use_dot = group > 1
    # On GPU tl.dot needs every dimension >= 16; the interpreter does not, and pays for padding.
    min_dot = 16 if device.type == "cuda" else 1
    block_g = max(min_dot, _checks.next_power_of_2(group)) if use_dot else 1
    block_d = _checks.next_power_of_2(head_dim)
    block_d = max(min_dot, block_d) if use_dot else block_d
    block_n = _DOT_BLOCK_N if use_dot else max(1, min(64, _TILE_ELEMENTS // block_d))
    if num_splits == 1:
        partial, lse = out, out.new_empty(0, dtype=torch.float32)
        partial_strides: tuple[int, ...] = (*out.stride()[:2], 0, out.stride(2))
        lse_strides: tuple[int, ...] = (0, 0, 0)
    else:
        partial = torch.empty(num_seqs, num_heads, num_splits, head_dim, dtype=torch.float32, device=device)
        lse = torch.empty(num_seqs, num_heads, num_splits, dtype=torch.float32, device=device)
        partial_strides, lse_strides = partial.stride(), lse.stride()
    reads = block_reads if block_reads is not None else seq_lens  # unused when COUNT_READS is False

    paged_decode_attention_kernel[(num_seqs, num_kv_heads, num_splits)](
        q, k_cache, v_cache, block_tables, seq_lens, partial, lse, reads,
        scale * _checks.LOG2E,
        *q.stride(), *k_cache.stride(), *v_cache.stride(), *block_tables.stride(), seq_lens.stride(0),
        *partial_strides, *lse_strides, reads.stride(0),
        num_splits,
        GROUP=group, HEAD_DIM=head_dim, BLOCK_SIZE=block_size,
        BLOCK_G=block_g, BLOCK_N=block_n, BLOCK_D=block_d,
        USE_DOT=use_dot, DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        STORE_LSE=num_splits > 1, COUNT_READS=block_reads is not None,
    )
    if num_splits > 1:
        merge_splits_kernel[(num_seqs, num_heads)](
            partial, lse, out, *partial.stride(), *lse.stride(), *out.stride(),
            num_splits,
            HEAD_DIM=head_dim,
            BLOCK_SPLITS=_checks.next_power_of_2(num_splits), BLOCK_D=block_d,
        )
    return out
