"""Plain-torch references for the paged KV-cache kernels.

These are the ground truth the Triton kernels are tested against, and they are also the
engine's ``torch`` backend: every KV write and every attention read goes through a block
table, exactly as the kernels do.

Layouts (vLLM's):
    k_cache, v_cache   (num_blocks, block_size, num_kv_heads, head_dim)
    block_tables       (num_seqs, max_pages) int32; entry [s, p] is the physical block that
                       holds logical page p of sequence s (entries past the sequence are ignored)
    slot               block * block_size + offset, a flat index into the first two cache dims
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


def store_kv_ref(
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    """Write N tokens' keys and values into their slots, in place.

    k, v: (N, num_kv_heads, head_dim); slot_mapping: (N,) int, one slot per token.
    """
    idx = slot_mapping.long()
    if k_cache.is_contiguous() and v_cache.is_contiguous():  # one copy per tensor into the flat slots
        k_cache.view(-1, *k_cache.shape[2:]).index_copy_(0, idx, k.to(k_cache.dtype))
        v_cache.view(-1, *v_cache.shape[2:]).index_copy_(0, idx, v.to(v_cache.dtype))
        return
    block_size = k_cache.shape[1]
    # Index (block, offset) pairs rather than a flattened view: works for caches whose first two
    # dims cannot be merged (e.g. k_cache = kv[:, 0] of a (num_blocks, 2, block_size, ...) tensor).
    blocks, offsets = idx // block_size, idx % block_size
    k_cache[blocks, offsets] = k.to(k_cache.dtype)
    v_cache[blocks, offsets] = v.to(v_cache.dtype)


def slot_mapping_ref(block_tables: torch.Tensor, seq_ids: torch.Tensor, positions: torch.Tensor,
                     block_size: int) -> torch.Tensor:
    """Slots of tokens given their sequence index and position. Returns (N,) int64."""
    pages = block_tables[seq_ids.long(), (positions // block_size).long()].long()
    return pages * block_size + (positions % block_size).long()


@dataclass(frozen=True)
class DecodePlan:
    """What every layer's decode attention reads the same way, computed once per forward."""

    blocks: torch.Tensor  # (S * P,) int64: each sequence's first P pages' blocks (0 past its end)
    used_blocks: torch.Tensor  # (n,) int64: the blocks sequences actually read, once per sequence
    mask: torch.Tensor  # (S, 1, 1, P * block_size) float: 0 where a key is visible, -inf past seq_lens
    num_pages: int


def plan_decode(block_tables: torch.Tensor, seq_lens: torch.Tensor, block_size: int) -> DecodePlan:
    lens = seq_lens.long().to(block_tables.device)
    num_pages = int((lens.max() + block_size - 1) // block_size)
    page_used = torch.arange(num_pages, device=lens.device)[None, :] * block_size < lens[:, None]  # (S, P)
    blocks = torch.where(page_used, block_tables[:, :num_pages].long(), 0)  # (S, P)
    visible = torch.arange(num_pages * block_size, device=lens.device)[None, :] < lens[:, None]  # (S, L)
    mask = torch.zeros(visible.shape, device=lens.device).masked_fill_(~visible, float("-inf"))
    return DecodePlan(blocks.view(-1), blocks[page_used], mask[:, None, None, :], num_pages)


def paged_decode_attention_ref(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
    block_reads: torch.Tensor | None = None,
    plan: DecodePlan | None = None,
) -> torch.Tensor:
    """One query token per sequence, attending to all seq_lens[s] cached tokens (itself included).

    q: (num_seqs, num_heads, head_dim) -> (num_seqs, num_heads, head_dim), q's dtype.
    block_reads: optional (num_blocks,) int32, incremented in place by one for every
    (sequence, kv head) pair that reads the block.
    plan: plan_decode(block_tables, seq_lens, block_size), when the caller made it already
    (the engine does, once per forward, for all its layers).
    """
    num_seqs, num_heads, head_dim = q.shape
    block_size, num_kv_heads = k_cache.shape[1], k_cache.shape[2]
    group = num_heads // num_kv_heads
    plan = plan or plan_decode(block_tables, seq_lens, block_size)
    max_len = plan.num_pages * block_size
    # index_select copies whole blocks; k_cache[blocks] would copy element by element
    # (S, KVH, L, D)
    k = (k_cache.index_select(0, plan.blocks).view(num_seqs, max_len, num_kv_heads, head_dim)
         .transpose(1, 2).float())
    v = (v_cache.index_select(0, plan.blocks).view(num_seqs, max_len, num_kv_heads, head_dim)
         .transpose(1, 2).float())
    qg = q.float().reshape(num_seqs, num_kv_heads, group, head_dim)  # (S, KVH, G, D)
    out = F.scaled_dot_product_attention(qg, k, v, attn_mask=plan.mask, scale=scale)  # (S, KVH, G, D)
    out = out.reshape(num_seqs, num_heads, head_dim)
    if block_reads is not None:
        used = plan.used_blocks
        block_reads.index_add_(0, used, torch.full_like(used, num_kv_heads, dtype=block_reads.dtype))
    return out.to(q.dtype)


def paged_extend_attention_ref(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,
    query_start: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    """Prefill on top of a cached prefix, for a batch of sequences packed end to end.

    Sequence s owns query rows [query_start[s], query_start[s+1]) of q: its last
    n_s = query_start[s+1] - query_start[s] tokens, at positions [seq_lens[s] - n_s, seq_lens[s]).
    Their K and V must already be stored in the cache. Each new token attends to the prefix
    pages and causally to the new tokens up to itself.

    q: (total_new, num_heads, head_dim); query_start: (num_seqs + 1,); seq_lens: (num_seqs,)
    -> (total_new, num_heads, head_dim), q's dtype.

    All sequences at once: their pages gathered as decode does (plan_decode), their queries padded
    to the longest one's, and one masked attention in which row j of sequence s sees the keys at
    positions <= its own (padded rows see some keys too, and are dropped). When no sequence has a
    cached prefix, that mask is SDPA's own causal one (no mask tensor: about a third faster).
    """
    num_seqs = seq_lens.shape[0]
    num_heads, head_dim = q.shape[1], q.shape[2]
    block_size, num_kv_heads = k_cache.shape[1], k_cache.shape[2]
    group = num_heads // num_kv_heads
    fresh = (query_start[1:] - query_start[:-1]).long() == seq_lens.long()  # (S,): no cached prefix
    if bool(fresh.any()) and not bool(fresh.all()):
        # Whole prompts apart from the sequences on a cached prefix, each kind padded to its own longest:
        # else one prompt would pad every short question beside it to its length.
        packed = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        for part in (fresh, ~fresh):
            seqs = part.nonzero()[:, 0]
            starts, ends = query_start[:-1][seqs].long(), query_start[1:][seqs].long()
            rows = torch.cat([torch.arange(int(a), int(b), device=q.device)
                              for a, b in zip(starts, ends, strict=True)])
            sub_start = F.pad((ends - starts).cumsum(0), (1, 0))
            packed[rows] = paged_extend_attention_ref(q[rows], k_cache, v_cache, block_tables[seqs],
                                                      sub_start, seq_lens[seqs], scale)
        return packed
    plan = plan_decode(block_tables, seq_lens, block_size)
    max_len = plan.num_pages * block_size
    # (S, KVH, L, D)
    k = (k_cache.index_select(0, plan.blocks).view(num_seqs, max_len, num_kv_heads, head_dim)
         .transpose(1, 2).float())
    v = (v_cache.index_select(0, plan.blocks).view(num_seqs, max_len, num_kv_heads, head_dim)
         .transpose(1, 2).float())
    starts, lens = query_start.long().to(q.device), seq_lens.long().to(q.device)
    num_new = starts[1:] - starts[:-1]  # (S,)
    max_new = int(num_new.max())
    offsets = torch.arange(max_new, device=q.device)
    real = offsets[None, :] < num_new[:, None]  # (S, Lq): which padded query rows are real
    rows = torch.where(real, starts[:-1, None] + offsets, 0)  # (S, Lq): their row of q
    if bool((num_new == lens).all()):
        # No sequence has a cached prefix (a prompt's first prefill): query row j is at position j,
        # so "keys up to its own position" is SDPA's causal mask, with the grouped heads as they are.
        qh = q.float()[rows].transpose(1, 2)  # (S, H, Lq, D)
        out = F.scaled_dot_product_attention(qh, k[:, :, :max_new], v[:, :, :max_new], is_causal=True,
                                             scale=scale, enable_gqa=True)  # (S, H, Lq, D)
        packed = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        packed[rows[real]] = out.transpose(1, 2)[real].to(q.dtype)
        return packed
    # (S, Lq, KVH, G, D) -> (S, KVH, G * Lq, D): a KV head's grouped query heads one after another
    qg = q.float()[rows].view(num_seqs, max_new, num_kv_heads, group, head_dim).permute(0, 2, 3, 1, 4)
    qg = qg.reshape(num_seqs, num_kv_heads, group * max_new, head_dim)
    q_pos = (lens - num_new)[:, None] + offsets  # (S, Lq)
    hidden = torch.arange(max_len, device=q.device)[None, None, :] > q_pos[:, :, None]  # (S, Lq, L)
    mask = torch.zeros(hidden.shape, device=q.device).masked_fill_(hidden, float("-inf"))
    mask = mask[:, None].expand(num_seqs, group, max_new, max_len).reshape(num_seqs, 1, group * max_new,
                                                                           max_len)
    out = F.scaled_dot_product_attention(qg, k, v, attn_mask=mask, scale=scale)  # (S, KVH, G * Lq, D)
    # (S, Lq, KVH, G, D)
    out = out.view(num_seqs, num_kv_heads, group, max_new, head_dim).permute(0, 3, 1, 2, 4)
    packed = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    packed[rows[real]] = out[real].reshape(-1, num_heads, head_dim).to(q.dtype)
    return packed
